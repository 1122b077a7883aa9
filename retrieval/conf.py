"""Retrieval's tunables, typed and range-checked (see ``core.conf``)."""

from __future__ import annotations

from typing import Final

from core.conf import AppSettings, Tunable

# The bounds of every retrieval weight's multiplier: the database constraint on
# ``ai_retrieval_weights``, the scan's proposals and search's combined multiplier all use these.
# Constants, not settings: the constraint is part of the schema.
WEIGHT_MIN: Final = 0.65
WEIGHT_MAX: Final = 1.5


def clamp_multiplier(value: float) -> float:
    """A multiplier (or a product of several) held within [WEIGHT_MIN, WEIGHT_MAX]."""
    return min(WEIGHT_MAX, max(WEIGHT_MIN, value))


class RetrievalSettings(AppSettings):
    """Declared here once; values come from Django settings or the environment."""

    RETRIEVAL_CHUNK_CHARS = Tunable(
        1000, minimum=100, maximum=100_000, doc="the longest passage a document is cut into, in characters"
    )
    RETRIEVAL_MAX_K = Tunable(50, minimum=1, maximum=1000, doc="the most results one search may ask for")
    RETRIEVAL_MIN_TERM_OVERLAP = Tunable(
        0.8,
        minimum=0.0,
        maximum=1.0,
        doc=(
            "a query-scoped weight applies to a query whose content words overlap (Jaccard) one of its "
            "anchor queries' at least this much, besides being close in embedding"
        ),
    )
    FAISS_THREADS = Tunable(
        1,
        minimum=1,
        maximum=256,
        doc=(
            "SQLite (exact in-process search) only: threads per vector search; one is fastest under "
            "concurrent requests (read once at start)"
        ),
    )
    RETRIEVAL_HNSW_EF_SEARCH = Tunable(
        100,
        minimum=10,
        maximum=1000,
        doc=(
            "PostgreSQL: pgvector's hnsw.ef_search for search, the candidate list the HNSW index walks: "
            "higher finds the true nearest chunks more often (recall) and costs time"
        ),
    )
    RETRIEVAL_HNSW_MAX_SCAN_TUPLES = Tunable(
        20_000,
        minimum=1000,
        maximum=10_000_000,
        doc=(
            "PostgreSQL: pgvector's hnsw.max_scan_tuples, how far an iterative index scan goes to find "
            "enough chunks the searcher may read before it gives up with fewer"
        ),
    )
    RETRIEVAL_EXACT_SEARCH = Tunable(
        False,
        doc=(
            "PostgreSQL: search exactly in process (a faiss index of all chunks in every process, rebuilt "
            "after each change) instead of the HNSW index; for comparisons, and SQLite always does"
        ),
    )


retrieval_settings = RetrievalSettings()
