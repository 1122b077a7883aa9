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
import subprocess
import sys
import tempfile
import time
import zlib
from datetime import UTC, datetime
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
    parser.add_argument(
        "--phase",
        choices=["load", "measure", "import"],
        help="pgvector search at scale: load (a new --database with --chunks and its HNSW index), measure "
        "(latency and recall on it), import (passages/s); without: the search and scan above",
    )
    parser.add_argument("--build-workers", type=int, default=2, help="load: max_parallel_maintenance_workers")
    parser.add_argument("--build-memory", default="6GB", help="load: maintenance_work_mem")
    parser.add_argument("--exact", action="store_true", help="measure: the exact in-process path (faiss) instead")
    parser.add_argument(
        "--prewarm",
        action="store_true",
        help="measure: read the HNSW index into PostgreSQL's cache first (pg_prewarm), the steady state of a "
        "server whose shared_buffers hold it",
    )
    parser.add_argument("--passages", type=int, default=100_000, help="import: passages to import")
    parser.add_argument("--recall-queries", type=int, default=100, help="measure: queries checked by brute force")
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
    if args.phase:
        {"load": phase_load, "measure": phase_measure, "import": phase_import}[args.phase](args)
        return
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


# ---------------------------------------------------------------------------------------------
# Search on pgvector at scale (and the old exact path beside it), recall against brute force,
# and import speed. Separate from the scan part above.
# ---------------------------------------------------------------------------------------------


def shared_dir() -> Path:
    """../shared beside the project; from a git worktree, beside the main checkout."""
    root = Path(__file__).resolve().parents[1]
    common = subprocess.run(
        ["git", "rev-parse", "--path-format=absolute", "--git-common-dir"], cwd=root, capture_output=True, text=True
    ).stdout.strip()
    candidates = [root.parent / "shared"] + ([Path(common).parent.parent / "shared"] if common else [])
    return next((c for c in candidates if c.is_dir()), candidates[0])


PROJECTS = 20  # half the documents organisation-wide, half spread over this many projects
MIX_NOISE = 0.35  # isotropic noise added to each synthetic mixture (relative norm)


def cranfield() -> tuple[list[str], list[str]]:
    """Cranfield's passages (chunked as import does) and its 225 queries."""
    from retrieval_learning import parse_smart

    from retrieval.chunking import chunk_text

    data = shared_dir() / "data" / "cranfield"
    docs = parse_smart(data / "cran.all.1400")
    queries = [" ".join(q.get("W", "").split()) for q in parse_smart(data / "cran.qry").values()]
    passages = [p for d in docs.values() for p in chunk_text(f"{d.get('T', '')}\n\n{d.get('W', '')}", max_chars=1000)]
    return passages, queries


def base_vectors(passages: list[str]) -> np.ndarray:
    """The real embeddings of Cranfield's passages (cached in /tmp: the model takes a minute)."""
    cache = Path(tempfile.gettempdir()) / f"cranfield-passages-{len(passages)}.npy"
    if cache.exists():
        return np.load(cache)
    from core.embeddings import get_embedder

    vectors = get_embedder().embed(passages)
    np.save(cache, vectors)
    return vectors


