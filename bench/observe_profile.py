"""What observing a message costs, counted rather than timed: SQL queries and Python function calls
per POST /api/v1/messages, and per message analysed by the worker. Counts do not depend on the load
of a shared machine, so two versions compare exactly; CPU milliseconds are printed too, as a guide.

    PYTHONPATH=$PWD .venv/bin/python bench/observe_profile.py [--requests 600] [--cache redis://127.0.0.1:6379/4]

Creates a scratch PostgreSQL database and calls the WSGI application in this process (no socket, no
gunicorn) with the bodies bench/loadgen.py sends, tasks queued to an in-memory broker nobody reads.
The worker's side is then run here too: ``analysis_run`` as the Celery task calls it, batch after
batch, until every message is analysed. A first round (--warm messages) fills the users' preferences,
workflows and prompt windows, so the measured round meets a steady state rather than empty tables.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import re
import time
import uuid
from collections import Counter

from harness import django_in_scratch, wsgi_post
from loadgen import message_body

LITERALS = re.compile(r"'(?:[^']|'')*'|\"s\d+_x\d+\"|\b\d+(?:\.\d+)?\b")


def shapes(captured: list[dict]) -> list[tuple[int, str]]:
    """The statements run, literals left out, most frequent first."""
    counts = Counter(LITERALS.sub("?", query["sql"])[:200] for query in captured)
    return [(count, sql) for sql, count in counts.most_common()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--database", default="learninglayer_profile")
    parser.add_argument("--cache", default=None, help="CACHE_URL (default: the settings' own choice)")
    parser.add_argument("--warm", type=int, default=600, help="messages observed and analysed before measuring")
    parser.add_argument("--requests", type=int, default=600, help="messages measured")
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--top", type=int, default=25, help="functions to list by call count (0: none)")
    parser.add_argument("--queries", action="store_true", help="print the statements run, by shape")
    parser.add_argument("--dump", default=None, help="write the worker's profile here (pstats; snakeviz, pstats)")
    args = parser.parse_args()

    os.environ["CELERY_TASK_ALWAYS_EAGER"] = "false"  # queued to memory://, analysed below as the worker would
    django_in_scratch(args.pg, args.database, cache=args.cache)
    from django.core.wsgi import get_wsgi_application
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from accounts.models import ApiKey, User
    from accounts.services import api_key_create
    from learning.conf import learning_settings
    from learning.models import ChatMessage
    from learning.services.messages import analysis_run

    _, raw = api_key_create(owner=User.objects.get(username="bench"), name="profile", kind=ApiKey.Kind.SERVICE)
    app = get_wsgi_application()
    run = uuid.uuid4().hex[:8]
    statuses: Counter[str] = Counter()

    def start_response(status: str, headers: list) -> None:
        statuses[status.split()[0]] += 1

    def post(i: int) -> None:
        body = message_body(i, run)
        wsgi_post(
            app,
            "/api/v1/messages",
            body,
            key=raw,
            on_behalf_of=f"bench-user-{i % args.users}",
            start_response=start_response,
        )

    def waiting() -> list[str]:
        pending = ChatMessage.objects.filter(analyzed_at__isnull=True, role=ChatMessage.Role.USER)
        return [str(pk) for pk in pending.order_by("created_at").values_list("pk", flat=True)]

    def drain() -> int:
        analysed = 0
        while ids := waiting():
            analysed += analysis_run(first_id=ids[0])
        return analysed

    def calls(profiler: cProfile.Profile) -> int:
        return sum(entry[1] for entry in pstats.Stats(profiler).stats.values())  # type: ignore[attr-defined]

    for i in range(args.warm):
        post(i)
    drain()  # also loads the embedding model

    first, last = args.warm, args.warm + args.requests
    profiler = cProfile.Profile()
    with CaptureQueriesContext(connection) as requests_sql:
        cpu = time.process_time()
        profiler.enable()
        for i in range(first, last):
            post(i)
        profiler.disable()
        request_cpu = time.process_time() - cpu
    request_calls = calls(profiler)
    request_profile = profiler
    print(
        f"POST /api/v1/messages x{args.requests}: {len(requests_sql) / args.requests:.2f} queries, "
        f"{request_calls / args.requests:,.0f} function calls, {1000 * request_cpu / args.requests:.2f} ms CPU "
        f"per request; statuses {dict(statuses)}"
    )

    profiler = cProfile.Profile()
    batch_size = learning_settings.ANALYSIS_BATCH_SIZE
    with CaptureQueriesContext(connection) as worker_sql:
        cpu = time.process_time()
        profiler.enable()
        analysed = drain()
        profiler.disable()
        worker_cpu = time.process_time() - cpu
    print(
        f"analysis of {analysed} messages (batches of {batch_size}): {len(worker_sql) / analysed:.2f} queries, "
        f"{calls(profiler) / analysed:,.0f} function calls, {1000 * worker_cpu / analysed:.2f} ms CPU per message"
    )
    if args.dump:
        profiler.dump_stats(args.dump)
    if args.queries:
        for title, captured in (("request", requests_sql), ("worker", worker_sql)):
            print(f"--- {title}: statements ---")
            for count, sql in shapes(captured.captured_queries):
                print(f"{count:6d}  {sql}")
    if args.top:
        for title, prof in (("request", request_profile), ("worker", profiler)):
            out = io.StringIO()
            stats = pstats.Stats(prof, stream=out).strip_dirs()
            stats.sort_stats("ncalls").print_stats(args.top)
            stats.sort_stats("cumulative").print_stats(args.top)
            print(f"--- {title} ---\n{out.getvalue()}")


if __name__ == "__main__":
    main()
