"""Import speed in passages/s: a first import, an unchanged re-import, and a re-import with 10 % of the
documents edited (one passage rewritten and one inserted at the top, so every later passage moves).

    .venv/bin/python bench/reimport_speed.py [--documents 10000] [--passages 10] [--pg URL | --sqlite]

On a scratch PostgreSQL database (``--database``, default ll_reimport_bench; ``--sqlite``: a
temporary SQLite file). The corpus is synthetic and deterministic (seeded): ``--documents`` documents
of ``--passages`` paragraphs of about 600 characters, so each paragraph is one passage (100,000 passages
by default). Embedding is stubbed with seeded random unit vectors: the figures measure import's own
work (chunking, hashing, matching passages to existing chunks, the database writes), not the model,
which dominates a real first import and is the same before and after. Documents go in batches of
``--batch`` (64, like ``manage.py import_documents``).
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


class StubEmbedder:
    """Seeded unit vectors per text: fast, deterministic, the model's shape (384 dimensions)."""

    def embed(self, texts: list[str]) -> np.ndarray:
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
            vector = np.random.default_rng(seed).normal(size=384).astype(np.float32)
            rows.append(vector / np.linalg.norm(vector))
        return np.vstack(rows) if rows else np.zeros((0, 384), dtype=np.float32)

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


def paragraph(rng: np.random.Generator, vocabulary: list[str]) -> str:
    words: list[str] = []
    length = 0
    while length < 600:
        words.append(vocabulary[int(rng.integers(len(vocabulary)))])
        length += len(words[-1]) + 1
    return " ".join(words).capitalize() + "."


def corpus(documents: int, passages: int, seed: int = 7) -> list[list[str]]:
    rng = np.random.default_rng(seed)
    vocabulary = [
        "".join(chr(97 + int(c)) for c in rng.integers(0, 26, size=int(n))) for n in rng.integers(3, 10, 5000)
    ]
    return [[paragraph(rng, vocabulary) for _ in range(passages)] for _ in range(documents)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--database", default="ll_reimport_bench")
    parser.add_argument("--sqlite", action="store_true", help="a temporary SQLite file instead of PostgreSQL")
    parser.add_argument("--documents", type=int, default=10_000)
    parser.add_argument("--passages", type=int, default=10)
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args()

    if args.sqlite:
        os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.local"
        os.environ["DATABASE_URL"] = f"sqlite:///{tempfile.mkdtemp(prefix='reimport-bench-')}/db.sqlite3"
        os.environ["LOG_LEVEL"] = "WARNING"
    else:
        env = scratch_environment(args.pg, args.database)
        keys = ("DJANGO_SETTINGS_MODULE", "SECRET_KEY", "ALLOWED_HOSTS", "DATABASE_URL", "SECURE_SSL_REDIRECT")
        os.environ.update({k: env[k] for k in (*keys, "LOG_LEVEL")})
    os.environ["RETRIEVAL_INDEX_DIR"] = tempfile.mkdtemp(prefix="reimport-bench-index-")
    import django

    django.setup()
    if args.sqlite:
        from django.core.management import call_command

        call_command("migrate", verbosity=0)

    from accounts.actors import Actor
    from retrieval import services
    from retrieval.models import Chunk

    services.get_embedder = StubEmbedder  # type: ignore[assignment]  # measure import, not the model
    texts = corpus(args.documents, args.passages)
    total = args.documents * args.passages

    def run(label: str, documents: list[list[str]]) -> None:
        items = [
            services.DocumentInput(id=f"doc-{i}", title=f"Document {i}", raw_text="\n\n".join(paragraphs))
            for i, paragraphs in enumerate(documents)
        ]
        started = time.perf_counter()
        report = services.ImportReport()
        for start in range(0, len(items), args.batch):
            part = services.documents_import(actor=Actor.for_system(), items=items[start : start + args.batch])
            for name in vars(report):
                setattr(report, name, getattr(report, name) + getattr(part, name))
        elapsed = time.perf_counter() - started
        print(
            f"{label:<28} {elapsed:7.1f} s  {total / elapsed:9.0f} passages/s  "
            f"({report.created} created, {report.updated} updated, {report.unchanged} unchanged; "
            f"{report.chunks_embedded} embedded; {Chunk.objects.count()} chunks)",
            flush=True,
        )

    print(f"{args.documents} documents x {args.passages} passages = {total} passages ({os.environ['DATABASE_URL']})")
    run("first import", texts)
    run("unchanged re-import", texts)
    rng = np.random.default_rng(11)
    edited = [list(paragraphs) for paragraphs in texts]
    for i in range(0, len(edited), 10):  # every tenth document: one passage rewritten, one inserted at the top
        edited[i][len(edited[i]) // 2] = f"Rewritten {int(rng.integers(1 << 30))}. " + edited[i][len(edited[i]) // 2]
        edited[i].insert(0, f"New opening paragraph {int(rng.integers(1 << 30))} of document {i}.")
    run("re-import, 10 % edited", edited)


if __name__ == "__main__":
    main()
