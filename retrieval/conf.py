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
        doc="threads per vector search; one is fastest under concurrent requests (read once at start)",
    )


retrieval_settings = RetrievalSettings()
