"""The retrieval scanner: search-trace evidence becomes retrieval-weight candidates.

Users look at the top results far more than at the rest, so raw counts of marks mostly say where a
result was shown. The scan instead estimates, per chunk and *query neighbourhood* (the query's
content words, ``retrieval.scope.query_terms``), how relevant the chunk is once examined:

* **position bias**: a result at rank r is examined with propensity p(r) = (1/r)^eta. eta is the
  posterior mean given the click-through of results exploration placed at random ranks (the
  ``explored`` traces) and a normal prior N(RETRIEVAL_SCAN_PRIOR_ETA, RETRIEVAL_SCAN_PRIOR_ETA_SD²):
  a few dozen explored clicks move it little, thousands decide it. Propensities are clipped at
  RETRIEVAL_SCAN_MIN_PROPENSITY. The estimate, its spread and the clicks behind it are in the report
  and in every proposal. A penalty is judged with eta one posterior standard deviation higher, a boost
  with it one lower: each must hold across the central credible interval (see ``_query_decisions``).
* **evidence** counts only searches that got feedback (any mark on any of their results): there,
  a result shown at rank r and not used counts p(r) examinations without a use (a skip high up is
  strong negative evidence, one far down hardly any), a used one p(r) examinations and one use, an
  explicit outcome RETRIEVAL_SCAN_EXPLICIT_WEIGHT examinations (the user certainly looked): helpful
  (also: used in an answer voted up) as uses, unhelpful or unsupported (also: used in an answer voted
  down) as non-uses.
* **relevance** (the chance a chunk is used once looked at, in a neighbourhood) is estimated by
  empirical Bayes: a prior fitted on all the window's (chunk, neighbourhood) groups — how relevance
  is spread over them; in most windows most results shown are rarely used and a few often — updated
  by the group's own uses and expected examinations. Where most results go unused, a few skips
  already say much; where a group has little evidence, the prior keeps it near the population.
* a **boost** when the posterior probability that the chunk beats the neighbourhood's baseline (its
  uses / examinations over all its chunks, shrunk toward the global rate) by RETRIEVAL_SCAN_MIN_LIFT
  is at least RETRIEVAL_SCAN_CONFIDENCE, with at least RETRIEVAL_SCAN_MIN_SUPPORT uses and
  RETRIEVAL_SCAN_MIN_EFFECTIVE examinations, unless the chunk is already at rank 1 for the
  neighbourhood's queries (a boost would change nothing); a **penalty** when it is that sure the chunk
  trails by that factor the baseline or the window's global rate, whichever is higher (where nobody
  uses anything the baseline is near zero, yet a result looked at and never used is still worse than
  results usually are, and demoting it is what makes room for the results below). The multiplier
  is the posterior mean over that reference, within the weight bounds. A contrary mark is evidence
  like any other: it lowers the estimate, it blocks nothing, and a result relevant on balance is not
  penalised.
* **stale** content is penalised everywhere and **wrong-project** content within that project when
  such marks reach RETRIEVAL_SCAN_MIN_PROBLEM_MARKS and outweigh the chunk's uses (the Wilson lower bound
  of their share, at RETRIEVAL_SCAN_CONFIDENCE, above one half).

One open candidate per chunk: a chunk's neighbourhoods that agree make one query-scoped weight
anchored on their queries (the stronger direction wins when they disagree). The evidence, the
thresholds, the propensity model and the relevance prior are in ``proposed_learning["evidence"]``.

The scan reads the trace rollups (``retrieval.rollups``), refreshed incrementally first, and keeps
its judgement of each neighbourhood (``RetrievalScanJudgement``): a scan re-judges only the
neighbourhoods whose rollups changed since the last one, under the reference the stored judgements
were made with (propensity, global rates, relevance priors), and everything when a fresh fit of that
reference has moved by more than RETRIEVAL_SCAN_REJUDGE_TOLERANCE (see ``_judgements``). Stale and
wrong-project decisions are recomputed every scan (cheaply: only chunks with such marks are read).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from dataclasses import asdict, dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np
from django.db import connection, transaction
from django.db.models import F, QuerySet, Sum, TextField, Value, Window
from django.db.models.functions import Cast, Mod, RowNumber

from accounts.actors import Actor
from accounts.models import Project
from core.db import rows_insert
from promotions.conf import promotions_settings
from promotions.models import (
    OPEN_STATUSES,
    LearningPromotion,
    PromotionStatus,
    RetrievalScanJudgement,
    RetrievalScanState,
)
from promotions.services import Proposal, promotions_propose_bulk
from retrieval.conf import clamp_multiplier, retrieval_settings
from retrieval.models import Chunk, RetrievalFeedback, TraceRollup, TraceRollupState
from retrieval.rollups import neighbourhood, trace_rollups_changed, trace_rollups_refresh

# The scanner's own choice of the mildest change worth proposing: a penalty lowers a weight by at
# least 5%, a boost raises it by at least 5% (the outer bounds are retrieval's WEIGHT_MIN/WEIGHT_MAX).
MILDEST_PENALTY = 0.95
MILDEST_BOOST = 1.05
# A chunk shown at rank 1 in this share of its neighbourhood's (unexplored) searches is already first.
AT_TOP = 0.8
ETA_GRID = [i / 50 for i in range(0, 151)]  # 0 .. 3


@dataclass
class ScanReport:
    groups: int = 0
    boosts: int = 0
    penalties: int = 0
    skipped_open: int = 0
    skipped_decided: int = 0  # the same change is already applied (or paused), or was rejected on as much evidence
    already_first: int = 0  # boosts not proposed: the chunk is already at rank 1 there
    propensity: dict[str, Any] = field(default_factory=dict)
    relevance_prior: dict[str, Any] = field(default_factory=dict)
    rollups: dict[str, Any] = field(default_factory=dict)
    # How the judgements were brought up to date: "full", "incremental" (the neighbourhoods changed)
    # or "unchanged", why, and how far a fresh fit had moved from the reference (see _judgements).
    judged: dict[str, Any] = field(default_factory=dict)


@dataclass
class Propensity:
    """Examination probability by displayed rank: p(r) = max(floor, (1/r)^eta)."""

    eta: float
    source: str  # "prior" (no explored clicks) or "exploration" (the prior updated by explored clicks)
    explored: int  # explored results with feedback behind the estimate
    floor: float
    sd: float = 0.0  # the posterior standard deviation of eta
    clicks: int = 0  # uses among the explored results

    def at(self, rank: int) -> float:
        return max(self.floor, float(rank) ** -self.eta)

    def shifted(self, by: float) -> Propensity:
        """The same model with eta moved by ``by`` (never below 0)."""
        return Propensity(max(0.0, self.eta + by), self.source, self.explored, self.floor, sd=0.0, clicks=self.clicks)

    def describe(self) -> dict[str, Any]:
        return {
            "model": "(1/rank)^eta",
            "eta": round(self.eta, 3),
            "eta_sd": round(self.sd, 3),
            "source": self.source,
            "explored": self.explored,
            "explored_clicks": self.clicks,
        }


def wilson(successes: float, n: float, z: float) -> tuple[float, float]:
    """Wilson score bounds of a proportion from a (possibly fractional) sample of size n."""
    if n <= 0:
        return 0.0, 1.0
    p = min(1.0, max(0.0, successes / n))
    denominator = 1 + z * z / n
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, (centre - spread) / denominator), min(1.0, (centre + spread) / denominator)


def propensity_estimate() -> Propensity:
    """The posterior mean of eta given the click-through of explored results by rank (randomised
    placement makes the relevance behind each rank the same, so click-through falls with rank only
    by examination) and a normal prior N(RETRIEVAL_SCAN_PRIOR_ETA, RETRIEVAL_SCAN_PRIOR_ETA_SD²).

    The information about eta is in the clicks, not in the results shown: a few dozen clicks leave
    the likelihood nearly flat (a maximum-likelihood fit then lands anywhere on the grid: 13 clicks
    once gave 2.76 where users examined as 1/r), so the estimate moves from the prior only as far
    as the clicks carry it. The average relevance of the explored results (the scale) is profiled
    out."""
    conf = promotions_settings
    engaged = F("skipped") + F("clicked") + F("helpful") + F("unhelpful") + F("unsupported")
    by_rank = {
        row["rank"]: (row["n"] or 0, row["c"] or 0)
        for row in TraceRollup.objects.filter(explored=True)
        .values("rank")
        .annotate(n=Sum(engaged), c=Sum(F("clicked") + F("helpful")))
        .order_by()
    }
    total = sum(n for n, _ in by_rank.values())
    clicks = sum(c for _, c in by_rank.values())
    mean, sd, floor = (
        conf.RETRIEVAL_SCAN_PRIOR_ETA,
        conf.RETRIEVAL_SCAN_PRIOR_ETA_SD,
        conf.RETRIEVAL_SCAN_MIN_PROPENSITY,
    )
    if clicks == 0 or len([r for r, (n, _) in by_rank.items() if n > 0]) < 2:
        return Propensity(mean, "prior", total, floor, sd=sd, clicks=clicks)
    log_posterior = []
    for eta in ETA_GRID:
        scale = clicks / sum(n * r**-eta for r, (n, _) in by_rank.items())
        ll = -((eta - mean) ** 2) / (2 * sd * sd)
        for r, (n, c) in by_rank.items():
            q = min(1 - 1e-9, scale * r**-eta)
            ll += c * math.log(q) + (n - c) * math.log(1 - q)
        log_posterior.append(ll)
    top = max(log_posterior)
    weights = [math.exp(ll - top) for ll in log_posterior]
    norm = sum(weights)
    eta = sum(e * w for e, w in zip(ETA_GRID, weights, strict=True)) / norm
    spread = math.sqrt(sum((e - eta) ** 2 * w for e, w in zip(ETA_GRID, weights, strict=True)) / norm)
    return Propensity(eta, "exploration", total, floor, sd=spread, clicks=clicks)


GRID = (np.arange(100) + 0.5) / 100  # relevance values the prior puts its mass on
PRIOR_FIT_GROUPS = 5_000  # groups the prior is fitted on, about (a deterministic sample of a larger window)
PRIOR_FIT_ROUNDS = 200
# The judging rule's version: judgements stored under another are redone (with the settings, in the
# reference's fingerprint).
JUDGING = 2  # 2: a penalty is measured against the higher of the baseline and the global rate


def _log_likelihood(used: Any, examined: Any) -> np.ndarray:
    """log P(``used`` uses in ``examined`` expected examinations | relevance) at every GRID point, the
    binomial kernel with fractional counts (scalars, or column vectors for many groups at once)."""
    return used * np.log(GRID) + (examined - used) * np.log1p(-GRID)


@dataclass
class RelevancePrior:
    """Empirical Bayes: how relevant a chunk is to a neighbourhood before its own evidence is seen,
    a distribution over GRID fitted on all the window's groups (the nonparametric maximum-likelihood
    prior of Kiefer and Wolfowitz, by EM), blended with a uniform prior worth
    RETRIEVAL_SCAN_PRIOR_GROUPS groups so that a small window does not overrule a group's own evidence."""

    weights: np.ndarray
    fitted_on: int  # groups with evidence

    def posterior(self, used: float, examined: float) -> np.ndarray:
        """The posterior over GRID after ``used`` uses in ``examined`` expected examinations (uses
        capped at the examinations: an inverse-propensity count above them is certainty, not more)."""
        used = min(max(used, 0.0), examined)
        log = _log_likelihood(used, examined) + np.log(self.weights)
        p = np.exp(log - log.max())
        return p / p.sum()

    def describe(self) -> dict[str, Any]:
        mean = float(GRID @ self.weights)
        return {
            "model": "nonparametric empirical Bayes (EM on a grid of 100), blended with a uniform prior",
            "mean": round(mean, 4),
            "below_0.1": round(float(self.weights[GRID < 0.1].sum()), 3),
            "above_0.3": round(float(self.weights[GRID > 0.3].sum()), 3),
            "fitted_on": self.fitted_on,
        }


