"""Import + compile throughput (documents/s): documents imported, their signals extracted into cards,
and the affected packets rebuilt, on PostgreSQL and on SQLite.

    .venv/bin/python bench/compile_throughput.py [--documents 600] [--pg URL] [--database NAME] [--sqlite]
        [--seed 5] [--real-embedder]

On a scratch PostgreSQL database (``--database``, default ll_compile_bench, created fresh and migrated;
``--pg`` the server) or, with ``--sqlite``, a temporary SQLite file. The documents are
bench/signal_corpus.py's (seeded e-mails, meeting notes and chat threads), spread over three projects.
Stages, each timed on its own and as a whole:

1. import (``documents_import`` in batches of 64: chunking, embedding, the writes);
2. compile (one ``signal_extraction`` job per document, run in this process as a worker would:
   extraction, staging, card upsert with evidence, one refresh request per affected target);
3. the packet refreshes those jobs queued (one per target, however many documents asked).

Embedding is stubbed with seeded unit vectors unless ``--real-embedder`` (the local model dominates a
real first import and is measured by bench/ingest.py); the task queue is bypassed so that the stages
are measured one after the other in one process.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness import scratch_environment
from signal_corpus import corpus


class StubEmbedder:
    """Seeded unit vectors per text (the model's shape, 384 dimensions)."""

    def embed(self, texts: list[str]) -> np.ndarray:
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
            vector = np.random.default_rng(seed).normal(size=384).astype(np.float32)
            rows.append(vector / np.linalg.norm(vector))
        return np.vstack(rows) if rows else np.zeros((0, 384), dtype=np.float32)

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--database", default="ll_compile_bench")
    parser.add_argument("--sqlite", action="store_true", help="a temporary SQLite file instead of PostgreSQL")
    parser.add_argument("--documents", type=int, default=600)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--real-embedder", action="store_true")
    args = parser.parse_args()

    if args.sqlite:
        os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.local"
        os.environ["DATABASE_URL"] = f"sqlite:///{tempfile.mkdtemp(prefix='compile-bench-')}/db.sqlite3"
        os.environ["LOG_LEVEL"] = "WARNING"
    else:
        env = scratch_environment(args.pg, args.database)
        keys = ("DJANGO_SETTINGS_MODULE", "SECRET_KEY", "ALLOWED_HOSTS", "DATABASE_URL", "SECURE_SSL_REDIRECT")
        os.environ.update({k: env[k] for k in (*keys, "LOG_LEVEL")})
    os.environ["RETRIEVAL_INDEX_DIR"] = tempfile.mkdtemp(prefix="compile-bench-index-")
    os.environ["INTELLIGENCE_EXTRACTOR"] = "local"
    import django

    django.setup()
    if args.sqlite:
        from django.core.management import call_command

        call_command("migrate", verbosity=0)

    from django.db import connection

    from accounts.actors import Actor
    from accounts.models import Project
    from intelligence.models import (
        InsightCard,
        InsightCardEvidence,
        IntelligenceTarget,
        JobStatus,
        PacketRefreshJob,
        SourceIntelligenceJob,
        SourceSignalCandidate,
        TargetKind,
    )
    from intelligence.services import jobs, refresh
    from intelligence.services.compile import documents_compile_queue
    from intelligence.services.targets import target_for_project
    from retrieval import services

    if not args.real_embedder:
        services.get_embedder = StubEmbedder  # type: ignore[assignment]
    # Measured one stage after another in this process: nothing is published to a queue.
    jobs._publish = lambda job_id: None  # type: ignore[assignment]
    refresh._publish = lambda job_id: None  # type: ignore[assignment]

    projects = []
    for slug in ("harbour-tower", "riverside-school", "north-depot"):
        project, _ = Project.objects.get_or_create(slug=slug, defaults={"name": slug.replace("-", " ").title()})
        target_for_project(project=project)
        IntelligenceTarget.objects.get_or_create(
            project=project, slug=f"{slug}-east", defaults={"kind": TargetKind.BUILDING, "name": "East Wing"}
        )
        projects.append(project)
    documents = corpus(seed=args.seed, documents=args.documents)
    items = [
        services.DocumentInput(
            id=document.id,
            title=document.title,
            raw_text=document.text,
            project_slug=projects[i % len(projects)].slug,
            source_system=document.source_system,
            participants=document.participants,
            source_created_at=document.created_at,
        )
        for i, document in enumerate(documents)
    ]
    n = len(items)
    print(
        f"{n} documents, {sum(len(d.sentences) for d in documents)} sentences; {connection.vendor} "
        f"({os.environ['DATABASE_URL'].rsplit('@', 1)[-1]}); embedder: {'model' if args.real_embedder else 'stub'}"
    )

    started = time.perf_counter()
    for start in range(0, n, 64):
        services.documents_import(actor=Actor.for_system(), items=items[start : start + 64])
    imported = time.perf_counter()
    queued = documents_compile_queue(document_ids=[item.id for item in items])
    for job in queued:
        jobs.source_job_run(job_id=str(job.pk))
    compiled = time.perf_counter()
    refreshes = list(PacketRefreshJob.objects.filter(status=JobStatus.QUEUED).values_list("pk", flat=True))
    for job_id in refreshes:
        refresh.packet_refresh_run(job_id=job_id)
    built = time.perf_counter()

    def rate(seconds: float) -> str:
        return f"{seconds:7.2f} s  {n / seconds:8.1f} documents/s"

    print(f"import                      {rate(imported - started)}")
    print(
        f"compile (extract + cards)   {rate(compiled - imported)}  "
        f"({SourceSignalCandidate.objects.count()} signals, {InsightCard.objects.count()} cards, "
        f"{InsightCardEvidence.objects.count()} evidence)"
    )
    print(f"packet refreshes            {built - compiled:7.2f} s  ({len(refreshes)} targets, one refresh each)")
    print(f"import + compile + packets  {rate(built - started)}")
    failed = SourceIntelligenceJob.objects.filter(status=JobStatus.FAILED).count()
    if failed:
        print(f"{failed} jobs failed")


if __name__ == "__main__":
    main()
