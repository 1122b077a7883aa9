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
  as uses, unhelpful or unsupported (also: used in an answer voted down) as non-uses.
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
  trails the baseline by that factor. The multiplier is the posterior mean over the baseline, within
  the weight bounds. A contrary mark is evidence like any other: it lowers the estimate, it blocks
  nothing, and a result relevant on balance is not penalised.
* **stale** content is penalised everywhere and **wrong-project** content within that project when
  such marks reach RETRIEVAL_SCAN_MIN_SUPPORT and outweigh the chunk's uses (the Wilson lower bound
  of their share, at RETRIEVAL_SCAN_CONFIDENCE, above one half).

One open candidate per chunk: a chunk's neighbourhoods that agree make one query-scoped weight
anchored on their queries (the stronger direction wins when they disagree). The evidence, the
thresholds, the propensity model and the relevance prior are in ``proposed_learning["evidence"]``.

The scan reads the trace rollups (``retrieval.rollups``), refreshed incrementally first.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np
from django.db.models import Case, F, FloatField, IntegerField, Sum, Value, When

from accounts.actors import Actor
from accounts.models import Project
from promotions.conf import promotions_settings
from promotions.models import OPEN_STATUSES, LearningPromotion, PromotionStatus
from promotions.services import Proposal, promotions_propose_bulk
from retrieval.conf import clamp_multiplier, retrieval_settings
from retrieval.models import Chunk, RetrievalFeedback, TraceRollup, TraceRollupState
from retrieval.rollups import neighbourhood, trace_rollups_refresh

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
PRIOR_FIT_GROUPS = 5_000  # groups the prior is fitted on at most (a deterministic sample of a larger window)
PRIOR_FIT_ROUNDS = 200


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


def relevance_prior(groups: list[dict[str, Any]]) -> RelevancePrior:
    """Fit the prior to the groups' (uses, examinations): EM on the mixing weights of GRID."""
    rows = np.array([(min(g["used"] or 0.0, g["examined"]), g["examined"]) for g in groups if g["examined"] > 0])
    uniform = np.full(len(GRID), 1 / len(GRID))
    if not len(rows):
        return RelevancePrior(uniform, 0)
    if len(rows) > PRIOR_FIT_GROUPS:
        rows = rows[np.random.default_rng(0).choice(len(rows), PRIOR_FIT_GROUPS, replace=False)]
    u, e = rows[:, :1], rows[:, 1:]
    likelihood = np.exp(_log_likelihood(u, e))  # groups x grid
    w = uniform.copy()
    for _ in range(PRIOR_FIT_ROUNDS):
        joint = likelihood * w
        w = (joint / joint.sum(axis=1, keepdims=True)).mean(axis=0)
    n, pseudo = len(rows), promotions_settings.RETRIEVAL_SCAN_PRIOR_GROUPS
    return RelevancePrior((n * w + pseudo * uniform) / (n + pseudo), n)


def _quantiles(posteriors: np.ndarray, q: float) -> np.ndarray:
    """The q-quantile of each row of ``posteriors`` (over GRID, each point's mass spread evenly over its cell)."""
    cdf = np.cumsum(posteriors, axis=1)
    cell = np.minimum((cdf < q).sum(axis=1), len(GRID) - 1)
    rows = np.arange(len(posteriors))
    before = np.where(cell > 0, cdf[rows, np.maximum(cell - 1, 0)], 0.0)
    inside = np.clip((q - before) / np.maximum(posteriors[rows, cell], 1e-300), 0.0, 1.0)
    return (cell + inside) / len(GRID)


