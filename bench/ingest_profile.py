"""Where a single-event POST spends its CPU: the production WSGI stack, in this process, on PostgreSQL.

    PYTHONPATH=$PWD .venv/bin/python bench/ingest_profile.py [--requests 3000] [--cache redis://127.0.0.1:6379/7]
        [--database learninglayer_profile] [--top 30] [--save var/ingest.prof]

Creates a scratch database, migrates it, then calls the WSGI application directly (no socket, no
gunicorn) with the body bench/loadgen.py sends. It prints, per request:

- the round trips to PostgreSQL (every statement psycopg sends, Django's connection health check
  included) and to the cache (Redis commands and pipelines), and the Python function calls: figures
  that other load on the machine does not change;
- CPU milliseconds (process time, which other load disturbs far less than wall-clock figures)
  and wall milliseconds;
- under cProfile with a CPU-time clock (so time spent waiting on PostgreSQL or Redis does not
  drown the Python costs), the functions that cost the most. Throttling is on as configured.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time
import uuid
from collections import Counter

from harness import django_in_scratch, wsgi_post
from loadgen import single_body


def count_round_trips() -> tuple[Counter, Counter]:
    """Count statements sent to PostgreSQL and commands (or pipelines) sent to Redis, from here on;
    and the statements by their first words."""
    import psycopg
    import redis.client

    counts: Counter = Counter()
    statements: Counter = Counter()

    def counting(name: str, method):
        def wrapper(*args, **kwargs):
            counts[name] += 1
            return method(*args, **kwargs)

        return wrapper

    execute = psycopg.Cursor.execute

    def execute_counted(cursor, query, *args, **kwargs):
        counts["postgresql"] += 1
        text = query if isinstance(query, str) else getattr(query, "as_string", lambda _: str(query))(cursor)
        statements[" ".join(str(text).split()[:6])] += 1
        return execute(cursor, query, *args, **kwargs)

    psycopg.Cursor.execute = execute_counted  # type: ignore[method-assign]
    redis.client.Redis.execute_command = counting("redis", redis.client.Redis.execute_command)  # type: ignore[method-assign]
    redis.client.Pipeline.execute = counting("redis", redis.client.Pipeline.execute)  # type: ignore[method-assign]
    return counts, statements


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--database", default="learninglayer_profile")
    parser.add_argument("--cache", default=None, help="CACHE_URL (default: the settings' own choice)")
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--top", type=int, default=30, help="functions to list (0: measure only, no profile)")
    parser.add_argument("--save", default="", help="also write the profile here (pstats format)")
    args = parser.parse_args()

    django_in_scratch(args.pg, args.database, cache=args.cache)
    from django.core.wsgi import get_wsgi_application

    from accounts.models import ApiKey, User
    from accounts.services import api_key_create

    _, raw = api_key_create(owner=User.objects.get(username="bench"), name="profile", kind=ApiKey.Kind.SERVICE)
    app = get_wsgi_application()
    run = uuid.uuid4().hex[:8]
    statuses: dict[str, int] = {}
    round_trips, statements = count_round_trips()

    def start_response(status: str, headers: list) -> None:
        code = status.split()[0]
        statuses[code] = statuses.get(code, 0) + 1

    def post(i: int) -> None:
        body = single_body(i, run)
        wsgi_post(
            app,
            "/api/v1/feedback/events",
            body,
            key=raw,
            on_behalf_of=f"bench-user-{i % args.users}",
            start_response=start_response,
        )

    # Warm: users created (a new user is not remembered until it is next looked up), caches filled,
    # connections open.
    warm = 2 * args.users + 100
    for i in range(warm):
        post(i)
    round_trips.clear()
    statements.clear()
    cpu, wall = time.process_time(), time.perf_counter()
    for i in range(warm, warm + args.requests):
        post(i)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    n = args.requests
    print(
        f"{n} single-event POSTs in process: {1000 * cpu / n:.3f} ms CPU per request, "
        f"{1000 * wall / n:.3f} ms wall per request; statuses {statuses}"
    )
    # Resolved keys and on-behalf-of users expire after API_KEY_CACHE_SECONDS, so a long run
    # re-reads each of them now and then: the fractions below include that.
    print(
        "round trips per request: "
        + ", ".join(f"{name} {count / n:.3f}" for name, count in sorted(round_trips.items()))
    )

    for text, count in statements.most_common(8):
        print(f"  {count / n:.3f} x {text}")

    profiler = cProfile.Profile(time.process_time)
    profiler.enable()
    for i in range(warm + n, warm + 2 * n):
        post(i)
    profiler.disable()
    stats = pstats.Stats(profiler, stream=io.StringIO())
    print(f"Python function calls per request: {stats.total_calls / n:.0f} ({stats.prim_calls / n:.0f} primitive)")
    if args.save:
        stats.dump_stats(args.save)
    if not args.top:
        return
    out = io.StringIO()
    stats.stream = out
    stats.strip_dirs()
    stats.sort_stats("tottime").print_stats(args.top)
    stats.sort_stats("cumulative").print_stats(args.top)
    print(out.getvalue())


if __name__ == "__main__":
    main()
