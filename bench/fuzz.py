"""The API against its own OpenAPI schema: schemathesis, every check, under gunicorn on PostgreSQL
with Redis and a Celery worker, once per kind of key.

    .venv/bin/pip install -r requirements-dev.txt        # schemathesis
    .venv/bin/python bench/fuzz.py [--examples 30] [--keys service,user,staff] [--seed 1]

1. A scratch database with production settings, seeded by ``manage.py seed_demo`` (a project,
   alice and bob with events, task feedback and analysed messages, a staff admin), plus a user
   key for the admin. Users get ids from 900001 on, so that the fuzzer's small integers erase
   the scratch superuser (id 1), never a user whose key the run needs.
2. ``schemathesis run --checks all`` against ``/api/schema/`` with every phase (examples, coverage,
   ``--examples`` fuzzed cases per operation, stateful), positive and negative cases:
   - ``service``: the service key acting for alice (``X-On-Behalf-Of: demo-alice``);
   - ``user``: alice's own key;
   - ``staff``: the admin's user key.
   Rate limits are off (``THROTTLE_*=0``): the run exercises the operations, not the limiter
   (429 is documented everywhere and tested in tests/accounts). The run starts once the gunicorn
   workers have loaded their models (``warm``), as a deployment's would have by then.
3. ``POST /api-keys/{key_id}/revoke`` runs last, per key kind, in a run of its own: with stateful
   links the fuzzer can revoke the very key it uses, which would turn every later case into a 401.
4. Prints the failures by check and by operation (from schemathesis' JSON report in
   ``var/fuzz/``; its text output, with each case's curl and response, beside it).

Goals: no 5xx, no undocumented status, content type, header or body, no slow answer (10 s), no
network error, no access-control finding; the exit status is 1 if any. ``positive_data_acceptance``
(ST202) and ``negative_data_rejection`` (ST201) findings are counted apart, to be read: a schema cannot
say that a project slug must exist, that a cursor must come from an earlier page, or how long a URL
gets once percent-encoded.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
from harness import BIN, ROOT, celery_worker, gunicorn, scratch_environment, sh

OUT = ROOT / "var" / "fuzz"
ALICE = "demo-alice"
# Beyond anything hypothesis' integers hit by chance: see the module docstring.
FIRST_USER_ID = 900_001
REVOKE = r"/revoke$"
# positive_data_acceptance and negative_data_rejection: see the module docstring.
TO_READ = {"ST201", "ST202"}
THROTTLES = (
    "THROTTLE_SERVICE_KEY_REQUESTS",
    "THROTTLE_USER_KEY_REQUESTS",
    "THROTTLE_USER_REQUESTS",
    "THROTTLE_ANON_REQUESTS",
    "THROTTLE_AUTH_FAILURES",
)


def seed(env: dict[str, str]) -> dict[str, list[str]]:
    """Seed the demo data and return the headers of each key kind."""
    with psycopg.connect(env["DATABASE_URL"], autocommit=True) as conn:
        conn.execute("SELECT setval(pg_get_serial_sequence('accounts_user', 'id'), %s, false)", [FIRST_USER_ID])
    out = sh([sys.executable, "manage.py", "seed_demo"], env)
    found = {}
    for line in out.splitlines():
        label, _, value = line.strip().partition(" key ")
        if label in ("Service", "Alice's"):
            found[label] = value.strip()
    staff = sh([sys.executable, "manage.py", "create_api_key", "--user", "admin", "--name", "fuzz"], env).split()[-1]
    return {
        "service": [f"Authorization: Bearer {found['Service']}", f"X-On-Behalf-Of: {ALICE}"],
        "user": ["Authorization: Bearer " + found["Alice's"]],
        "staff": [f"Authorization: Bearer {staff}"],
    }


def warm(base: str, headers: list[str], concurrency: int = 8) -> None:
    """Wait until every gunicorn worker has loaded its models (config/gunicorn.conf.py loads them in the
    background as a worker starts): rounds of concurrent manual preferences, which need both the
    embedder and the analyzer, until a whole round answers within two seconds."""
    request_headers = dict(header.split(": ", 1) for header in headers) | {"Content-Type": "application/json"}
    body = json.dumps({"description": "Keep answers short."}).encode()

    def post(_: int) -> float:
        started = time.monotonic()
        request = urllib.request.Request(f"{base}/api/v1/preferences", body, request_headers, method="POST")  # noqa: S310
        with urllib.request.urlopen(request, timeout=600) as response:  # noqa: S310 - loopback
            response.read()
        return time.monotonic() - started

    for _ in range(20):
        with ThreadPoolExecutor(concurrency) as pool:
            if max(pool.map(post, range(concurrency))) < 2:
                return
    raise SystemExit("the gunicorn workers did not warm up")


def schemathesis(base: str, name: str, headers: list[str], args: argparse.Namespace, *filters: str) -> Path:
    """One schemathesis run; returns its JSON report."""
    report = OUT / f"{name}.json"
    command = [
        str(BIN / "schemathesis"),
        "run",
        f"{base}/api/schema/",
        "--checks",
        "all",
        "--max-examples",
        str(args.examples),
        "--seed",
        str(args.seed),
        "--workers",
        str(args.fuzz_workers),
        "--continue-on-failure",
        "--request-timeout",
        "60",
        "--wait-for-schema",
        "120",
        "--suppress-health-check",
        "all",
        "--no-color",
        "--report",
        "json",
        "--report-json-path",
        str(report),
        *filters,
    ]
    for header in headers:
        command += ["--header", header]
    if args.phases:
        command += ["--phases", args.phases]
    print(f"[{name}] schemathesis run ... (log: var/fuzz/{name}.log)", flush=True)
    with open(OUT / f"{name}.log", "w") as log:
        # In var/fuzz/, where schemathesis keeps its replay store (.schemathesis/): `st replay <id>` there.
        subprocess.run(command, cwd=OUT, stdout=log, stderr=subprocess.STDOUT, check=False)
    return report


def summarise(name: str, report: Path) -> tuple[int, int]:
    """Print the run's operations and cases, and its unique failures by check (each with the title
    schemathesis gives it and the operations where it happened); details are in the log. Returns the
    failures against the goals (errors included) and those to read."""
    data = json.loads(report.read_text())
    operations, cases = data["operations"], data["test_cases"]
    print(
        f"\n== {name}: {operations['tested']} operations tested of {operations['selected']} selected, "
        f"{cases['generated']} cases, {cases['unique_failures']} unique failures, {data['running_time']:.0f} s"
    )
    by_check: Counter[str] = Counter()
    for group in data["failures"]:
        by_check[f"{group['code']} {group['title']}"] += group["count"]
    for check, count in by_check.most_common():
        print(f"   {check}: {count}")
        for group in data["failures"]:
            if f"{group['code']} {group['title']}" == check:
                for operation in group["operations"]:
                    print(f"      {operation}")
    for error in data["errors"]:
        print(f"   error: {error['count']} x {error['title']}")
    if not data["complete"]:
        print(f"   incomplete run: {data['stop_reason']}")
    to_read = sum(count for check, count in by_check.items() if check.split()[0] in TO_READ)
    return sum(by_check.values()) - to_read + sum(error["count"] for error in data["errors"]), to_read


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--database", default="learninglayer_bench_fuzz")
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/14", help="the cache is the next Redis db")
    parser.add_argument("--port", type=int, default=8767)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--examples", type=int, default=30, help="fuzzing-phase cases per operation (and mode)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--fuzz-workers", type=int, default=2, help="schemathesis' concurrent workers")
    parser.add_argument("--keys", default="service,user,staff", help="key kinds to run, in this order")
    parser.add_argument("--phases", default="", help="schemathesis phases (default: all)")
    parser.add_argument(
        "--include-path-regex", default="", help="fuzz only these operations (e.g. to re-run a fixed one)"
    )
    args = parser.parse_args()

    OUT.mkdir(parents=True, exist_ok=True)
    env = scratch_environment(args.pg, args.database, broker=args.broker)
    env.update(dict.fromkeys(THROTTLES, "0"))
    env["LOG_LEVEL"] = "ERROR"  # 4xx are the point of the run; 5xx tracebacks still show
    keys = seed(env)
    kinds = [kind.strip() for kind in args.keys.split(",") if kind.strip()]
    if unknown := set(kinds) - set(keys):
        raise SystemExit(f"--keys: unknown kind {sorted(unknown)[0]!r}; use {', '.join(keys)}")
    include = ["--include-path-regex", args.include_path_regex] if args.include_path_regex else []
    with gunicorn(env, args.port, args.workers, args.threads) as base, celery_worker(env, 1):
        warm(base, keys["user"])
        reports = [
            (kind, schemathesis(base, kind, keys[kind], args, "--exclude-path-regex", REVOKE, *include))
            for kind in kinds
        ]
        if not args.include_path_regex or "revoke" in args.include_path_regex:
            for kind in kinds:
                name = f"{kind}-revoke"
                reports.append((name, schemathesis(base, name, keys[kind], args, "--include-path-regex", REVOKE)))
    failures = to_read = 0
    for name, report in reports:
        goals, read = summarise(name, report)
        failures, to_read = failures + goals, to_read + read
    print(f"\n{failures} failures against the goals; {to_read} data-acceptance findings to read (ST201, ST202)")
    raise SystemExit(1 if failures else 0)


if __name__ == "__main__":
    main()