def _fit_prior(used: np.ndarray, examined: np.ndarray) -> RelevancePrior:
    """EM on the mixing weights of GRID, over the groups with evidence, in the order given."""
    keep = examined > 0
    u, e = np.minimum(used[keep], examined[keep])[:, None], examined[keep][:, None]
    uniform = np.full(len(GRID), 1 / len(GRID))
    if not len(e):
        return RelevancePrior(uniform, 0)
    likelihood = np.exp(_log_likelihood(u, e))  # groups x grid
    w = uniform.copy()
    for _ in range(PRIOR_FIT_ROUNDS):
        joint = likelihood * w
        w = (joint / joint.sum(axis=1, keepdims=True)).mean(axis=0)
    n, pseudo = len(e), promotions_settings.RETRIEVAL_SCAN_PRIOR_GROUPS
    return RelevancePrior((n * w + pseudo * uniform) / (n + pseudo), n)


def relevance_prior(groups: list[dict[str, Any]]) -> RelevancePrior:
    """Fit the prior to the groups' (uses, examinations): EM on the mixing weights of GRID. The scan
    passes a sample of a large window (``_modulus``)."""
    used = np.array([float(g["used"] or 0.0) for g in groups])
    examined = np.array([float(g["examined"]) for g in groups])
    return _fit_prior(used, examined)


def _modulus(groups_with_evidence: int) -> int:
    """The prior is fitted on the groups of the chunks whose id is a multiple of this: every group of
    a window of up to PRIOR_FIT_GROUPS, about that many of a larger one. A sample by chunk id is the
    same whichever rows are read with it and moves little as the window does (a random draw of
    positions in the list of groups changed wholesale with one group more)."""
    return max(1, math.ceil(groups_with_evidence / PRIOR_FIT_GROUPS))


def _quantiles(posteriors: np.ndarray, q: float) -> np.ndarray:
    """The q-quantile of each row of ``posteriors`` (over GRID, each point's mass spread evenly over its cell)."""
    cdf = np.cumsum(posteriors, axis=1)
    cell = np.minimum((cdf < q).sum(axis=1), len(GRID) - 1)
    rows = np.arange(len(posteriors))
    before = np.where(cell > 0, cdf[rows, np.maximum(cell - 1, 0)], 0.0)
    inside = np.clip((q - before) / np.maximum(posteriors[rows, cell], 1e-300), 0.0, 1.0)
    return (cell + inside) / len(GRID)