class Corpus:
    """A deterministic corpus of unit vectors around real text embeddings: rows 0..n_base-1 are
    Cranfield's passages themselves; every later row is a Dirichlet(2,1,1) mixture of a real
    passage and two of its 20 nearest real neighbours plus isotropic noise of relative norm
    MIX_NOISE, normalised (cosine ~0.94 to its mixture). Random unit vectors would be HNSW's worst
    case and unlike text; this keeps text's anisotropy and topical clusters. Batches are
    regenerated on demand, so brute force never holds the whole corpus in memory."""

    BATCH = 20_000

    def __init__(self, base: np.ndarray, size: int, seed: int = 11) -> None:
        self.base, self.size, self.seed = base, size, seed
        similarities = base @ base.T
        np.fill_diagonal(similarities, -2)
        self.neighbours = np.argsort(-similarities, axis=1)[:, :20]

    def batch(self, number: int) -> np.ndarray:
        start = number * self.BATCH
        count = min(self.BATCH, self.size - start)
        rng = np.random.default_rng([self.seed, number])
        anchors = rng.integers(len(self.base), size=count)
        picks = self.neighbours[anchors[:, None], rng.integers(20, size=(count, 2))]
        mix = rng.dirichlet([2.0, 1.0, 1.0], size=count).astype(np.float32)
        vectors = (
            mix[:, :1] * self.base[anchors] + mix[:, 1:2] * self.base[picks[:, 0]] + mix[:, 2:] * self.base[picks[:, 1]]
        )
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        noise = rng.normal(size=vectors.shape).astype(np.float32)
        vectors += MIX_NOISE * noise / np.linalg.norm(noise, axis=1, keepdims=True)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        real = max(0, min(count, len(self.base) - start))
        vectors[:real] = self.base[start : start + real]
        return vectors.astype(np.float32)

    def batches(self):
        for number in range((self.size + self.BATCH - 1) // self.BATCH):
            yield number * self.BATCH, self.batch(number)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def load_corpus(
    corpus: Corpus, database_url: str, projects: list[int], *, workers: int, memory: str
) -> dict[str, float]:
    """COPY the corpus into document_chunks (ids 1..n, ten chunks per document), without the HNSW
    index, then rebuild the index exactly as the migration defines it. Returns the timings."""
    import psycopg
    from pgvector.psycopg import register_vector

    timings: dict[str, float] = {}
    with psycopg.connect(database_url, autocommit=True) as conn:
        register_vector(conn)
        found = conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'chunk_embedding_hnsw'").fetchone()
        indexdef = found[0]
        conn.execute("DROP INDEX chunk_embedding_hnsw")
        documents = (corpus.size + 9) // 10
        began = time.perf_counter()
        conn.execute(
            "INSERT INTO document_metadata (id, project_id, source_type, source_system, title, url, participants, "
            "raw_text, metadata, content_hash, imported_at, updated_at) "
            "SELECT 'd' || g, CASE WHEN g %% 2 = 0 THEN NULL ELSE (SELECT id FROM accounts_project "
            "WHERE slug = 'p' || ((g / 2) %% %s)) END, 'text', '', 'doc ' || g, '', '[]', 'x', '{}', g::text, now(), "
            "now() FROM generate_series(0, %s) g",
            [PROJECTS, documents - 1],
        )
        with (
            conn.cursor() as cursor,
            cursor.copy(
                "COPY document_chunks (id, chunk_id, document_id, project_id, position, content, content_hash, "
                "embedding, metadata, created_at) FROM STDIN (FORMAT BINARY)"
            ) as copy,
        ):
            copy.set_types(
                ["int8", "varchar", "varchar", "int8", "int4", "text", "varchar", "vector", "jsonb", "timestamptz"]
            )
            now = datetime.now(UTC)
            for start, vectors in corpus.batches():
                rows = np.arange(start, start + len(vectors))
                owners = document_project(rows, projects).tolist()
                for row, owner, vector in zip(rows.tolist(), owners, vectors, strict=True):
                    project = owner if owner >= 0 else None
                    copy.write_row(
                        (row + 1, f"c{row}", f"d{row // 10}", project, row % 10, "passage", str(row), vector, "{}", now)
                    )
                if (start // corpus.BATCH) % 10 == 0:
                    log(f"copied {start + len(vectors)} chunks")
        conn.execute("SELECT setval(pg_get_serial_sequence('document_chunks', 'id'), %s)", [corpus.size])
        # Hint bits and statistics now, not during the first searches.
        conn.execute("VACUUM (ANALYZE) document_metadata")
        conn.execute("VACUUM (ANALYZE) document_chunks")
        timings["load_s"] = time.perf_counter() - began
        log(f"loaded {corpus.size} chunks in {timings['load_s']:.0f} s; building: {indexdef}")
        conn.execute(f"SET maintenance_work_mem = '{memory}'")
        conn.execute(f"SET max_parallel_maintenance_workers = {workers}")
        began = time.perf_counter()
        conn.execute(indexdef)
        timings["build_s"] = time.perf_counter() - began
        log(f"HNSW index built in {timings['build_s']:.0f} s ({workers} parallel workers, {memory} of memory)")
    return timings


def bench_django(pg: str, database: str, *, fresh: bool, exact: bool = False) -> str:
    """Set this process's Django up on the bench database: a new one (migrated, with the bench
    superuser), or the one an earlier ``--phase load`` left. Returns the database URL."""
    if fresh:
        env = scratch_environment(pg, database)
    else:
        env = {
            "DJANGO_SETTINGS_MODULE": "config.settings.local",
            "DEBUG": "false",
            "SECRET_KEY": "bench-search-" + database,
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "DATABASE_URL": f"{pg}/{database}",
            "SECURE_SSL_REDIRECT": "false",
            "LOG_LEVEL": "WARNING",
        }
    os.environ.update(
        {
            k: env[k]
            for k in (
                "DJANGO_SETTINGS_MODULE",
                "DEBUG",
                "SECRET_KEY",
                "ALLOWED_HOSTS",
                "DATABASE_URL",
                "SECURE_SSL_REDIRECT",
                "LOG_LEVEL",
            )
        }
    )
    os.environ["RETRIEVAL_INDEX_DIR"] = tempfile.mkdtemp(prefix="search-bench-")
    os.environ["RETRIEVAL_EXACT_SEARCH"] = "true" if exact else "false"
    import django

    django.setup()
    return env["DATABASE_URL"]


def phase_load(args: argparse.Namespace) -> None:
    """A new bench database with the corpus and its HNSW index (slow at 1M: run it in the background)."""
    database_url = bench_django(args.pg, args.database, fresh=True)
    from accounts.models import Project

    Project.objects.bulk_create([Project(slug=f"p{i}", name=f"Project {i}") for i in range(PROJECTS)])
    projects = [Project.objects.get(slug=f"p{i}").pk for i in range(PROJECTS)]
    passages, _ = cranfield()
    corpus = Corpus(base_vectors(passages), args.chunks)
    log(f"corpus: {args.chunks} chunks around {len(passages)} real Cranfield passage embeddings")
    timings = load_corpus(corpus, database_url, projects, workers=args.build_workers, memory=args.build_memory)
    import psycopg

    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE bench_corpus (size int, seed int, base int, load_s float, build_s float)")
        conn.execute(
            "INSERT INTO bench_corpus VALUES (%s, %s, %s, %s, %s)",
            [corpus.size, corpus.seed, len(passages), timings["load_s"], timings["build_s"]],
        )
    log("load phase done")


def document_project(row: np.ndarray, projects: list[int]) -> np.ndarray:
    """The project of each chunk row as phase_load assigned it (-1: organisation-wide)."""
    document = row // 10
    ids = np.asarray(projects)[(document // 2) % PROJECTS]
    return np.where(document % 2 == 0, -1, ids)


def exact_candidates(corpus: Corpus, queries: np.ndarray, member_of: int, projects: list[int], n: int = 200):
    """Brute force in numpy over every vector: each query's n most similar chunk ids (pk = row + 1)
    with their similarities, for a reader who sees everything and for a member of one project."""
    best = {"admin": [], "member": []}
    for start, vectors in corpus.batches():
        scores = vectors @ queries.T  # (batch, queries)
        rows = np.arange(start, start + len(vectors))
        visible = np.isin(document_project(rows, projects), [-1, member_of])
        for reader, mask in (("admin", np.ones(len(rows), dtype=bool)), ("member", visible)):
            part = scores[mask]
            ids = rows[mask] + 1
            take = min(n, len(ids))
            top = np.argpartition(-part, take - 1, axis=0)[:take]  # (take, queries)
            best[reader].append((ids[top], np.take_along_axis(part, top, axis=0)))
    result = {}
    for reader, parts in best.items():
        ids = np.vstack([p[0] for p in parts])
        sims = np.vstack([p[1] for p in parts])
        order = np.argsort(-sims, axis=0)[:n]
        result[reader] = (np.take_along_axis(ids, order, axis=0).T, np.take_along_axis(sims, order, axis=0).T)
    return result


def exact_top10(ids: np.ndarray, sims: np.ndarray, vector: np.ndarray, text: str) -> list[int]:
    """Search's ranking rule applied to exact candidates (the active weights through the same code)."""
    from retrieval.selectors import weights_for

    multipliers = weights_for(chunk_ids=[int(i) for i in ids], project=None, query_vector=vector, query_text=text)
    scored = sorted(
        ((max(float(s), 0.0) * multipliers.get(int(i), 1.0), float(s), int(i)) for i, s in zip(ids, sims, strict=True)),
        reverse=True,
    )
    return [pk for _, _, pk in scored[:10]]


def weights_create(
    count: int, queries: list[str], vectors: np.ndarray, shown: dict[int, np.ndarray], projects: list[int]
) -> None:
    """``count`` active weights: half on chunks among the queries' exact top 50 (where learned
    weights sit: on results users were shown), half anywhere; 60 % global, 20 % project-scoped,
    20 % query-scoped (anchored on the query they were drawn for); multipliers across the bounds."""
    from retrieval.conf import WEIGHT_MAX, WEIGHT_MIN
    from retrieval.models import Chunk, RetrievalWeight
    from retrieval.scope import query_terms

    rng = np.random.default_rng(5)
    RetrievalWeight.objects.all().delete()
    size = Chunk.objects.order_by("-pk").values_list("pk", flat=True)[0]
    weights = []
    for i in range(count):
        q = list(shown)[int(rng.integers(len(shown)))]
        chunk = int(shown[q][rng.integers(len(shown[q]))]) if i % 2 else int(rng.integers(1, size + 1))
        kind = rng.random()
        fields: dict = {"scope": "global"}
        if kind > 0.8:
            fields = {
                "scope": "query",
                "query_anchors": vectors[q],
                "min_similarity": 0.9,
                "query_terms": query_terms(queries[q]),
            }
        elif kind > 0.6:
            fields = {"scope": "project", "project_id": projects[int(rng.integers(PROJECTS))]}
        weights.append(
            RetrievalWeight(
                chunk_id=chunk,
                document_id=f"d{(chunk - 1) // 10}",
                multiplier=float(rng.uniform(WEIGHT_MIN, WEIGHT_MAX)),
                reason="bench",
                **fields,
            )
        )
    RetrievalWeight.objects.bulk_create(weights)


def backend_pid(connection) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def scheduled(pid: int) -> tuple[float, float]:
    """Seconds a local process has run on a CPU, and waited for one (/proc/PID/schedstat, ns)."""
    fields = Path(f"/proc/{pid}/schedstat").read_text().split()
    return int(fields[0]) / 1e9, int(fields[1]) / 1e9


def phase_measure(args: argparse.Namespace) -> None:
    """Latency of POST /api/v1/retrieval/search (k=10, the real query embedding, the full request
    path) for an admin and a project member, and recall@10 against brute force with the same
    weights, on the database an earlier ``--phase load`` made."""
    bench_django(args.pg, args.database, fresh=False, exact=args.exact)
    from django.db import connection
    from django.test import Client

    from accounts.actors import Actor
    from accounts.models import Project, ProjectMembership, User
    from accounts.services import api_key_create
    from core.embeddings import get_embedder
    from retrieval.selectors import chunks_ranked

    with connection.cursor() as cursor:
        cursor.execute("SELECT size, seed, load_s, build_s FROM bench_corpus")
        size, seed, load_s, build_s = cursor.fetchone()
    passages, queries = cranfield()
    corpus = Corpus(base_vectors(passages), size, seed)
    projects = [Project.objects.get(slug=f"p{i}").pk for i in range(PROJECTS)]
    vectors = get_embedder().embed(queries)
    sample = list(range(0, len(queries), max(1, len(queries) // args.recall_queries)))[: args.recall_queries]
    began = time.perf_counter()
    exact = exact_candidates(corpus, vectors[sample], projects[0], projects)
    log(f"brute force over {size} vectors for {len(sample)} queries: {time.perf_counter() - began:.0f} s")
    shown = {q: exact["admin"][0][position][:50] for position, q in enumerate(sample)}
    weights_create(args.weights, queries, vectors, shown, projects)

    admin = User.objects.get(username="bench")
    member, _ = User.objects.get_or_create(username="bench-member")
    ProjectMembership.objects.get_or_create(user=member, project_id=projects[0])
    clients = {
        reader: Client(SERVER_NAME="127.0.0.1", HTTP_AUTHORIZATION=f"Bearer {api_key_create(owner=user, name='s')[1]}")
        for reader, user in (("admin", admin), ("member", member))
    }
    readers = {"admin": admin, "member": member}

    engine = "exact in process (faiss)" if args.exact else "pgvector HNSW"
    log(f"{engine} over {size} chunks (load {load_s:.0f} s, HNSW build {build_s:.0f} s), {args.weights} weights")
    with connection.cursor() as cursor:  # whether the index can stay in PostgreSQL's own cache decides the latency
        cursor.execute(
            "SELECT current_setting('shared_buffers'), pg_size_pretty(pg_relation_size('chunk_embedding_hnsw')), "
            "pg_size_pretty(pg_relation_size('document_chunks'))"
        )
        buffers, index_size, table_size = cursor.fetchone()
        if args.prewarm and not args.exact:
            cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
            cursor.execute("SELECT pg_prewarm('chunk_embedding_hnsw')")
            log(f"prewarmed {cursor.fetchone()[0]} index blocks")
    log(f"PostgreSQL shared_buffers {buffers}; HNSW index {index_size}, chunk table {table_size}")
    for reader, client in clients.items():
        results: dict[int, list[int]] = {}
        samples, cpu, queued = [], [], []
        for i in range(args.searches + 20):
            q = sample[i % len(sample)]
            backend = backend_pid(connection)
            began, began_cpu, began_backend = time.perf_counter(), time.process_time(), scheduled(backend)
            response = client.post(
                "/api/v1/retrieval/search", {"query": queries[q], "k": 10}, content_type="application/json"
            )
            elapsed = (time.perf_counter() - began) * 1000
            own, ended_backend = time.process_time() - began_cpu, scheduled(backend)
            assert response.status_code == 200, response.content
            if i >= 20:  # the first searches load the model (and the exact path's index)
                samples.append(elapsed)
                if backend == backend_pid(connection):  # the same database session throughout
                    cpu.append((own + ended_backend[0] - began_backend[0]) * 1000)
                    queued.append((ended_backend[1] - began_backend[1]) * 1000)
            results[q] = [int(hit["chunk_id"][1:]) + 1 for hit in response.json()["results"]]
        print(
            f"  CPU per search (this process, the embedding included, + its PostgreSQL backend), what the "
            f"wall time would be without other load: {percentiles(cpu)}; the backend waited for a CPU "
            f"{statistics.fmean(queued):.1f} ms per search on average",
            flush=True,
        )
        actor = Actor(user=readers[reader])
        embedding, ranking = [], []
        for i in range(min(args.searches, 200)):  # the two parts that grow with the model and the corpus
            q = sample[i % len(sample)]
            began = time.perf_counter()
            vector = get_embedder().embed_one(queries[q])
            embedding.append((time.perf_counter() - began) * 1000)
            began = time.perf_counter()
            chunks_ranked(actor=actor, query_vector=vector, project=None, k=10, query_text=queries[q])
            ranking.append((time.perf_counter() - began) * 1000)
        print(f"  of which the query embedding: {percentiles(embedding)}", flush=True)
        print(f"  of which the ranking (chunks_ranked): {percentiles(ranking)}", flush=True)
        recalls = []
        for position, q in enumerate(sample):
            ids, sims = exact[reader]
            truth = exact_top10(ids[position], sims[position], vectors[q], queries[q])
            recalls.append(len(set(truth) & set(results[q])) / len(truth))
        print(
            f"{engine}, {size} chunks, {reader}: search {percentiles(samples)}; "
            f"recall@10 {statistics.fmean(recalls):.3f} (min {min(recalls):.1f}, {len(recalls)} queries); "
            f"load {os.getloadavg()[0]:.1f}",
            flush=True,
        )


class StandInEmbedder:
    """Vectors for the import bench without the model's cost: a real Cranfield passage embedding
    (chosen by the text's checksum) plus noise, as in Corpus. The model's own speed is measured
    apart, on a sample of the same passages."""

    dimensions = 384

    def __init__(self, base: np.ndarray) -> None:
        self.base = base

    def embed(self, texts: list[str]) -> np.ndarray:
        vectors = np.zeros((len(texts), 384), dtype=np.float32)
        for row, text in enumerate(texts):
            seed = zlib.crc32(text.encode())
            noise = np.random.default_rng(seed).normal(size=384).astype(np.float32)
            vector = self.base[seed % len(self.base)] + MIX_NOISE * noise / np.linalg.norm(noise)
            vectors[row] = vector / np.linalg.norm(vector)
        return vectors


def phase_import(args: argparse.Namespace) -> None:
    """Import speed: --passages passages (Cranfield's, each in several variants so that every one
    is new and is embedded) through documents_import, ten per document, in calls of 500 documents,
    into a new database whose HNSW index is kept current by PostgreSQL as rows arrive. The model's
    embedding speed is measured separately on a sample (the import runs with a stand-in embedder)."""
    database = f"{args.database}_import"
    bench_django(args.pg, database, fresh=True)
    from accounts.actors import Actor
    from core.embeddings import get_embedder
    from retrieval import services
    from retrieval.models import Chunk
    from retrieval.services import DocumentInput, documents_import

    passages, _ = cranfield()
    base = base_vectors(passages)
    texts = [f"{passages[i % len(passages)][:900]} (variant {i // len(passages)})" for i in range(args.passages)]

    model = get_embedder()
    sample = texts[: min(300, len(texts))]
    model.embed(sample[:64])  # load
    began = time.perf_counter()
    model.embed(sample)
    embed_rate = len(sample) / (time.perf_counter() - began)
    log(f"embedding model: {embed_rate:.0f} passages/s over {len(sample)} passages (load {os.getloadavg()[0]:.1f})")

    services.get_embedder = lambda: StandInEmbedder(base)  # type: ignore[assignment]
    actor = Actor.for_system()
    began = time.perf_counter()
    per_call = 5000
    for start in range(0, len(texts), per_call):
        batch = texts[start : start + per_call]
        documents_import(
            actor=actor,
            items=[
                DocumentInput(
                    id=f"doc-{start + j}", title=f"Document {start + j}", raw_text="\n\n".join(batch[j : j + 10])
                )
                for j in range(0, len(batch), 10)
            ],
        )
    elapsed = time.perf_counter() - began
    chunks = Chunk.objects.count()
    import_rate = chunks / elapsed
    print(
        f"import of {chunks} passages ({len(texts) // 10} documents) through documents_import, embedding apart: "
        f"{elapsed:.0f} s, {import_rate:.0f} passages/s; the model embeds {embed_rate:.0f} passages/s; "
        f"together {1 / (1 / import_rate + 1 / embed_rate):.0f} passages/s; load {os.getloadavg()[0]:.1f}",
        flush=True,
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
--scan-new new trace rows plus marks on --scan-marks older rows. The promotions the earlier scans
opened are kept, as in a deployment (the later scans skip chunks with an open or answered proposal).
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
        "INSERT INTO retrieval_queries (id, created_at, tool_name, session_id, target_id, query_text, embedding, k, "
        "exploration_share, explored, exploration_first, exploration_pool) "
        "SELECT md5('t' || g)::uuid, created, 'bench', '', '', 'topic' || qid || ' flow over surface' || (qid %% 97), "
        "'\\x00'::bytea, 10, 0.05, explored, CASE WHEN explored THEN 4 END, CASE WHEN explored THEN 7 END "
        "FROM bench_traces",
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
    embedding = _stored_embedding(cursor)
    cursor.execute(
        "INSERT INTO document_chunks (chunk_id, document_id, position, content, content_hash, embedding, metadata, "  # noqa: S608
        f"created_at) SELECT 'c' || g, 'd' || (g / 10), g %% 10, 'passage', g::text, {embedding}, '{{}}', now() "
        "FROM generate_series(0, %s) g",
        [SCAN_CHUNKS - 1],
    )


def _stored_embedding(cursor) -> str:
    """A constant embedding in the chunk column's type: ``vector`` once pgvector is the engine (retrieval
    0006), ``bytea`` before it (the scan reads no embedding)."""
    cursor.execute(
        "SELECT udt_name FROM information_schema.columns WHERE table_name = 'document_chunks' "
        "AND column_name = 'embedding'"
    )
    if cursor.fetchone()[0] == "vector":
        return "array_fill(0.05::real, ARRAY[384])::vector"
    return "'\\x00'::bytea"


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
    # The promotions the scans opened stay, as in a deployment: the next scan skips a chunk with an open
    # candidate or an answered change, and proposes only what is new.
    print(
        f"open retrieval-weight candidates: "
        f"{LearningPromotion.objects.filter(promotion_type='retrieval_weight', status='candidate').count()}",
        flush=True,
    )
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
