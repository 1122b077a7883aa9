"""Controlled exploration: a small share of searches shows, below the top results, a random
arrangement of the next results and of a few that rank just past the page.

Why: feedback can only reach what users are shown. Without exploration, a relevant passage ranked
11th is never seen, never used, and never earns the evidence that would lift it; and clicks on
what is shown say as much about its rank as about its relevance. An explored search draws the
results for ranks ``RETRIEVAL_EXPLORE_FROM``..k uniformly at random from its results at those
ranks plus the next ``RETRIEVAL_EXPLORE_POOL`` ones, so every such candidate is equally likely at
every explored rank: what users do with them there is evidence free of position bias. The ranks
above ``RETRIEVAL_EXPLORE_FROM`` (the top 3 by default) are never touched.

The trace records it all (see ``retrieval.models``): the search's ``exploration_share`` (the
chance it had of being explored), ``explored`` and ``exploration_seed`` (which reproduce the
arrangement with :func:`arrange`), and per shown result its displayed ``rank``, ``natural_rank``
(where its score put it) and ``explored`` (placed by the random draw).
"""

from __future__ import annotations

import random
import secrets
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from accounts.models import Project
from retrieval.conf import retrieval_settings
from retrieval.models import RetrievalProjectSettings

T = TypeVar("T")

# One generator per process for the per-search draws; reseeded from RETRIEVAL_EXPLORE_SEED when
# that is set (benchmarks and tests that want the same draws run after run), else from the OS.
_lock = threading.Lock()
_state: dict[str, object] = {"seed": None, "rng": None}


def share_for(*, project: Project | None) -> float:
    """The share of searches explored: the project's own setting if it has one, else the default."""
    if project is not None:
        own = (
            RetrievalProjectSettings.objects.filter(project=project).values_list("exploration_share", flat=True).first()
        )
        if own is not None:
            return float(own)
    return retrieval_settings.RETRIEVAL_EXPLORE_SHARE


def _draw() -> tuple[float, int]:
    """A uniform number (whether to explore) and a seed for the arrangement."""
    configured = retrieval_settings.RETRIEVAL_EXPLORE_SEED
    with _lock:
        if configured < 0:
            return random.random(), secrets.randbits(63)
        if _state["seed"] != configured or _state["rng"] is None:
            _state["seed"], _state["rng"] = configured, random.Random(configured)
        rng = _state["rng"]
        assert isinstance(rng, random.Random)
        return rng.random(), rng.getrandbits(63)


def reseed() -> None:
    """Start the configured seed's sequence of draws again (tests, benchmark phases)."""
    with _lock:
        _state["seed"], _state["rng"] = None, None


@dataclass(frozen=True)
class Plan:
    """What one search does: explore or not, with which seed, and how many results it must rank."""

    share: float
    explored: bool
    seed: int | None
    first: int  # the first rank exploration may fill (1-based)
    pool: int  # results past k it may show


def plan(*, project: Project | None, k: int) -> Plan:
    """Decide whether this search explores. A page with nothing below the protected top has
    nothing to explore."""
    share = share_for(project=project)
    first = retrieval_settings.RETRIEVAL_EXPLORE_FROM
    pool = retrieval_settings.RETRIEVAL_EXPLORE_POOL
    if share <= 0.0 or k < first:
        return Plan(share=share, explored=False, seed=None, first=first, pool=0)
    coin, seed = _draw()
    if coin >= share:
        return Plan(share=share, explored=False, seed=None, first=first, pool=0)
    return Plan(share=share, explored=True, seed=seed, first=first, pool=pool)


def arrange(ranked: Sequence[T], *, k: int, first: int, seed: int) -> list[tuple[T, int, bool]]:
    """The page an explored search shows: ``ranked`` (in score order, possibly longer than k) as
    (item, natural rank, explored) for displayed ranks 1..k. Ranks before ``first`` stay as
    ranked; ranks ``first``..k are a uniform random draw, without replacement, from the items
    ranked ``first``..len(ranked). Deterministic in ``seed``."""
    head = [(item, rank, False) for rank, item in enumerate(ranked[: first - 1], start=1)]
    candidates = list(enumerate(ranked[first - 1 :], start=first))
    slots = max(0, min(k, len(ranked)) - len(head))
    chosen = random.Random(seed).sample(candidates, slots) if slots else []
    return head + [(item, rank, True) for rank, item in chosen]
