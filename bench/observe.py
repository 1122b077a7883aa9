"""Observing messages under gunicorn on PostgreSQL, with Redis and a Celery worker analysing them.

    .venv/bin/pip install -r bench/requirements.txt
    .venv/bin/python bench/observe.py [--rate 50] [--seconds 60]

1. Closed loop: POST /api/v1/messages as fast as --concurrency connections allow
   (requests/s, p50/p95/p99). The request stores the message and enqueues its analysis.
2. Open loop: --rate messages/s for --seconds, while the worker analyses them; then waits
   for the backlog to drain and reports whether analysis kept up (the largest backlog seen
   and the time from the last request until every message was analysed).
Goals (2-core machine): at 50 messages/s for 60 s, p95 <= 15 ms while the worker keeps up: every
message analysed, the backlog drained within 5 s of the last request.

bench/observe_profile.py counts what one request and one analysed message cost (queries, function
calls), which the load of a shared machine does not disturb.
"""

from __future__ import annotations

import argparse
import threading
import time

import psycopg
from harness import celery_worker, gunicorn, load, scratch_environment, service_key


def pending(database_url: str) -> tuple[int, int]:
    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            "SELECT count(*) FILTER (WHERE analyzed_at IS NULL), count(*) FROM chat_history WHERE role = 'user'"
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--database", default="learninglayer_bench_observe")
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/14")
    parser.add_argument("--port", type=int, default=8766)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--worker-concurrency", type=int, default=1, help="celery worker processes")
    parser.add_argument("--requests", type=int, default=3000, help="closed-loop requests")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--rate", type=float, default=50.0)
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--drain-timeout", type=int, default=300)
    args = parser.parse_args()

    env = scratch_environment(args.pg, args.database, broker=args.broker)
    key = service_key(env)
    database_url = env["DATABASE_URL"]
    with gunicorn(env, args.port, args.workers, args.threads) as base, celery_worker(env, args.worker_concurrency):
        # Warm the worker (it loads the embedding model on its first task) before measuring.
        load(base, key, "messages", requests=20, concurrency=2)
        deadline = time.time() + 180
        while pending(database_url)[0] and time.time() < deadline:
            time.sleep(0.5)

        closed = load(base, key, "messages", requests=args.requests, concurrency=args.concurrency)
        deadline = time.time() + args.drain_timeout
        while pending(database_url)[0] and time.time() < deadline:
            time.sleep(0.5)

        backlog_peak = 0
        stop = threading.Event()

        def watch() -> None:
            nonlocal backlog_peak
            while not stop.is_set():
                backlog_peak = max(backlog_peak, pending(database_url)[0])
                time.sleep(1)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        total = int(args.rate * args.seconds)
        paced = load(
            base, key, "messages", requests=total, rate=args.rate, concurrency=64, max_seconds=args.seconds * 3
        )
        sent_done = time.time()
        while pending(database_url)[0] and time.time() < sent_done + args.drain_timeout:
            time.sleep(0.2)
        drained_after = time.time() - sent_done
        stop.set()
        left, stored = pending(database_url)

    print(
        f"gunicorn workers={args.workers} threads={args.threads}, celery worker concurrency={args.worker_concurrency}"
    )
    print(
        f"observe (closed loop, {args.concurrency} connections): {closed['requests']} requests, "
        f"{closed['requests_per_s']} req/s, p50 {closed['p50_ms']} ms, p95 {closed['p95_ms']} ms, "
        f"p99 {closed['p99_ms']} ms, statuses {closed['statuses']}"
    )
    print(
        f"paced {args.rate:g} msg/s for {args.seconds} s: {paced['requests']} requests, "
        f"p50 {paced['p50_ms']} ms, p95 {paced['p95_ms']} ms, p99 {paced['p99_ms']} ms, statuses {paced['statuses']}"
    )
    print(
        f"analysis: largest backlog {backlog_peak} messages, drained {drained_after:.1f} s after the last request, "
        f"left unanalysed {left} of {stored}"
    )
    ok = paced["p95_ms"] <= 15 and drained_after <= 5 and left == 0 and set(paced["statuses"]) == {"201"}
    print("goals met" if ok else "goals NOT met")


if __name__ == "__main__":
    main()
