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
    RETRIEVAL_SYNONYM_SIMILARITY = Tunable(
        0.8,
        minimum=0.0,
        maximum=1.0,
        doc=(
            "a query-scoped weight reaches a re-asking of its anchor query that replaces a word by one "
            "at least this similar to it (embeddings of the single words)"
        ),
    )
    RETRIEVAL_SCOPE_MAX_SYNONYMS = Tunable(
        0,
        minimum=0,
        maximum=10,
        doc=(
            "words of an anchor query a re-asking may replace by a similar word and still reach its weight "
            "(0: single-word embeddings put opposites such as laminar/turbulent as close as synonyms)"
        ),
    )
    RETRIEVAL_SCOPE_MAX_DROPPED = Tunable(
        1,
        minimum=0,
        maximum=10,
        doc="words of an anchor query (of four or more) a re-asking may leave out and still reach its weight",
    )
    RETRIEVAL_SCOPE_MAX_ADDED = Tunable(
        0,
        minimum=0,
        maximum=10,
        doc="words a re-asking may add to an anchor query (of three or more) and still reach its weight",
    )
    RETRIEVAL_SCOPE_SAME_TERMS_MARGIN = Tunable(
        0.15,
        minimum=0.0,
        maximum=0.5,
        doc=(
            "how much less embedding similarity than the weight's minimum a query needs when its terms are "
            "exactly an anchor's (reordered, inflected, with filler)"
        ),
    )
    RETRIEVAL_EXPLORE_SHARE = Tunable(
        0.05,
        minimum=0.0,
        maximum=1.0,
        doc=(
            "the share of searches that explore: their results below the protected top are drawn at random "
            "from those ranks and the next RETRIEVAL_EXPLORE_POOL (a project may set its own share)"
        ),
    )
    RETRIEVAL_EXPLORE_FROM = Tunable(
        4, minimum=2, maximum=1000, doc="the first rank exploration may fill: the ranks above it are never moved"
    )
    RETRIEVAL_EXPLORE_POOL = Tunable(
        10, minimum=0, maximum=200, doc="results ranked just past the page that an explored search may show"
    )
    RETRIEVAL_EXPLORE_SEED = Tunable(
        -1,
        minimum=-1,
        maximum=2**62,
        doc="seeds the per-process sequence of exploration draws (benchmarks, tests); -1: drawn from the OS",
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