def _summaries(prior: RelevancePrior, groups: list[dict[str, Any]], confidence: float) -> np.ndarray:
    """Per group (rows in order): the posterior's lower quantile, upper quantile and mean, computed
    in blocks (a window may hold hundreds of thousands of groups)."""
    out = np.zeros((len(groups), 3))
    log_prior = np.log(prior.weights)
    for start in range(0, len(groups), 20_000):
        block = groups[start : start + 20_000]
        e = np.array([g["examined"] for g in block])[:, None]
        u = np.minimum(np.maximum(np.array([g["used"] for g in block])[:, None], 0.0), e)
        log = _log_likelihood(u, e) + log_prior
        post = np.exp(log - log.max(axis=1, keepdims=True))
        post /= post.sum(axis=1, keepdims=True)
        out[start : start + len(block), 0] = _quantiles(post, 1 - confidence)
        out[start : start + len(block), 1] = _quantiles(post, confidence)
        out[start : start + len(block), 2] = post @ GRID
    return out


def _evidence_sums(propensity: Propensity) -> dict[str, Any]:
    """SQL sums of the estimator's terms over rollup rows (examinations, uses, and the raw counts)."""
    weight = promotions_settings.RETRIEVAL_SCAN_EXPLICIT_WEIGHT
    p = Case(
        *[When(rank=r, then=Value(propensity.at(r))) for r in range(1, retrieval_settings.RETRIEVAL_MAX_K + 1)],
        default=Value(propensity.floor),
        output_field=FloatField(),
    )
    return {
        "examined": Sum(
            p * (F("skipped") + F("clicked")) + Value(weight) * (F("helpful") + F("unhelpful") + F("unsupported")),
            output_field=FloatField(),
        ),
        "used": Sum(F("clicked") + Value(weight) * F("helpful"), output_field=FloatField()),
        "shown_total": Sum("shown"),
        "positives": Sum(F("clicked") + F("helpful")),
        "negatives": Sum(F("unhelpful") + F("unsupported")),
        "skips": Sum("skipped"),
        "first": Sum(Case(When(rank=1, explored=False, then="shown"), default=0, output_field=IntegerField())),
        "natural": Sum(Case(When(explored=False, then="shown"), default=0, output_field=IntegerField())),
    }


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
class _Estimates:
    """The evidence of every (chunk, project, neighbourhood) group under one propensity model."""

    groups: dict[tuple[int, int | None, str], dict[str, Any]]
    prior: RelevancePrior
    baselines: dict[tuple[int | None, str], float]
    global_rate: float


def _estimates(propensities: list[Propensity]) -> list[_Estimates]:
    """The evidence under each propensity model, from one pass over the rollups (and one over the
    neighbourhoods' baselines): the models differ only in what an examination at a rank is worth."""
    conf = promotions_settings
    min_effective = conf.RETRIEVAL_SCAN_MIN_EFFECTIVE  # read once: every read of a setting is checked
    sums: dict[str, Any] = {}
    for i, propensity in enumerate(propensities):
        model_sums = _evidence_sums(propensity)
        sums |= {f"examined_{i}": model_sums["examined"], f"used_{i}": model_sums["used"]}
        sums |= {k: v for k, v in model_sums.items() if k not in ("examined", "used")}
    overall = TraceRollup.objects.aggregate(**{k: sums[k] for k in sums if k.startswith(("examined_", "used_"))})
    rows: list[dict[str, Any]] = [
        dict(row) for row in TraceRollup.objects.values("chunk_id", "project_id", "terms").annotate(**sums).order_by()
    ]
    per_model: list[list[dict[str, Any]]] = []
    for i in range(len(propensities)):
        per_model.append(
            [
                {**g, "examined": g[f"examined_{i}"] or 0.0, "used": g[f"used_{i}"] or 0.0}
                for g in rows
                if g[f"examined_{i}"] is not None
            ]
        )
    neighbourhoods = sorted(
        {(g["project_id"], g["terms"]) for found in per_model for g in found if g["examined"] >= min_effective},
        key=str,
    )
    totals: dict[tuple[int | None, str], dict[str, Any]] = {}
    terms = sorted({t for _, t in neighbourhoods})
    for start in range(0, len(terms), 500):
        for total in (
            TraceRollup.objects.filter(terms__in=terms[start : start + 500])
            .values("project_id", "terms")
            .annotate(**{k: sums[k] for k in sums if k.startswith(("examined_", "used_"))})
            .order_by()
        ):
            totals[(total["project_id"], total["terms"])] = dict(total)
    estimates = []
    shrink = conf.RETRIEVAL_SCAN_PRIOR
    for i, found in enumerate(per_model):
        global_rate = (overall[f"used_{i}"] or 0.0) / (overall[f"examined_{i}"] or 1.0)
        prior = relevance_prior(found)
        groups = {(g["chunk_id"], g["project_id"], g["terms"]): g for g in found if g["examined"] >= min_effective}
        baselines = {
            key: ((total[f"used_{i}"] or 0.0) + shrink * global_rate) / ((total[f"examined_{i}"] or 0.0) + shrink)
            for key, total in totals.items()
        }
        judged = list(groups.values())
        summaries = _summaries(prior, judged, conf.RETRIEVAL_SCAN_CONFIDENCE)
        for g, (lower, upper, mean) in zip(judged, summaries, strict=True):
            g["lower"], g["upper"], g["mean"] = float(lower), float(upper), float(mean)
        estimates.append(_Estimates(groups, prior, baselines, global_rate))
    return estimates