def _summaries(prior: RelevancePrior, used: np.ndarray, examined: np.ndarray, confidence: float) -> np.ndarray:
    """Per group: the posterior's lower quantile, upper quantile and mean, computed in blocks (a
    window may hold hundreds of thousands of groups). Row by row, so a group's figures do not depend
    on the groups computed with it."""
    out = np.zeros((len(used), 3))
    log_prior = np.log(prior.weights)
    for start in range(0, len(used), 20_000):
        e = examined[start : start + 20_000, None]
        u = np.minimum(np.maximum(used[start : start + 20_000, None], 0.0), e)
        log = _log_likelihood(u, e) + log_prior
        post = np.exp(log - log.max(axis=1, keepdims=True))
        post /= post.sum(axis=1, keepdims=True)
        out[start : start + len(e), 0] = _quantiles(post, 1 - confidence)
        out[start : start + len(e), 1] = _quantiles(post, confidence)
        out[start : start + len(e), 2] = (post * GRID).sum(axis=1)
    return out


_ROLLUP_ROW = (
    *("chunk_id", "project_id", "terms", "rank", "explored"),
    *("shown", "skipped", "clicked", "helpful", "unhelpful", "unsupported"),
)


@dataclass
class _Evidence:
    """The rollups' integer counts per (chunk, project, neighbourhood) group, the groups in a fixed
    order (by neighbourhood, then chunk). The estimator's float terms are computed from them one
    column at a time, so that a group's figures are the same whichever other groups were read."""

    keys: list[tuple[int, int | None, str]]
    by_rank: np.ndarray  # groups x (K + 1): skipped + clicked at ranks 1..K, then at any other rank
    counts: dict[str, np.ndarray]

    def examined(self, propensity: Propensity, weight: float) -> np.ndarray:
        """Expected examinations: p(rank) per skip or click, ``weight`` per explicit outcome."""
        out = weight * self.counts["explicit"].astype(float)
        k = self.by_rank.shape[1] - 1
        for j, p in enumerate([propensity.at(r) for r in range(1, k + 1)] + [propensity.floor]):
            out = out + self.by_rank[:, j] * p
        return out

    def used(self, weight: float) -> np.ndarray:
        return self.counts["clicked"] + weight * self.counts["helpful"].astype(float)

    def sample(self, modulus: int) -> _Evidence:
        """The groups of the chunks whose id is a multiple of ``modulus`` (still in group order): what
        reading only those chunks' rollups gives, without reading them again."""
        at = [i for i, (chunk_id, _, _) in enumerate(self.keys) if chunk_id % modulus == 0]
        return _Evidence([self.keys[i] for i in at], self.by_rank[at], {k: v[at] for k, v in self.counts.items()})


def _group_order(key: tuple[int, int | None, str]) -> tuple[str, int, int]:
    return key[2], -1 if key[1] is None else key[1], key[0]


def _evidence(*querysets: QuerySet, only: set[tuple[int | None, str]] | None = None) -> _Evidence:
    """The groups of these rollup rows, or of those in the neighbourhoods ``only``. The rows are read
    through a plain cursor and summed per group by numpy (a window at ten million traces holds about
    half a million rollup rows: read through the ORM and summed in Python they cost seconds); the
    sums are integers, and the groups are put in ``_group_order``."""
    k = retrieval_settings.RETRIEVAL_MAX_K
    found: list[tuple] = []
    with connection.cursor() as cursor:
        for rows in querysets:
            sql, params = rows.order_by().values_list(*_ROLLUP_ROW).query.sql_with_params()
            cursor.execute(sql, params)
            found.extend(cursor.fetchall())
    chunk, project, terms, *numbers = zip(*found, strict=True) if found else [()] * len(_ROLLUP_ROW)
    # Neighbourhoods by their place in Python's order of strings: groups sort as _group_order does.
    names = sorted(set(terms))
    place = {name: i for i, name in enumerate(names)}
    columns = np.array(
        [
            chunk,
            [-1 if p is None else p for p in project],
            [place[t] for t in terms],
            *numbers,
        ],
        dtype=np.int64,
    ).reshape(len(_ROLLUP_ROW), len(found))
    if only is not None:
        wanted = {(-1 if p is None else p, place[t]) for p, t in only if t in place}
        keep = np.array([(p, t) in wanted for p, t in zip(columns[1].tolist(), columns[2].tolist(), strict=True)])
        columns = columns[:, keep] if len(found) else columns
    order = np.lexsort((columns[0], columns[1], columns[2]))
    columns = columns[:, order]
    chunk_of, project_of, terms_of = columns[:3]
    starts = np.ones(columns.shape[1], dtype=bool)
    starts[1:] = (np.diff(chunk_of) != 0) | (np.diff(project_of) != 0) | (np.diff(terms_of) != 0)
    group = np.cumsum(starts) - 1
    keys = [
        (c, None if p == -1 else p, names[t])
        for c, p, t in zip(
            chunk_of[starts].tolist(), project_of[starts].tolist(), terms_of[starts].tolist(), strict=True
        )
    ]
    rank, _explored, _shown, skipped, clicked, *_ = columns[3:]
    first_rows = np.flatnonzero(starts)

    def total(column: np.ndarray) -> np.ndarray:
        # The rows are in group order: each group's rows are one run.
        return np.add.reduceat(column, first_rows) if len(first_rows) else np.zeros(0, dtype=np.int64)

    cells = group * (k + 1) + np.where((rank >= 1) & (rank <= k), rank - 1, k)
    # Integer counts as float64 weights: exact (they are far below 2**53).
    by_rank = np.rint(np.bincount(cells, weights=skipped + clicked, minlength=len(keys) * (k + 1)))
    by_rank = by_rank.astype(np.int64).reshape(len(keys), k + 1)
    counts = evidence_counts(total, columns[3:])
    return _Evidence(keys, by_rank, counts)


def evidence_counts(total: Callable[[np.ndarray], np.ndarray], columns: np.ndarray) -> dict[str, np.ndarray]:
    """What a group's evidence counts, from the rollup rows' numeric columns (``_ROLLUP_ROW`` after the
    group key, one array each) and ``total``, which sums a per-row array per group."""
    rank, explored, shown, skipped, clicked, helpful, unhelpful, unsupported = columns
    natural = np.where(explored == 0, shown, 0)
    return {
        "explicit": total(helpful + unhelpful + unsupported),
        "clicked": total(clicked),
        "helpful": total(helpful),
        "shown": total(shown),
        "positives": total(clicked + helpful),
        "negatives": total(unhelpful + unsupported),
        "skips": total(skipped),
        "first": total(np.where(rank == 1, natural, 0)),
        "natural": total(natural),
    }


