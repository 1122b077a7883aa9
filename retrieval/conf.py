"""Retrieval's tunables, typed and range-checked (see ``core.conf``)."""

from __future__ import annotations

from typing import Final

from core.conf import AppSettings

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


retrieval_settings = RetrievalSettings()
