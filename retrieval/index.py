"""The vector index over chunk embeddings (faiss, exact inner product on normalised vectors).

The table is the truth; the index is derived from it. Every change of chunks bumps
``IndexGeneration`` in the same transaction; a process whose index (in memory, or the
file under ``RETRIEVAL_INDEX_DIR`` that survives restarts) was built at another
generation rebuilds it before answering, so search never reads a stale index.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import faiss
import numpy as np
from django.conf import settings
from django.db.models import F

from retrieval.conf import retrieval_settings
from retrieval.models import Chunk, IndexGeneration

DIMENSIONS = 384
# One thread per search: under concurrent requests faiss's OpenMP threads contend with
# each other (measured: 42 ms per 100k-chunk search with two threads under load, 11 ms with one).
faiss.omp_set_num_threads(retrieval_settings.FAISS_THREADS)


def current_generation() -> tuple[str, int]:
    """(token, generation) of the chunks table as it is now."""
    row = IndexGeneration.objects.filter(pk=1).values_list("token", "generation").first()
    return (row[0], int(row[1])) if row else ("empty", 0)


def bump_generation() -> None:
    """Call inside the transaction that changes chunks."""
    IndexGeneration.objects.get_or_create(pk=1)
    IndexGeneration.objects.filter(pk=1).update(generation=F("generation") + 1)


class VectorIndex:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._index: faiss.Index | None = None
        self._generation: tuple[str, int] | None = None

    def _path(self, generation: tuple[str, int]) -> Path:
        token, number = generation
        return Path(settings.RETRIEVAL_INDEX_DIR) / f"chunks-{token}-{number}.faiss"

    def _build(self) -> faiss.Index:
        index = faiss.IndexIDMap2(faiss.IndexFlatIP(DIMENSIONS))
        batch_ids: list[int] = []
        batch_vectors: list[np.ndarray] = []
        for pk, vector in Chunk.objects.order_by("pk").values_list("pk", "embedding").iterator(chunk_size=5000):
            batch_ids.append(pk)
            batch_vectors.append(np.frombuffer(bytes(vector), dtype=np.float32))
            if len(batch_ids) >= 5000:
                index.add_with_ids(np.vstack(batch_vectors), np.array(batch_ids, dtype=np.int64))
                batch_ids, batch_vectors = [], []
        if batch_ids:
            index.add_with_ids(np.vstack(batch_vectors), np.array(batch_ids, dtype=np.int64))
        return index

    def ready(self) -> faiss.Index:
        """The index at the database's current generation (loaded from disk or rebuilt)."""
        generation = current_generation()
        with self._lock:
            if self._index is not None and self._generation == generation:
                return self._index
            path = self._path(generation)
            if path.exists():
                index = faiss.read_index(str(path))
            else:
                index = self._build()
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(f".tmp{os.getpid()}")
                faiss.write_index(index, str(tmp))
                os.replace(tmp, path)  # atomic: another process never reads half a file
                for old in path.parent.glob(f"chunks-{generation[0]}-*.faiss"):
                    if old != path:
                        old.unlink(missing_ok=True)
            self._index, self._generation = index, generation
            return index

    def search(self, vector: np.ndarray, n: int) -> list[tuple[int, float]]:
        index = self.ready()
        if index.ntotal == 0:
            return []
        scores, ids = index.search(vector.reshape(1, -1).astype(np.float32), min(n, index.ntotal))
        return [(int(i), float(s)) for i, s in zip(ids[0], scores[0], strict=True) if i >= 0]


_index = VectorIndex()


def get_index() -> VectorIndex:
    return _index
