"""Search latency over 100,000 chunks with weights, and the retrieval scan over 1,000,000 traces.

    .venv/bin/python bench/search_scan.py [--chunks 100000] [--traces 1000000] [--searches 300]

On a scratch PostgreSQL database: 100,000 chunks (random unit embeddings, inserted
directly: this measures the index, the weights and the database, and the real query
embedding), 2,000 active weights, then POST /api/v1/retrieval/search with k=10 through
Django's full request path (p50/p95/p99). Then 1,000,000 trace rows generated in SQL and
the scan timed. Goals: search p95 <= 50 ms; scan <= 10 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness import scratch_environment

QUERIES = [
    "boundary layer transition on a flat plate",
    "flutter of swept wings",
    "heat transfer in hypersonic flow",
    "buckling of cylindrical shells",
    "shock wave interaction with a boundary layer",
    "lift of slender bodies",
]


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    at = lambda q: ordered[min(len(ordered) - 1, round(q / 100 * len(ordered)) - 1)]  # noqa: E731
    return f"p50 {at(50):.1f} ms, p95 {at(95):.1f} ms, p99 {at(99):.1f} ms, mean {statistics.fmean(ordered):.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--database", default="learninglayer_bench_search")
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--weights", type=int, default=2_000)
    parser.add_argument("--traces", type=int, default=1_000_000)
    parser.add_argument("--searches", type=int, default=300)
    parser.add_argument("--part", choices=("search", "scan"), default="search", help="search latency, or the scan")
    parser.add_argument("--scan-database", default="ll_scan_bench")
    parser.add_argument("--scan-traces", type=int, default=10_000_000, help="trace rows the scan part generates")
    parser.add_argument("--scan-new", type=int, default=100_000, help="new trace rows before the incremental scan")
    parser.add_argument("--scan-marks", type=int, default=10_000, help="older trace rows marked before it")
    parser.add_argument("--reuse", action="store_true", help="scan part: keep and extend an existing database")
    parser.add_argument("--generate-only", action="store_true", help="scan part: generate the traces and stop")
    parser.add_argument(
        "--incremental-only",
        action="store_true",
        help="scan part, with --reuse: the rollups exist, time the later scans",
    )
    args = parser.parse_args()
    if args.part == "scan":
        scan_part(args)
        return

    env = scratch_environment(args.pg, args.database)
    os.environ.update(
        {
            k: env[k]
            for k in (
                "DJANGO_SETTINGS_MODULE",
                "SECRET_KEY",
                "ALLOWED_HOSTS",
                "DATABASE_URL",
                "SECURE_SSL_REDIRECT",
                "LOG_LEVEL",
            )
        }
    )
    os.environ["RETRIEVAL_INDEX_DIR"] = tempfile.mkdtemp(prefix="search-bench-")
    import django

    django.setup()
    from django.db import connection, transaction
    from django.test import Client

    from accounts.models import User
    from accounts.services import api_key_create
    from promotions.scanners.retrieval import retrieval_scan
    from retrieval.index import bump_generation
    from retrieval.models import Chunk, Document, RetrievalWeight

    rng = np.random.default_rng(7)
    started = time.perf_counter()
    with transaction.atomic():
        documents = [Document(id=f"d{i}", raw_text="x", content_hash=str(i)) for i in range(args.chunks // 10)]
        Document.objects.bulk_create(documents, batch_size=5000)
        for start in range(0, args.chunks, 10_000):
            vectors = rng.normal(size=(min(10_000, args.chunks - start), 384)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            Chunk.objects.bulk_create(
                [
                    Chunk(
                        chunk_id=f"c{start + i}",
                        document_id=f"d{(start + i) // 10}",
                        position=(start + i) % 10,
                        content="passage",
                        content_hash=str(start + i),
                        embedding=vector,
                    )
                    for i, vector in enumerate(vectors)
                ],
                batch_size=5000,
            )
        bump_generation()
    ids = list(Chunk.objects.values_list("pk", flat=True)[: args.weights])
    RetrievalWeight.objects.bulk_create(
        [
            RetrievalWeight(chunk_id=pk, document_id=f"d{(pk - ids[0]) // 10}", scope="global", multiplier=1.2)
            for pk in ids
        ]
    )
    print(f"loaded {args.chunks} chunks and {args.weights} weights in {time.perf_counter() - started:.1f} s")

    user = User.objects.get(username="bench")
    client = Client(SERVER_NAME="127.0.0.1", HTTP_AUTHORIZATION=f"Bearer {api_key_create(owner=user, name='s')[1]}")
    samples = []
    for i in range(args.searches + 20):
        began = time.perf_counter()
        response = client.post(
            "/api/v1/retrieval/search",
            {"query": f"{QUERIES[i % len(QUERIES)]} {i}", "k": 10},
            content_type="application/json",
        )
        elapsed = (time.perf_counter() - began) * 1000
        assert response.status_code == 200, response.content
        if i >= 20:  # the first searches load the model and the index
            samples.append(elapsed)
    print(f"search over {args.chunks} chunks, k=10, with weights: {percentiles(samples)}")

    with connection.cursor() as cursor:
        cursor.execute("SELECT min(id) FROM document_chunks")
        low = cursor.fetchone()[0]
        cursor.execute(
            "INSERT INTO retrieval_queries (id, created_at, tool_name, session_id, target_id, query_text, embedding, "
            "k) SELECT md5(g::text)::uuid, now(), 'bench', '', '', 'q', %s, 10 FROM generate_series(1, %s) g",
            [rng.normal(size=384).astype(np.float32).tobytes(), args.traces // 10],
        )
        cursor.execute(
            "INSERT INTO ai_retrieval_feedback (trace_id, created_at, updated_at, target_id, session_id, tool_name, "
            "query_text, document_id, chunk_id, rank, score, weight, cited, user_referenced, used_in_answer, outcome, "
            "metadata) SELECT md5((g / 10 + 1)::text)::uuid, now(), now(), '', '', 'bench', 'q', "
            "'d' || ((c - %s) / 10), c, g %% 10 + 1, 0.5, 1.0, random() < 0.1, false, random() < 0.05, "
            "CASE WHEN random() < 0.02 THEN 'unhelpful' WHEN random() < 0.01 THEN 'stale' ELSE 'unknown' END, '{}' "
            "FROM (SELECT g, %s + (g::bigint * 7919) %% %s AS c FROM generate_series(0, %s) g) s",
            [low, low, args.chunks, args.traces - 1],
        )
        cursor.execute("ANALYZE ai_retrieval_feedback")
    began = time.perf_counter()
    report = retrieval_scan()
    print(
        f"scan over {args.traces} trace rows: {time.perf_counter() - began:.1f} s "
        f"({report.groups} groups, {report.boosts} boosts, {report.penalties} penalties)"
    )


SCAN_DOC = """The scan part (--part scan): incremental retrieval-scan aggregation over --scan-traces trace rows.

    .venv/bin/python bench/search_scan.py --part scan [--scan-traces 10000000] [--reuse]