def _figures(g: dict[str, Any], baseline: float, eta: float) -> dict:
    examined, used = g["examined"], g["used"]
    return {
        "terms": g["terms"].split(),
        "shown": g["shown_total"],
        "positives": g["positives"],
        "skips": g["skips"],
        "negatives": g["negatives"],
        "eta": round(eta, 3),
        "effective_examinations": round(examined, 3),
        "weighted_uses": round(used, 3),
        "relevance": round(min(1.0, used / examined), 4),
        "posterior_mean": round(g["mean"], 4),
        "lower": round(g["lower"], 4),
        "upper": round(g["upper"], 4),
        "baseline": round(baseline, 4),
        "at_rank_1": round(g["first"] / g["natural"], 3) if g["natural"] else None,
    }


def _query_decisions(propensity: Propensity, report: ScanReport) -> list[Decision]:
    """Boosts and penalties per (chunk, neighbourhood). eta is known only within its spread, and the
    error that matters differs by direction: examinations overestimated make skips look like
    evidence against a chunk, underestimated make uses look like more relevance than there is. So a
    penalty is judged with eta one posterior standard deviation higher (fewer examinations low on the
    page) and a boost with it one lower: each must hold across the central credible interval."""
    conf = promotions_settings
    lift = conf.RETRIEVAL_SCAN_MIN_LIFT
    if propensity.sd > 0:
        for_boosts, for_penalties = _estimates([propensity.shifted(-propensity.sd), propensity.shifted(propensity.sd)])
    else:
        for_boosts = for_penalties = _estimates([propensity])[0]
    report.relevance_prior = {"boosts": for_boosts.prior.describe(), "penalties": for_penalties.prior.describe()}
    report.groups += len(set(for_boosts.groups) | set(for_penalties.groups))
    weight, support = conf.RETRIEVAL_SCAN_EXPLICIT_WEIGHT, conf.RETRIEVAL_SCAN_MIN_SUPPORT
    decisions = []
    for key in sorted(set(for_boosts.groups) | set(for_penalties.groups), key=str):
        decision = None
        g = for_boosts.groups.get(key)
        baseline = for_boosts.baselines.get((key[1], key[2]), for_boosts.global_rate) if g else 0.0
        if g and baseline > 0:
            lower, mean = g["lower"], g["mean"]
            # Relevant on balance: its uses outweigh the explicit verdicts against it (skips aside).
            on_balance = g["used"] > weight * (g["negatives"] or 0)
            if on_balance and lower >= lift * baseline and (g["positives"] or 0) >= support:
                if g["natural"] and g["first"] >= AT_TOP * g["natural"]:
                    report.already_first += 1
                    continue
                # The posterior mean relevance over the neighbourhood's average: the multiplier.
                multiplier = max(MILDEST_BOOST, clamp_multiplier(mean / baseline))
                figures = _figures(g, baseline, propensity.eta - propensity.sd)
                decision = ("helpful", multiplier, g["examined"], figures)
        g = for_penalties.groups.get(key)
        baseline = for_penalties.baselines.get((key[1], key[2]), for_penalties.global_rate) if g else 0.0
        if decision is None and g and baseline > 0:
            upper, mean = g["upper"], g["mean"]
            if (
                upper * lift <= baseline
                and g["used"] <= g["examined"] / 2  # never penalise a result used at least as often as not
                and (g["skips"] or 0) + (g["negatives"] or 0) >= support
            ):
                multiplier = min(MILDEST_PENALTY, clamp_multiplier(mean / baseline))
                figures = _figures(g, baseline, propensity.eta + propensity.sd)
                decision = ("unhelpful", multiplier, g["examined"], figures)
        if decision is not None:
            kind, multiplier, strength, figures = decision
            decisions.append(Decision(key[0], key[1], kind, "query", multiplier, strength, [figures], keys=[key[2]]))
    return decisions


