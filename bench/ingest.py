"""Event ingestion under gunicorn on PostgreSQL, loaded from a separate process on loopback.

    .venv/bin/pip install -r bench/requirements.txt
    .venv/bin/python bench/ingest.py [--single 10000] [--bulk 40] [--workers 4] [--concurrency 8]

Creates a scratch database (learninglayer_bench), migrates it, starts gunicorn with the
production settings, and drives it with bench/loadgen.py: single-event POSTs
(requests/s and p50/p95/p99), then bulk POSTs of 1,000 events (events/s). Then it checks
that the table holds exactly the accepted events: zero lost, zero extra.
Goals (2-core machine): >= 500 single events/s with p95 <= 20 ms; >= 5,000 events/s in bulk.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


def sh(args: list[str], env: dict, **kw) -> str:
    return subprocess.run(args, cwd=ROOT, env=env, check=True, capture_output=True, text=True, **kw).stdout


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
    args = parser.parse_args()

    with psycopg.connect(f"{args.pg}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{args.database}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{args.database}"')
    database_url = f"{args.pg}/{args.database}"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DATABASE_URL": database_url,
        "SECURE_SSL_REDIRECT": "false",
        "LOG_LEVEL": "WARNING",
    }
    sh([PY, "manage.py", "migrate", "--noinput"], env)
    sh(
        [PY, "manage.py", "createsuperuser", "--noinput", "--username", "bench", "--email", "bench@example.com"],
        {**env, "DJANGO_SUPERUSER_PASSWORD": secrets.token_urlsafe(16)},
    )
    key = sh([PY, "manage.py", "create_api_key", "--user", "bench", "--service", "--name", "bench"], env).split()[-1]

    base = f"http://127.0.0.1:{args.port}"
    server = subprocess.Popen(
        [
            str(Path(PY).parent / "gunicorn"),
            "-c",
            "config/gunicorn.conf.py",
            "config.wsgi:application",
            "--workers",
            str(args.workers),
            "--bind",
            f"127.0.0.1:{args.port}",
            "--threads",
            str(args.threads),
            "--log-level",
            "warning",
            "--backlog",
            "2048",
        ],
        cwd=ROOT,
        env=env,
    )
    try:
        for _ in range(100):
            try:
                if urllib.request.urlopen(f"{base}/healthz", timeout=1).status == 200:  # noqa: S310 - loopback
                    break
            except OSError:
                time.sleep(0.2)
        else:
            raise SystemExit("gunicorn did not come up")

        def load(mode: str, requests: int, concurrency: int) -> dict:
            out = sh(
                [
                    PY,
                    str(ROOT / "bench" / "loadgen.py"),
                    "--url",
                    base,
                    "--key",
                    key,
                    "--mode",
                    mode,
                    "--requests",
                    str(requests),
                    "--concurrency",
                    str(concurrency),
                    "--bulk-size",
                    str(args.bulk_size),
                ],
                os.environ,
            )
            return json.loads(out.strip().splitlines()[-1])

        warm = load("single", 500, args.concurrency)
        single = load("single", args.single, args.concurrency)
        bulk = load("bulk", args.bulk, args.workers)
    finally:
        server.terminate()
        server.wait(timeout=30)

    with psycopg.connect(database_url) as conn:
        rows = conn.execute("SELECT count(*) FROM ai_feedback_events").fetchone()[0]
    accepted = warm["accepted_events"] + single["accepted_events"] + bulk["accepted_events"]
    errors = sum(n for phase in (warm, single, bulk) for status, n in phase["statuses"].items() if status != "201")

    print(
        f"gunicorn workers={args.workers} threads={args.threads}, load concurrency={args.concurrency} "
        f"(bulk: {args.workers}), PostgreSQL, loopback"
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