Generates, in SQL (generate_series, in committed batches of 1,000,000 rows, so an interrupted run
keeps what it made and --reuse continues it), searches of 10 results each over 100,000 chunks:
queries drawn from 50,000 distinct texts with a skewed popularity, 5 % of searches explored
(ranks 4-10 rotated at random), 20 % of searches given feedback by a position-biased user (examines
rank r with probability 1/r, uses a relevant result with probability 0.6, an irrelevant one with
0.05, now and then marks an outcome). Then times: the first scan (the full aggregation into the
rollups, the proposals and their audit events), a scan with nothing new, and a scan after
--scan-new new trace rows plus marks on --scan-marks older rows.
"""

SCAN_QUERIES = 50_000
SCAN_CHUNKS = 100_000
SCAN_BATCH = 100_000  # searches (of 10 rows each) per committed batch


def _scan_generate(cursor, *, first: int, last: int, days: float, recent: bool) -> None:
    """Searches ``first``..``last`` (1-based) and their 10 result rows each; created_at spreads the
    whole range over ``days`` up to now (``recent``: all within the last minute)."""
    cursor.execute(
        "CREATE TEMP TABLE IF NOT EXISTS bench_traces (g bigint PRIMARY KEY, qid int, explored bool, "
        "engaged bool, shift int, created timestamptz)"
    )
    cursor.execute("TRUNCATE bench_traces")
    age = "random() * interval '50 seconds'" if recent else f"(%s - g) * interval '1 second' * {days * 86400.0} / %s"
    params = [] if recent else [last, last]
    cursor.execute(
        "INSERT INTO bench_traces SELECT g, floor(%s * power(random(), 3))::int, random() < 0.05, random() < 0.2, "  # noqa: S608
        f"floor(random() * 7)::int, now() - {age} FROM generate_series(%s, %s) g",
        [SCAN_QUERIES, *params, first, last],
    )
    cursor.execute(
        "INSERT INTO retrieval_queries (id, created_at, tool_name, session_id, target_id, query_text, embedding, k) "
        "SELECT md5('t' || g)::uuid, created, 'bench', '', '', 'topic' || qid || ' flow over surface' || (qid %% 97), "
        "'\\x00'::bytea, 10 FROM bench_traces",
        [],
    )
    cursor.execute(
        "SELECT 1 FROM information_schema.columns "
        "WHERE table_name = 'retrieval_queries' AND column_name = 'feedback_at'"
    )
    if cursor.fetchone():  # the searches that got feedback say so (the scan counts their unused results as skipped)
        cursor.execute(
            "UPDATE retrieval_queries q SET feedback_at = t.created FROM bench_traces t "
            "WHERE t.engaged AND q.id = md5('t' || t.g)::uuid"
        )
    # Each query shows the same ten chunks (its natural ranks 1..10); an explored search rotates natural
    # ranks 4..10 by its shift. A (query, chunk) pair is relevant when a hash of it falls in the lower 30 %.
    cursor.execute(
        "INSERT INTO ai_retrieval_feedback (trace_id, created_at, updated_at, target_id, session_id, tool_name, "
        "query_text, document_id, chunk_id, rank, score, weight, cited, user_referenced, used_in_answer, outcome, "
        "explored, metadata) "
        "SELECT md5('t' || g)::uuid, created, created, '', '', 'bench', 'topic' || qid || ' flow over surface' || "
        "(qid %% 97), 'd' || (c / 10), %s + c, shown, 0.5, 1.0, clicked, false, clicked, "
        "CASE WHEN NOT engaged THEN 'unknown' WHEN random() < 0.01 THEN (CASE WHEN relevant THEN 'helpful' "
        "ELSE 'unhelpful' END) WHEN random() < 0.002 THEN 'stale' ELSE 'unknown' END, moved, '{}' FROM ("
        "  SELECT t.*, (t.qid::bigint * 7919 + n * 104729) %% %s AS c, "
        "  CASE WHEN t.explored AND n >= 4 THEN 4 + (n - 4 + t.shift) %% 7 ELSE n END AS shown, "
        "  t.explored AND n >= 4 AS moved, ((t.qid * 31 + n * 17) %% 10) < 3 AS relevant FROM bench_traces t, "
        "  generate_series(1, 10) n) s, "
        "LATERAL (SELECT engaged AND random() < (1.0 / shown) * "
        "CASE WHEN relevant THEN 0.6 ELSE 0.05 END AS clicked) k",
        [_scan_low(cursor), SCAN_CHUNKS],
    )


def _scan_low(cursor) -> int:
    cursor.execute("SELECT min(id) FROM document_chunks")
    return cursor.fetchone()[0]


def _scan_chunks(cursor) -> None:
    cursor.execute("SELECT count(*) FROM document_chunks")
    if cursor.fetchone()[0] >= SCAN_CHUNKS:
        return
    cursor.execute(
        "INSERT INTO document_metadata (id, project_id, source_type, source_system, title, url, participants, "
        "raw_text, metadata, content_hash, imported_at, updated_at) SELECT 'd' || g, NULL, 'text', '', '', '', "
        "'[]', 'x', '{}', g::text, now(), now() FROM generate_series(0, %s) g",
        [SCAN_CHUNKS // 10 - 1],
    )
    cursor.execute(
        "INSERT INTO document_chunks (chunk_id, document_id, position, content, content_hash, embedding, metadata, "
        "created_at) SELECT 'c' || g, 'd' || (g / 10), g %% 10, 'passage', g::text, '\\x00'::bytea, '{}', now() "
        "FROM generate_series(0, %s) g",
        [SCAN_CHUNKS - 1],
    )


def scan_part(args) -> None:
    """Time the retrieval scan over many traces: the first (full) aggregation, then incremental scans."""
    import psycopg

    dsn = f"{args.pg}/{args.scan_database}"
    with psycopg.connect(f"{args.pg}/postgres", autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [args.scan_database]).fetchone()
    if args.reuse and exists:
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings.local",
            "DEBUG": "false",
            "SECRET_KEY": "bench-only-secret-key-not-used-for-anything-real-0123456789",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "DATABASE_URL": dsn,
            "SECURE_SSL_REDIRECT": "false",
            "LOG_LEVEL": "WARNING",
        }
    else:
        env = scratch_environment(args.pg, args.scan_database)
    os.environ.update(
        {k: env[k] for k in ("DJANGO_SETTINGS_MODULE", "SECRET_KEY", "ALLOWED_HOSTS", "DATABASE_URL", "LOG_LEVEL")}
    )
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection, transaction

    call_command("migrate", "--noinput", verbosity=0)
    with connection.cursor() as cursor:
        with transaction.atomic():
            _scan_chunks(cursor)
        cursor.execute("SELECT count(*) FROM retrieval_queries")
        have = cursor.fetchone()[0]
        want = args.scan_traces // 10
        while have < want:
            began = time.perf_counter()
            last = min(want, have + SCAN_BATCH)
            with transaction.atomic():
                _scan_generate(cursor, first=have + 1, last=last, days=80.0 * last / want, recent=False)
            print(f"generated {last * 10} trace rows ({time.perf_counter() - began:.1f} s for this batch)", flush=True)
            have = last
        cursor.execute("ANALYZE ai_retrieval_feedback")
    if args.generate_only:
        return
    _scan_timings(args)


def _scan_timings(args) -> None:
    """The scan's figures on the generated traces (see SCAN_DOC)."""
    from django.db import connection, transaction

    from promotions.models import LearningPromotion
    from promotions.scanners.retrieval import retrieval_scan
    from retrieval.models import RetrievalFeedback, RetrievalQuery

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM ai_retrieval_feedback")
        rows = cursor.fetchone()[0]
    print(f"{rows} trace rows; load {os.getloadavg()[0]:.2f}", flush=True)
    labels = ("first scan (full aggregation)", "scan with nothing new")
    for label in labels[1:] if args.incremental_only else labels:
        began = time.perf_counter()
        report = retrieval_scan()
        print(f"{label}: {time.perf_counter() - began:.1f} s; {report}; load {os.getloadavg()[0]:.2f}", flush=True)
    LearningPromotion.objects.filter(promotion_type="retrieval_weight").delete()  # the next scans propose again
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM retrieval_queries")
        have = cursor.fetchone()[0]
        with transaction.atomic():
            _scan_generate(cursor, first=have + 1, last=have + args.scan_new // 10, days=0.0, recent=True)
    marked = list(
        RetrievalFeedback.objects.filter(rank__lte=3, cited=False)
        .order_by("id")
        .values_list("id", flat=True)[: args.scan_marks]
    )
    # As the feedback service does: the rows marked, their searches' feedback recorded.
    RetrievalFeedback.objects.filter(id__in=marked).update(cited=True, used_in_answer=True, updated_at=django_now())
    RetrievalQuery.objects.filter(pk__in=RetrievalFeedback.objects.filter(id__in=marked).values("trace_id")).update(
        feedback_at=django_now()
    )
    began = time.perf_counter()
    report = retrieval_scan()
    print(
        f"scan after {args.scan_new} new trace rows and {len(marked)} marks on older ones: "
        f"{time.perf_counter() - began:.1f} s; {report}; load {os.getloadavg()[0]:.2f}",
        flush=True,
    )


def django_now():
    from django.utils import timezone

    return timezone.now()


if __name__ == "__main__":
    main()