def _problem_decisions(propensity: Propensity) -> list[Decision]:
    """Stale content (everywhere) and wrong-project content (within the project): marks of that kind
    that reach the support and outweigh the chunk's uses."""
    conf = promotions_settings
    support, z = conf.RETRIEVAL_SCAN_MIN_SUPPORT, NormalDist().inv_cdf(conf.RETRIEVAL_SCAN_CONFIDENCE)
    decisions = []
    for kind, scope, by in (
        ("stale", "global", ("chunk_id",)),
        ("wrong_project", "project", ("chunk_id", "project_id")),
    ):
        for g in (
            TraceRollup.objects.values(*by)
            .annotate(marks=Sum(kind), positives=Sum(F("clicked") + F("helpful")), shown_total=Sum("shown"))
            .filter(marks__gte=support)
            .order_by()
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


def _anchors(decisions: list[Decision], expired_id: int) -> dict[int, list[tuple[str, list[str]]]]:
    """For each query-scoped decision: up to RETRIEVAL_SCAN_MAX_ANCHORS distinct queries of its
    neighbourhoods (newest first), as (trace id, content words)."""
    limit = promotions_settings.RETRIEVAL_SCAN_MAX_ANCHORS
    found: dict[int, list[tuple[str, list[str]]]] = {}
    for d in decisions:
        if d.scope != "query":
            continue
        wanted, seen, kept = set(d.keys), set(), []
        rows = (
            RetrievalFeedback.objects.filter(chunk_id=d.chunk_id, id__gt=expired_id)
            .filter(**{"project_id": d.project_id})
            .order_by("-id")
            .values_list("trace_id", "query_text")[:2000]
        )
        for trace_id, text in rows:
            normal = " ".join(text.lower().split())
            if normal in seen:
                continue
            seen.add(normal)
            terms = neighbourhood(text)
            if terms in wanted:
                kept.append((str(trace_id), terms.split()))
                if len(kept) >= limit:
                    break
        found[d.chunk_id] = kept
    return found


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
    propensity = propensity_estimate()
    report.propensity = propensity.describe()
    thresholds = {
        "min_effective_examinations": conf.RETRIEVAL_SCAN_MIN_EFFECTIVE,
        "min_support": conf.RETRIEVAL_SCAN_MIN_SUPPORT,
        "confidence": conf.RETRIEVAL_SCAN_CONFIDENCE,
        "min_lift": conf.RETRIEVAL_SCAN_MIN_LIFT,
        "explicit_weight": conf.RETRIEVAL_SCAN_EXPLICIT_WEIGHT,
        "min_propensity": conf.RETRIEVAL_SCAN_MIN_PROPENSITY,
        "prior_groups": conf.RETRIEVAL_SCAN_PRIOR_GROUPS,
    }
    decisions = _per_chunk([*_problem_decisions(propensity), *_query_decisions(propensity, report)])

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