def _settings_fingerprint() -> str:
    """The settings a judgement depends on (each read once: every read of a setting is checked)."""
    conf = promotions_settings
    values = [
        JUDGING,
        PRIOR_FIT_GROUPS,
        conf.RETRIEVAL_SCAN_MIN_EFFECTIVE,
        conf.RETRIEVAL_SCAN_MIN_SUPPORT,
        conf.RETRIEVAL_SCAN_CONFIDENCE,
        conf.RETRIEVAL_SCAN_MIN_LIFT,
        conf.RETRIEVAL_SCAN_EXPLICIT_WEIGHT,
        conf.RETRIEVAL_SCAN_MIN_PROPENSITY,
        conf.RETRIEVAL_SCAN_PRIOR_GROUPS,
        conf.RETRIEVAL_SCAN_PRIOR_ETA,
        conf.RETRIEVAL_SCAN_PRIOR_ETA_SD,
        conf.RETRIEVAL_SCAN_PRIOR,
        retrieval_settings.RETRIEVAL_MAX_K,
        clamp_multiplier(0.0),
        clamp_multiplier(1e9),
    ]
    return hashlib.blake2b(repr(values).encode(), digest_size=16).hexdigest()


@dataclass
class _Reference:
    """What every group is judged under, fitted on the whole window: the propensity model (a penalty
    judged with eta one spread higher, a boost one lower), per model the global rate (uses per
    examination) and the relevance prior, the prior's sample (chunk ids that are multiples of
    ``modulus``) and the settings. Kept with the judgements: a group is re-judged only when its
    neighbourhood's rollups change, under this same reference, until a fresh fit moves too far."""

    propensity: Propensity
    rates: list[float]
    priors: list[RelevancePrior]
    modulus: int
    settings: str

    def models(self) -> list[Propensity]:
        """The models boosts and penalties are judged with (one when eta has no spread)."""
        p = self.propensity
        return [p.shifted(-p.sd), p.shifted(p.sd)] if p.sd > 0 else [p]

    def to_json(self) -> dict[str, Any]:
        return {
            "propensity": asdict(self.propensity),
            "rates": self.rates,
            "priors": [{"weights": [float(w) for w in p.weights], "fitted_on": p.fitted_on} for p in self.priors],
            "modulus": self.modulus,
            "settings": self.settings,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> _Reference | None:
        try:
            return cls(
                Propensity(**data["propensity"]),
                [float(r) for r in data["rates"]],
                [RelevancePrior(np.array(p["weights"], dtype=float), int(p["fitted_on"])) for p in data["priors"]],
                int(data["modulus"]),
                str(data["settings"]),
            )
        except (KeyError, TypeError, ValueError):
            return None  # none yet, or written by another version: judge everything

    def drift(self, fresh: _Reference) -> dict[str, float]:
        """How far a fresh fit has moved from this one: eta and its spread (absolute), the global rates
        (relative), the priors (the largest distance between their CDFs)."""
        if len(fresh.rates) != len(self.rates):
            return {"models": math.inf}
        return {
            "eta": abs(fresh.propensity.eta - self.propensity.eta),
            "eta_sd": abs(fresh.propensity.sd - self.propensity.sd),
            "rate": max(abs(a - b) / max(b, 1e-12) for a, b in zip(fresh.rates, self.rates, strict=True)),
            "prior": max(
                float(np.abs(np.cumsum(a.weights) - np.cumsum(b.weights)).max())
                for a, b in zip(fresh.priors, self.priors, strict=True)
            ),
        }


def _rates(models: list[Propensity], weight: float) -> list[float]:
    """Uses per expected examination over the whole window, per model: one small aggregate by rank."""
    by_rank = list(
        TraceRollup.objects.values("rank")
        .annotate(
            looked=Sum(F("skipped") + F("clicked")),
            explicit=Sum(F("helpful") + F("unhelpful") + F("unsupported")),
            clicked_n=Sum("clicked"),
            helpful_n=Sum("helpful"),
        )
        .order_by("rank")
    )
    k = retrieval_settings.RETRIEVAL_MAX_K
    used = sum((row["clicked_n"] or 0) + weight * (row["helpful_n"] or 0) for row in by_rank)
    rates = []
    for model in models:
        examined = sum(
            (model.at(row["rank"]) if 1 <= row["rank"] <= k else model.floor) * (row["looked"] or 0)
            + weight * (row["explicit"] or 0)
            for row in by_rank
        )
        rates.append(used / (examined or 1.0))
    return rates


def _window_modulus(evidence: _Evidence) -> int:
    """The prior's sample for a window of these groups (``_modulus`` of those with evidence)."""
    return _modulus(int(((evidence.by_rank.sum(axis=1) + evidence.counts["explicit"]) > 0).sum()))


def _reference(propensity: Propensity, *, modulus: int | None = None, evidence: _Evidence | None = None) -> _Reference:
    """Fit the reference on the window as it is now: the prior on the chunks in the sample of
    ``modulus`` (by default the one the window's size calls for, counted in ``evidence``), taken
    from ``evidence`` (the whole window) when given, else read."""
    weight = promotions_settings.RETRIEVAL_SCAN_EXPLICIT_WEIGHT
    models = (
        [propensity.shifted(-propensity.sd), propensity.shifted(propensity.sd)] if propensity.sd > 0 else [propensity]
    )
    if modulus is None:
        assert evidence is not None
        modulus = _window_modulus(evidence)
    if evidence is not None:
        sample = evidence.sample(modulus)
    else:
        sample_rows = TraceRollup.objects.all()
        if modulus > 1:
            sample_rows = sample_rows.alias(bucket=Mod("chunk_id", Value(modulus))).filter(bucket=0)
        sample = _evidence(sample_rows)
    used = sample.used(weight)
    priors = [_fit_prior(used, sample.examined(model, weight)) for model in models]
    return _Reference(propensity, _rates(models, weight), priors, modulus, _settings_fingerprint())


@dataclass
class Decision:
    chunk_id: int
    project_id: int | None
    kind: str  # helpful (a boost), unhelpful (a penalty), stale, wrong_project
    scope: str
    multiplier: float
    strength: float  # examinations behind it (which of a chunk's decisions wins)
    figures: list[dict[str, Any]]
    keys: list[str] = field(default_factory=list)


@dataclass
class _Verdict:
    """One neighbourhood's judgement: groups judged, boosts left out (already first), decisions."""

    groups: int = 0
    already_first: int = 0
    decisions: list[Decision] = field(default_factory=list)


def _figures(
    evidence: _Evidence, i: int, examined: float, used: float, summary: np.ndarray, baseline: float, eta: float
) -> dict:
    counts = evidence.counts
    return {
        "terms": evidence.keys[i][2].split(),
        "shown": int(counts["shown"][i]),
        "positives": int(counts["positives"][i]),
        "skips": int(counts["skips"][i]),
        "negatives": int(counts["negatives"][i]),
        "eta": round(eta, 3),
        "effective_examinations": round(examined, 3),
        "weighted_uses": round(used, 3),
        "relevance": round(min(1.0, used / examined), 4),
        "posterior_mean": round(float(summary[2]), 4),
        "lower": round(float(summary[0]), 4),
        "upper": round(float(summary[1]), 4),
        "baseline": round(baseline, 4),
        "at_rank_1": round(int(counts["first"][i]) / int(counts["natural"][i]), 3) if counts["natural"][i] else None,
    }


def _judge(evidence: _Evidence, reference: _Reference) -> dict[tuple[int | None, str], _Verdict]:
    """Boosts and penalties per (chunk, neighbourhood), for every neighbourhood in ``evidence`` (which
    must hold all of each one's groups: the baseline is the neighbourhood's uses over its examinations,
    shrunk toward the global rate; a penalty is measured against the higher of it and the global
    rate). eta is known only within its spread, and the error that matters differs by direction:
    examinations overestimated make skips look like evidence against a chunk, underestimated make
    uses look like more relevance than there is. So a penalty is judged with eta one posterior
    standard deviation higher (fewer examinations low on the page) and a boost with it
    one lower: each must hold across the central credible interval."""
    conf = promotions_settings
    weight, support, lift = (
        conf.RETRIEVAL_SCAN_EXPLICIT_WEIGHT,
        conf.RETRIEVAL_SCAN_MIN_SUPPORT,
        conf.RETRIEVAL_SCAN_MIN_LIFT,
    )
    min_effective, shrink, confidence = (
        conf.RETRIEVAL_SCAN_MIN_EFFECTIVE,
        conf.RETRIEVAL_SCAN_PRIOR,
        conf.RETRIEVAL_SCAN_CONFIDENCE,
    )
    neighbourhoods: dict[tuple[int | None, str], int] = {}
    of = np.array(
        [neighbourhoods.setdefault((key[1], key[2]), len(neighbourhoods)) for key in evidence.keys], dtype=np.int64
    )
    used = evidence.used(weight)
    judged_by: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    for model, rate, prior in zip(reference.models(), reference.rates, reference.priors, strict=True):
        examined = evidence.examined(model, weight)
        total_examined, total_used = np.zeros(len(neighbourhoods)), np.zeros(len(neighbourhoods))
        np.add.at(total_examined, of, examined)
        np.add.at(total_used, of, used)
        baseline = (total_used + shrink * rate) / (total_examined + shrink)
        judged = examined >= min_effective
        summaries = np.zeros((len(examined), 3))
        at = np.flatnonzero(judged)
        summaries[at] = _summaries(prior, used[at], examined[at], confidence)
        # A penalty is measured against the neighbourhood's baseline or the window's rate, whichever is
        # higher: where nobody uses anything, a result looked at and never used still falls short of
        # what a result looked at usually gives, and demoting it makes room for the results below.
        judged_by.append((examined, baseline, judged, summaries, np.maximum(baseline, rate)))
    boosts, penalties = judged_by[0], judged_by[-1]
    eta, sd = reference.propensity.eta, reference.propensity.sd
    counts = evidence.counts
    verdicts: dict[tuple[int | None, str], _Verdict] = {}
    for i in (int(i) for i in np.flatnonzero(boosts[2] | penalties[2])):
        chunk_id, project_id, terms = evidence.keys[i]
        verdict = verdicts.setdefault((project_id, terms), _Verdict())
        verdict.groups += 1
        decision = None
        examined, baseline, judged, summaries, _ = boosts
        if judged[i] and baseline[of[i]] > 0:
            lower, _, mean = summaries[i]
            # Relevant on balance: its uses outweigh the explicit verdicts against it (skips aside).
            on_balance = used[i] > weight * counts["negatives"][i]
            if on_balance and lower >= lift * baseline[of[i]] and counts["positives"][i] >= support:
                if counts["natural"][i] and counts["first"][i] >= AT_TOP * counts["natural"][i]:
                    verdict.already_first += 1
                    continue
                # The posterior mean relevance over the neighbourhood's average: the multiplier.
                multiplier = max(MILDEST_BOOST, clamp_multiplier(mean / baseline[of[i]]))
                figures = _figures(evidence, i, examined[i], used[i], summaries[i], baseline[of[i]], eta - sd)
                decision = ("helpful", multiplier, float(examined[i]), figures)
        examined, _, judged, summaries, baseline = penalties
        if decision is None and judged[i] and baseline[of[i]] > 0:
            upper, mean = summaries[i][1], summaries[i][2]
            if (
                upper * lift <= baseline[of[i]]
                and used[i] <= examined[i] / 2  # never penalise a result used at least as often as not
                and counts["skips"][i] + counts["negatives"][i] >= support
            ):
                multiplier = min(MILDEST_PENALTY, clamp_multiplier(mean / baseline[of[i]]))
                figures = _figures(evidence, i, examined[i], used[i], summaries[i], baseline[of[i]], eta + sd)
                decision = ("unhelpful", multiplier, float(examined[i]), figures)
        if decision is not None:
            kind, multiplier, strength, figures = decision
            verdict.decisions.append(
                Decision(chunk_id, project_id, kind, "query", float(multiplier), strength, [figures], keys=[terms])
            )
    return verdicts


def _query_decisions(propensity: Propensity, report: ScanReport) -> list[Decision]:
    """Judge every neighbourhood of the window from scratch under ``propensity`` (a full judgement,
    nothing stored)."""
    evidence = _evidence(TraceRollup.objects.all())
    reference = _reference(propensity, evidence=evidence)
    verdicts = _judge(evidence, reference)
    _describe(report, reference)
    report.groups += sum(v.groups for v in verdicts.values())
    report.already_first += sum(v.already_first for v in verdicts.values())
    return _in_order(d for v in verdicts.values() for d in v.decisions)


def _in_order(decisions: Iterable[Decision]) -> list[Decision]:
    """By (chunk, project, neighbourhood): the order in which a chunk's decisions are merged."""
    return sorted(decisions, key=lambda d: str((d.chunk_id, d.project_id, d.keys[0])))


def _describe(report: ScanReport, reference: _Reference) -> None:
    report.propensity = reference.propensity.describe()
    priors = reference.priors
    report.relevance_prior = {"boosts": priors[0].describe(), "penalties": priors[-1].describe()}


def _ident(project_id: int | None, terms: str) -> str:
    return hashlib.blake2b(f"{project_id or ''}|{terms}".encode(), digest_size=20).hexdigest()


def _store(
    verdicts: dict[tuple[int | None, str], _Verdict], *, replacing: set[tuple[int | None, str]] | None
) -> list[Decision]:
    """Replace the stored judgements of the neighbourhoods ``replacing`` (None: all) with ``verdicts``;
    returns their decisions as ``_stored`` will read them back (decoded from the text written), so
    that the scan need not read back what it has just written."""
    if replacing is None:
        RetrievalScanJudgement.objects.all().delete()
    else:
        idents = sorted(_ident(*key) for key in replacing)
        for start in range(0, len(idents), 1000):
            RetrievalScanJudgement.objects.filter(ident__in=idents[start : start + 1000]).delete()
    rows = [
        (
            _ident(project_id, terms),
            project_id,
            terms,
            verdict.groups,
            verdict.already_first,
            len(verdict.decisions),
            json.dumps(
                [
                    {
                        "chunk": d.chunk_id,
                        "kind": d.kind,
                        "multiplier": d.multiplier,
                        "strength": d.strength,
                        "figures": d.figures[0],
                    }
                    for d in verdict.decisions
                ]
            ),
        )
        for (project_id, terms), verdict in verdicts.items()
    ]
    # Many rows a statement (``rows_insert``): a full judgement writes one per neighbourhood.
    rows_insert(
        table=RetrievalScanJudgement._meta.db_table,
        columns=("ident", "project_id", "terms", "groups", "already_first", "decided", "decisions"),
        types=("varchar", "bigint", "text", "integer", "integer", "integer", "jsonb"),
        rows=rows,
    )
    return [
        d for _, project_id, terms, _, _, decided, text in rows if decided for d in _decoded(project_id, terms, text)
    ]


def _decoded(project_id: int | None, terms: str, text: str | list[dict[str, Any]]) -> list[Decision]:
    """A stored judgement's decisions (its JSON, as text or decoded)."""
    found = json.loads(text) if isinstance(text, str) else text
    return [
        Decision(
            d["chunk"], project_id, d["kind"], "query", d["multiplier"], d["strength"], [d["figures"]], keys=[terms]
        )
        for d in found
    ]


def _stored(*, skipping: AbstractSet[tuple[int | None, str]] = frozenset()) -> list[Decision]:
    """Every stored boost and penalty, but those of the neighbourhoods ``skipping`` (read as text and
    decoded here, so that what is skipped is not decoded)."""
    idents = {_ident(*key) for key in skipping}
    rows = (
        RetrievalScanJudgement.objects.filter(decided__gt=0)
        .annotate(text=Cast("decisions", TextField()))
        .values_list("ident", "project_id", "terms", "text")
    )
    return _in_order(
        d for ident, project_id, terms, text in rows if ident not in idents for d in _decoded(project_id, terms, text)
    )


def _judgements(report: ScanReport) -> list[Decision]:
    """Bring the stored judgements up to date with the rollups and return every boost and penalty.

    The neighbourhoods whose rollups changed since the last scan (new traces, marks, erasure, rows
    leaving the window: ``trace_rollups_changed``) are re-judged under the stored reference; the
    others keep theirs, which are what a full judgement under that reference gives, since a group's
    judgement depends only on its neighbourhood's rollups and the reference. A fresh reference is fitted
    when something changed, and everything is re-judged under it when it has moved from the stored one
    by more than RETRIEVAL_SCAN_REJUDGE_TOLERANCE, the settings changed, the rollups were reset or this
    is the first scan. Under the scan state's lock: two scans never judge at once."""
    tolerance = promotions_settings.RETRIEVAL_SCAN_REJUDGE_TOLERANCE
    with transaction.atomic():
        RetrievalScanState.objects.get_or_create(pk=1)
        state = RetrievalScanState.objects.select_for_update().get(pk=1)
        generation, changed = trace_rollups_changed(since=state.generation)
        reference = _Reference.from_json(state.reference)
        judged: dict[str, Any] = {"generation": generation}
        rejudge_all = None
        fresh = None
        if reference is None:
            rejudge_all = "no judgement yet"
        elif changed is None:
            rejudge_all = "the rollups were rebuilt or reset"
        elif reference.settings != _settings_fingerprint():
            rejudge_all = "the settings changed"
        elif changed:
            fresh = _reference(propensity_estimate(), modulus=reference.modulus)
            drift = reference.drift(fresh)
            judged["drift"] = {k: round(v, 5) for k, v in drift.items()}
            limits = {"eta": tolerance, "eta_sd": tolerance, "rate": tolerance, "prior": tolerance}
            if any(v > limits.get(k, 0.0) for k, v in drift.items()):
                rejudge_all = "the fitted eta, global rate or prior moved"
        if rejudge_all:
            evidence = _evidence(TraceRollup.objects.all())
            if fresh is not None and fresh.modulus == _window_modulus(evidence):
                reference = fresh  # fitted just now on this window, with the sample its size calls for
            else:
                reference = _reference(propensity_estimate(), evidence=evidence)
            decisions = _in_order(_store(_judge(evidence, reference), replacing=None))
            judged.update(
                {"mode": "full", "reason": rejudge_all, "neighbourhoods": len({k[1:] for k in evidence.keys})}
            )
        elif changed:
            assert reference is not None
            evidence = _evidence_of(changed)
            judged_again = _store(_judge(evidence, reference), replacing=changed)
            # The others as stored; those just written as written (not read back).
            decisions = _in_order([*_stored(skipping=changed), *judged_again])
            judged.update({"mode": "incremental", "neighbourhoods": len(changed)})
        else:
            judged.update({"mode": "unchanged", "neighbourhoods": 0})
            decisions = _stored()
        assert reference is not None
        state.generation = generation
        state.reference = reference.to_json()
        state.save()
        totals = RetrievalScanJudgement.objects.aggregate(groups=Sum("groups"), already_first=Sum("already_first"))
    report.groups += totals["groups"] or 0
    report.already_first += totals["already_first"] or 0
    _describe(report, reference)
    report.judged = judged
    return decisions


def _evidence_of(neighbourhoods: set[tuple[int | None, str]]) -> _Evidence:
    """The groups of these neighbourhoods, all of each one's rows (read by terms, an index)."""
    terms = sorted({t for _, t in neighbourhoods})
    batches = [TraceRollup.objects.filter(terms__in=terms[i : i + 1000]) for i in range(0, len(terms), 1000)]
    return _evidence(*batches, only=neighbourhoods)


def _problem_decisions() -> list[Decision]:
    """Stale content (everywhere) and wrong-project content (within the project): marks of that kind
    that reach the support and outweigh the chunk's uses. The chunks with that many marks are found
    first among the rollups with any (few), then summed over all of theirs."""
    conf = promotions_settings
    support, z = conf.RETRIEVAL_SCAN_MIN_PROBLEM_MARKS, NormalDist().inv_cdf(conf.RETRIEVAL_SCAN_CONFIDENCE)
    decisions = []
    for kind, scope, by in (
        ("stale", "global", ("chunk_id",)),
        ("wrong_project", "project", ("chunk_id", "project_id")),
    ):
        marked = list(
            set(
                TraceRollup.objects.filter(**{f"{kind}__gt": 0})
                .values(*by)
                .annotate(marks=Sum(kind))
                .filter(marks__gte=support)
                .order_by()
                .values_list(*by)
            )
        )
        marked = sorted({row[0] for row in marked})
        for start in range(0, len(marked), 1000):
            for g in (
                TraceRollup.objects.filter(chunk_id__in=marked[start : start + 1000])
                .values(*by)
                .annotate(marks=Sum(kind), positives=Sum(F("clicked") + F("helpful")), shown_total=Sum("shown"))
                .filter(marks__gte=support)
                .order_by(*by)
            ):
                if scope == "project" and g["project_id"] is None:
                    continue
                lower, _ = wilson(g["marks"], g["marks"] + (g["positives"] or 0), z)
                if lower <= 0.5:
                    continue  # used about as often as marked: not stale / misplaced on balance
                share = g["marks"] / (g["marks"] + (g["positives"] or 0))
                multiplier = min(MILDEST_PENALTY, clamp_multiplier(1.0 - 0.5 * share))
                figures = {
                    "marks": g["marks"],
                    "positives": g["positives"],
                    "shown": g["shown_total"],
                    "share_lower": round(lower, 4),
                }
                decisions.append(
                    Decision(g["chunk_id"], g.get("project_id"), kind, scope, multiplier, float(g["marks"]), [figures])
                )
    return decisions


def _per_chunk(decisions: list[Decision]) -> list[Decision]:
    """One decision per chunk: a problem mark's (stale, then wrong project) over a query-scoped one;
    among a chunk's query-scoped decisions, those in the direction with more evidence, merged."""
    order = {"stale": 0, "wrong_project": 1}
    chosen: dict[int, Decision] = {}
    query: dict[tuple[int, int | None], list[Decision]] = defaultdict(list)
    for d in decisions:
        if d.scope == "query":
            query[(d.chunk_id, d.project_id)].append(d)
        elif d.chunk_id not in chosen or order[d.kind] < order[chosen[d.chunk_id].kind]:
            chosen[d.chunk_id] = d
    merged: dict[int, Decision] = {}
    for (chunk_id, project_id), found in query.items():
        if chunk_id in chosen:
            continue
        by_kind: dict[str, list[Decision]] = defaultdict(list)
        for d in found:
            by_kind[d.kind].append(d)
        kind, side = max(by_kind.items(), key=lambda item: sum(d.strength for d in item[1]))
        strength = sum(d.strength for d in side)
        log_multiplier = sum(d.strength * math.log(d.multiplier) for d in side) / strength
        candidate = Decision(
            chunk_id,
            project_id,
            kind,
            "query",
            math.exp(log_multiplier),
            strength,
            [f for d in side for f in d.figures],
            keys=[k for d in side for k in d.keys],
        )
        if chunk_id not in merged or candidate.strength > merged[chunk_id].strength:
            merged[chunk_id] = candidate
    return [*chosen.values(), *merged.values()]


# A query-scoped weight's anchors are picked among the newest results of its chunk in its project,
# this many, read for so many chunks at a time.
ANCHOR_RESULTS = 2000
ANCHOR_BATCH = 500


def _anchors(decisions: list[Decision], expired_id: int) -> dict[int, list[tuple[str, list[str]]]]:
    """For each query-scoped decision: up to RETRIEVAL_SCAN_MAX_ANCHORS distinct queries of its
    neighbourhoods among the chunk's ANCHOR_RESULTS newest results in its project (newest first), as
    (trace id, content words). One read per ANCHOR_BATCH chunks."""
    limit = promotions_settings.RETRIEVAL_SCAN_MAX_ANCHORS
    wanted = {(d.chunk_id, d.project_id): set(d.keys) for d in decisions if d.scope == "query"}
    found: dict[int, list[tuple[str, list[str]]]] = {chunk_id: [] for chunk_id, _ in wanted}
    seen: dict[tuple[int, int | None], set[str]] = defaultdict(set)
    chunks = sorted(found)
    for start in range(0, len(chunks), ANCHOR_BATCH):
        batch = set(chunks[start : start + ANCHOR_BATCH])
        pairs = [pair for pair in wanted if pair[0] in batch]
        for chunk_id, project_id, trace_id, text in _newest_results(pairs, expired_id):
            key = (chunk_id, project_id)
            if key not in wanted or len(found[chunk_id]) >= limit:
                continue
            normal = " ".join(text.lower().split())
            if normal in seen[key]:
                continue
            seen[key].add(normal)
            terms = neighbourhood(text)
            if terms in wanted[key]:
                found[chunk_id].append((str(trace_id), terms.split()))
    return found


def _newest_results(pairs: list[tuple[int, int | None]], expired_id: int) -> Iterable[tuple[int, int | None, Any, str]]:
    """(chunk id, project id, trace id, query text) of the ANCHOR_RESULTS newest results newer than
    ``expired_id`` of each (chunk, project) pair, by chunk, then project (no project last), newest
    first. On PostgreSQL only those pairs, and of each exact query text only its newest result (the
    older ones are the same query to ``_anchors``); elsewhere every result of the pairs' chunks in
    that window (``_anchors`` skips the rest)."""
    if connection.vendor != "postgresql":
        rows = (
            RetrievalFeedback.objects.filter(chunk_id__in={chunk_id for chunk_id, _ in pairs}, id__gt=expired_id)
            .annotate(
                newest=Window(RowNumber(), partition_by=[F("chunk_id"), F("project_id")], order_by=F("id").desc())
            )
            .filter(newest__lte=ANCHOR_RESULTS)
            .order_by("chunk_id", F("project_id").asc(nulls_last=True), "-id")
            .values_list("chunk_id", "project_id", "trace_id", "query_text")
        )
        return rows.iterator(chunk_size=5000)
    if not pairs:
        return []
    # Per pair, its newest results by a LIMIT on the (chunk_id, project_id, id) index walked backwards:
    # it reads ANCHOR_RESULTS entries and stops, where a window over the chunks sorted every result
    # they have (bench/search_scan.py, 10M trace rows, the first scan's 22,501 decisions: 57-71 s
    # before, 25 s so; the incremental scan's 520: 1.1-1.2 s, 0.5-0.6 s). "project_id = NULL" matches
    # nothing, so pairs without a project have their own branch ("IS NULL", which the index serves
    # too; ordering by project_id as well lets it give the order without a sort). DISTINCT ON keeps
    # the newest result of each exact text: about 2,400 rows per 500 chunks instead of 91,000.
    table = RetrievalFeedback._meta.db_table
    # Composed only of a table name and fixed SQL; values are parameters.
    newest = (
        'SELECT DISTINCT ON (n.query_text COLLATE "C") n.id, n.trace_id, n.query_text FROM ('  # noqa: S608
        f"SELECT f.id, f.trace_id, f.query_text FROM {table} f WHERE f.chunk_id = p.chunk_id AND f.project_id {{}} "
        "AND f.id > %s ORDER BY f.project_id DESC, f.id DESC LIMIT %s) n "
        'ORDER BY n.query_text COLLATE "C", n.id DESC'
    )
    sql = (
        "SELECT chunk_id, project_id, trace_id, query_text FROM ("  # noqa: S608
        "SELECT p.chunk_id, p.project_id, r.id, r.trace_id, r.query_text "
        "FROM unnest(%s::bigint[], %s::bigint[]) AS p (chunk_id, project_id) "
        f"CROSS JOIN LATERAL ({newest.format('= p.project_id')}) r "
        "UNION ALL SELECT p.chunk_id, NULL, r.id, r.trace_id, r.query_text "
        f"FROM unnest(%s::bigint[]) AS p (chunk_id) CROSS JOIN LATERAL ({newest.format('IS NULL')}) r"
        ") t ORDER BY chunk_id, project_id NULLS LAST, id DESC"
    )
    projects = [pair for pair in pairs if pair[1] is not None]
    params: list[Any] = [
        [chunk_id for chunk_id, _ in projects],
        [project_id for _, project_id in projects],
        expired_id,
        ANCHOR_RESULTS,
        [chunk_id for chunk_id, project_id in pairs if project_id is None],
        expired_id,
        ANCHOR_RESULTS,
    ]
    # The planner prices a pair at a couple of hundred results and picks a bitmap scan of the chunk's
    # index for the project-less pairs, which reads every result of the chunk, however many, and
    # sorts them. Walking the index newest first instead (same data, alternating runs, load 1.3-3.5):
    # 2M trace rows 3.0-3.1 -> 2.0-2.1 s; 10M, the first scan's decisions 31-35 -> 22-27 s, the 500 of
    # them with the most results (761-27,561 each) 5.8-7.3 -> 3.3-3.5 s. So bitmap scans are off for
    # this one statement only, and the setting is put back for whatever else the transaction runs.
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('enable_bitmapscan')")
        (bitmapscan,) = cursor.fetchone()
        cursor.execute("SELECT set_config('enable_bitmapscan', 'off', true)")
        cursor.execute(sql, params)
        rows = cursor.fetchall()
        cursor.execute("SELECT set_config('enable_bitmapscan', %s, true)", [bitmapscan])
    return rows


def _decided(*, chunk_ids: list[int]) -> dict[str, list[tuple[str, str, float]]]:
    """The decided retrieval-weight promotions of these chunks that still speak for them: applied or
    paused ones (their weight is in force or can be resumed) and rejected ones, as (status, reason,
    examinations behind it) per chunk. One query."""
    if not chunk_ids:
        return {}
    rows = LearningPromotion.objects.filter(
        promotion_type="retrieval_weight",
        subject_type="chunk",
        subject_id__in=[str(c) for c in chunk_ids],
        status__in=(PromotionStatus.APPLIED, PromotionStatus.PAUSED, PromotionStatus.REJECTED),
    ).values_list("subject_id", "status", "proposed_learning__reason", "proposed_learning__evidence")
    decided: dict[str, list[tuple[str, str, float]]] = {}
    for subject_id, status, reason, evidence in rows:
        strength = evidence.get("effective_examinations") if isinstance(evidence, dict) else None
        decided.setdefault(subject_id, []).append(
            (status, str(reason or ""), float(strength) if isinstance(strength, int | float) else 0.0)
        )
    return decided


def _already_decided(
    decision: Decision, decided: list[tuple[str, str, float]], *, renewal: float, min_effective: float
) -> bool:
    """A person (or the ledger) has already answered this change for this chunk: the same change is
    applied or paused, or was rejected and the evidence has not grown ``renewal``-fold
    (RETRIEVAL_SCAN_RENEWAL) since. A contrary change (a penalty for a boosted chunk) is still
    proposed: it is news."""
    for status, reason, strength in decided:
        if reason != decision.kind:
            continue
        if status != PromotionStatus.REJECTED:
            return True
        if decision.strength < renewal * max(strength, min_effective):
            return True
    return False


def retrieval_scan(*, actor: Actor | None = None) -> ScanReport:
    """Refresh the trace rollups, then propose retrieval-weight candidates from position-debiased
    evidence per chunk and query neighbourhood."""
    actor = actor or Actor.for_system()
    conf = promotions_settings
    report = ScanReport()
    refreshed = trace_rollups_refresh(days=conf.RETRIEVAL_SCAN_DAYS, settle_seconds=conf.RETRIEVAL_SCAN_SETTLE_SECONDS)
    report.rollups = asdict(refreshed)
    thresholds = {
        "min_effective_examinations": conf.RETRIEVAL_SCAN_MIN_EFFECTIVE,
        "min_support": conf.RETRIEVAL_SCAN_MIN_SUPPORT,
        "min_problem_marks": conf.RETRIEVAL_SCAN_MIN_PROBLEM_MARKS,
        "confidence": conf.RETRIEVAL_SCAN_CONFIDENCE,
        "min_lift": conf.RETRIEVAL_SCAN_MIN_LIFT,
        "explicit_weight": conf.RETRIEVAL_SCAN_EXPLICIT_WEIGHT,
        "min_propensity": conf.RETRIEVAL_SCAN_MIN_PROPENSITY,
        "prior_groups": conf.RETRIEVAL_SCAN_PRIOR_GROUPS,
    }
    decisions = _per_chunk([*_problem_decisions(), *_judgements(report)])

    open_subjects = set(
        LearningPromotion.objects.filter(promotion_type="retrieval_weight", status__in=OPEN_STATUSES).values_list(
            "subject_id", flat=True
        )
    )
    fresh = [d for d in decisions if str(d.chunk_id) not in open_subjects]
    report.skipped_open = len(decisions) - len(fresh)
    decided = _decided(chunk_ids=[d.chunk_id for d in fresh])
    renewal, min_effective = conf.RETRIEVAL_SCAN_RENEWAL, conf.RETRIEVAL_SCAN_MIN_EFFECTIVE
    undecided = [
        d
        for d in fresh
        if not _already_decided(d, decided.get(str(d.chunk_id), []), renewal=renewal, min_effective=min_effective)
    ]
    report.skipped_decided = len(fresh) - len(undecided)
    fresh = undecided
    state = TraceRollupState.objects.filter(pk=1).first()
    anchors = _anchors(fresh, state.expired_id if state else 0)
    documents = dict(Chunk.objects.filter(pk__in=[d.chunk_id for d in fresh]).values_list("pk", "document_id"))
    projects = Project.objects.in_bulk({d.project_id for d in fresh if d.project_id})
    candidates = []
    for d in fresh:
        if d.chunk_id not in documents:
            continue  # deleted since the rollups were read
        project = projects.get(d.project_id) if d.project_id else None
        learning: dict[str, Any] = {
            "chunk": d.chunk_id,
            "document": documents[d.chunk_id],
            "multiplier": round(d.multiplier, 4),
            "scope": d.scope,
            "project": project.slug if (project and d.scope == "project") else None,
            "reason": d.kind,
            "evidence": {
                "estimator": (
                    "uses in expected examinations (inverse propensity), posterior under an empirical-Bayes prior"
                    if d.scope == "query"
                    else "share of the verdicts, Wilson bound"
                ),
                "propensity": report.propensity,
                "relevance_prior": report.relevance_prior,
                "thresholds": thresholds,
                "shown": sum(f.get("shown") or 0 for f in d.figures),
                "positives": sum(f.get("positives") or 0 for f in d.figures),
                "problems": sum((f.get("negatives") or 0) + (f.get("marks") or 0) for f in d.figures),
                "effective_examinations": round(d.strength, 3),
                "neighbourhoods": d.figures[:20],
            },
        }
        if d.scope == "query":
            kept = anchors.get(d.chunk_id) or []
            if not kept:
                continue  # its queries were erased meanwhile: nothing to anchor the weight on
            learning.update(
                {
                    "anchor_traces": [trace for trace, _ in kept],
                    "anchor_terms": [terms for _, terms in kept],
                    "min_similarity": conf.RETRIEVAL_SCAN_MIN_NEIGHBOURHOOD,
                }
            )
        candidates.append(
            Proposal(
                subject_id=str(d.chunk_id),
                proposed_learning=learning,
                confidence=round(1 - 1 / (1 + d.strength / conf.RETRIEVAL_SCAN_MIN_EFFECTIVE), 3),
                risk_level="low" if d.kind in ("helpful", "stale") else "medium",
                project=project,
            )
        )
    opened = promotions_propose_bulk(
        actor=actor, promotion_type="retrieval_weight", subject_type="chunk", proposals=candidates
    )
    report.skipped_open += len(candidates) - len(opened)
    for promotion in opened:
        if promotion.proposed_learning["reason"] == "helpful":
            report.boosts += 1
        else:
            report.penalties += 1
    return report
