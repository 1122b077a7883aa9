"""Event ingestion under gunicorn on PostgreSQL, loaded from a separate process on loopback.

    .venv/bin/pip install -r bench/requirements.txt
    .venv/bin/python bench/ingest.py [--single 10000] [--bulk 40] [--workers 4] [--concurrency 8]
        [--cache redis://127.0.0.1:6379/0]

Creates a scratch database (learninglayer_bench), migrates it, starts gunicorn with
config/gunicorn.conf.py (the production configuration; --workers and --threads default to what it
chooses on 2 cores) on the local settings with DEBUG off (the ingest path needs no broker, which
the production settings require), and drives it with bench/loadgen.py: single-event POSTs
(requests/s and p50/p95/p99), then bulk POSTs of 1,000 events (events/s). Then it checks
that the table holds exactly the accepted events: zero lost, zero extra.
Goals (2-core machine): >= 500 single events/s with p95 <= 20 ms; >= 5,000 events/s in bulk.
"""

from __future__ import annotations

import argparse

import psycopg
from harness import gunicorn, load, scratch_environment, service_key


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--database", default="learninglayer_bench")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--workers", type=int, default=3, help="gunicorn worker processes")
    parser.add_argument("--threads", type=int, default=2, help="threads per gthread worker")
    parser.add_argument("--single", type=int, default=10000, help="single-event requests")
    parser.add_argument("--bulk", type=int, default=40, help="bulk requests of --bulk-size events")
    parser.add_argument("--bulk-size", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=6, help="concurrent connections (closed loop)")
    parser.add_argument("--cache", default="", help="the server's CACHE_URL, e.g. redis://127.0.0.1:6379/7")
    args = parser.parse_args()

    env = scratch_environment(args.pg, args.database)
    if args.cache:
        env["CACHE_URL"] = args.cache
    key = service_key(env)
    with gunicorn(env, args.port, args.workers, args.threads) as base:

        def run(mode: str, requests: int, concurrency: int) -> dict:
            return load(base, key, mode, requests=requests, concurrency=concurrency, bulk_size=args.bulk_size)

        warm = run("single", 500, args.concurrency)
        single = run("single", args.single, args.concurrency)
        bulk = run("bulk", args.bulk, args.workers)

    with psycopg.connect(env["DATABASE_URL"]) as conn:
        rows = conn.execute("SELECT count(*) FROM ai_feedback_events").fetchone()[0]
    accepted = warm["accepted_events"] + single["accepted_events"] + bulk["accepted_events"]
    errors = sum(n for phase in (warm, single, bulk) for status, n in phase["statuses"].items() if status != "201")

    print(
        f"gunicorn workers={args.workers} threads={args.threads}, load concurrency={args.concurrency} "
        f"(bulk: {args.workers}), PostgreSQL, loopback, cache {args.cache or 'per process'}, throttling on"
    )
    print(
        f"single: {single['requests']} requests, {single['requests_per_s']} req/s, "
        f"p50 {single['p50_ms']} ms, p95 {single['p95_ms']} ms, p99 {single['p99_ms']} ms, "
        f"statuses {single['statuses']}"
    )
    print(
        f"bulk:   {bulk['requests']} x {args.bulk_size} events, {bulk['events_per_s']} events/s, "
        f"p50 {bulk['p50_ms']} ms, p95 {bulk['p95_ms']} ms, statuses {bulk['statuses']}"
    )
    print(
        f"rows {rows}, accepted {accepted}: lost {max(0, accepted - rows)}, extra {max(0, rows - accepted)}, "
        f"errors {errors}"
    )
    print(f"load generator CPU: {single['cpu_seconds'] + bulk['cpu_seconds']} s")
    ok = (
        single["requests_per_s"] >= 500
        and single["p95_ms"] <= 20
        and bulk["events_per_s"] >= 5000
        and rows == accepted
        and errors == 0
    )
    print("goals met" if ok else "goals NOT met")


if __name__ == "__main__":
    main()
