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
    args = parser.parse_args()

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


if __name__ == "__main__":
    main()
