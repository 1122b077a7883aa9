"""The vector index over chunk embeddings: which engine answers, and the in-process one.

On PostgreSQL the engine is pgvector: chunk embeddings are a ``vector(384)`` column with an HNSW
index (migration 0005) that the database keeps current as chunks change; search is one SQL
statement (``retrieval.selectors``) and no process holds a copy, so nothing here is built or
read there. Elsewhere (SQLite, the embedded default), and on PostgreSQL with
``RETRIEVAL_EXACT_SEARCH``, search is exact and in process: a faiss inner-product index over the
normalised vectors, derived from the table. Every change of chunks bumps ``IndexGeneration`` in
the same transaction; a process whose index (in memory, or the file under
``RETRIEVAL_INDEX_DIR`` that survives restarts) was built at another generation rebuilds it
before answering, so exact search never reads a stale index.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import faiss
import numpy as np
from django.conf import settings
from django.db import connection
from django.db.models import F

from retrieval.conf import retrieval_settings
from retrieval.models import Chunk, IndexGeneration

DIMENSIONS = 384
# One thread per search: under concurrent requests faiss's OpenMP threads contend with
# each other (measured: 42 ms per 100k-chunk search with two threads under load, 11 ms with one).
faiss.omp_set_num_threads(retrieval_settings.FAISS_THREADS)


def uses_hnsw() -> bool:
    """Does search use the database's HNSW index (PostgreSQL) rather than the in-process one?"""
    return connection.vendor == "postgresql" and not retrieval_settings.RETRIEVAL_EXACT_SEARCH


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

    def search(self, vector: np.ndarray, n: int, among: list[int] | None = None) -> list[tuple[int, float]]:
        """The ``n`` most similar chunks (id, inner product), best first; only those in ``among`` if given."""
        return self._search(self.ready(), vector, n, among)

    def search_many(self, vectors: list[np.ndarray], ns: list[int]) -> list[list[tuple[int, float]]]:
        """``search`` for many vectors against one state of the index (its generation read once)."""
        index = self.ready()
        return [self._search(index, vector, n, None) for vector, n in zip(vectors, ns, strict=True)]

    @staticmethod
    def _search(index: faiss.Index, vector: np.ndarray, n: int, among: list[int] | None) -> list[tuple[int, float]]:
        if index.ntotal == 0 or among == []:
            return []
        params = None
        if among is not None:
            params = faiss.SearchParameters(sel=faiss.IDSelectorBatch(np.asarray(among, dtype=np.int64)))  # type: ignore[call-arg]
        query = vector.reshape(1, -1).astype(np.float32)
        scores, ids = index.search(query, min(n, index.ntotal), params=params)
        return [(int(i), float(s)) for i, s in zip(ids[0], scores[0], strict=True) if i >= 0]


_index = VectorIndex()


def get_index() -> VectorIndex:
    return _index
