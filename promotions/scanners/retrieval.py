"""The retrieval scanner: search-trace evidence becomes retrieval-weight candidates.

The scan aggregates the search traces in SQL (one GROUP BY over
``ai_retrieval_feedback``), then decides per aggregated chunk:

* a **boost** only from repeated positive signals (cited, used in the answer, referenced,
  or marked helpful) and no problem signal, when the chunk earned more of them than its
  ranks predict: each showing counts ``1 / log2(rank + 1)`` of an expected positive
  (rank 1 is cited more for being first), and the lift is smoothed toward 1;
* a **penalty** from repeated problem outcomes (unhelpful, wrong_project, stale,
  unsupported), from their smoothed rate.

Each weight is scoped to what its evidence supports: stale content everywhere,
wrong-project content within that project, relevance (helpful or not) in the
neighbourhood of the queries that produced it (near-paraphrases of any of them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db.models import Count, F, FloatField, Q, Sum, Value
from django.db.models.functions import Cast, Ln
from django.utils import timezone

from accounts.actors import Actor
from accounts.models import Project
from promotions.conf import promotions_settings
from promotions.models import OPEN_STATUSES, LearningPromotion
from promotions.services import Proposal, promotions_propose_bulk
from retrieval.conf import clamp_multiplier
from retrieval.models import RetrievalFeedback
from retrieval.scope import query_terms

POSITIVE = Q(cited=True) | Q(used_in_answer=True) | Q(user_referenced=True) | Q(outcome="helpful")
PROBLEMS = ("unhelpful", "wrong_project", "stale", "unsupported")
# The scanner's own choice of the mildest change worth proposing: a penalty lowers a weight by at
# least 5%, a boost raises it by at least 5% (the outer bounds are retrieval's WEIGHT_MIN/WEIGHT_MAX).
MILDEST_PENALTY = 0.95
MILDEST_BOOST = 1.05
SCOPE_FOR_PROBLEM = {"stale": "global", "wrong_project": "project", "unhelpful": "query", "unsupported": "query"}


@dataclass
class ScanReport:
    groups: int = 0
    boosts: int = 0
    penalties: int = 0
    skipped_open: int = 0


def _discount():
    # 1 / log2(rank + 1) = ln 2 / ln(rank + 1): what one showing at this rank is worth in expected
    # positives. Natural logs stay in double precision (PostgreSQL's two-argument log is numeric-only).
    return Value(math.log(2.0)) / Ln(Cast(F("rank"), FloatField()) + 1.0)


def retrieval_scan(*, actor: Actor | None = None) -> ScanReport:
    """Propose retrieval-weight candidates from repeated, grouped trace signals."""
    actor = actor or Actor.for_system()
    conf = promotions_settings
    since = timezone.now() - timedelta(days=conf.RETRIEVAL_SCAN_DAYS)
    support = conf.RETRIEVAL_SCAN_MIN_SUPPORT
    # A result whose passage a re-import changed or removed (chunk NULL) is evidence about no chunk.
    traces = RetrievalFeedback.objects.filter(created_at__gte=since, chunk__isnull=False)
    totals = traces.aggregate(positives=Count("id", filter=POSITIVE), discount=Sum(_discount()))
    per_discount = (totals["positives"] or 0) / (totals["discount"] or 1.0)

    groups = (
        traces.values("chunk_id", "document_id", "project_id")
        .annotate(
            shown=Count("id"),
            positives=Count("id", filter=POSITIVE),
            discount=Sum(_discount()),
            **{problem: Count("id", filter=Q(outcome=problem)) for problem in PROBLEMS},
        )
        .filter(_any_at_least(("positives", *PROBLEMS), support))
        .order_by()
    )
    report = ScanReport()
    proposals = []
    for group in groups:
        report.groups += 1
        problems: dict[str, int] = {p: group[p] for p in PROBLEMS}  # type: ignore[literal-required]
        if any(problems.values()):
            kind, count = max(problems.items(), key=lambda item: item[1])
            if count < support:
                continue  # problem signals block a boost, but are too few to penalise
            rate = count / (group["shown"] + conf.RETRIEVAL_SCAN_PRIOR)
            multiplier = min(MILDEST_PENALTY, clamp_multiplier(1.0 - 0.5 * rate))
            proposals.append((group, kind, multiplier, SCOPE_FOR_PROBLEM[kind], count))
        elif group["positives"] >= support:
            expected = per_discount * (group["discount"] or 0.0)
            prior = conf.RETRIEVAL_SCAN_PRIOR
            lift = (group["positives"] + prior) / (expected + prior)
            if lift < conf.RETRIEVAL_SCAN_MIN_LIFT:
                continue  # as often used as its rank predicts: nothing to learn
            multiplier = max(MILDEST_BOOST, clamp_multiplier(1.0 + 0.5 * math.log2(lift)))
            proposals.append((group, "helpful", multiplier, "query", group["positives"]))

    open_subjects = set(
        LearningPromotion.objects.filter(promotion_type="retrieval_weight", status__in=OPEN_STATUSES).values_list(
            "subject_id", flat=True
        )
    )
    fresh = [proposal for proposal in proposals if str(proposal[0]["chunk_id"]) not in open_subjects]
    report.skipped_open = len(proposals) - len(fresh)
    neighbourhoods = _query_neighbourhoods(
        traces, {(g["chunk_id"], g["project_id"]): kind for g, kind, _, scope, _ in fresh if scope == "query"}
    )
    projects = Project.objects.in_bulk({g["project_id"] for g, *_ in fresh if g["project_id"]})
    candidates = []
    for group, kind, multiplier, scope, count in fresh:
        subject = str(group["chunk_id"])
        project = projects.get(group["project_id"]) if group["project_id"] else None
        learning = {
            "chunk": group["chunk_id"],
            "document": group["document_id"],
            "multiplier": round(multiplier, 4),
            "scope": scope,
            "project": project.slug if (project and scope == "project") else None,
            "reason": kind,
            "evidence": {"shown": group["shown"], "positives": group["positives"], "problems": count},
        }
        if scope == "query":
            anchors, min_similarity = neighbourhoods[(group["chunk_id"], group["project_id"])]
            learning.update(
                {
                    "anchor_traces": [str(trace) for trace, _ in anchors],
                    "anchor_terms": [terms for _, terms in anchors],
                    "min_similarity": min_similarity,
                }
            )
        candidates.append(
            Proposal(
                subject_id=subject,
                proposed_learning=learning,
                confidence=round(1 - 1 / (1 + count / support), 3),
                risk_level="low" if kind in ("helpful", "stale") else "medium",
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


def _any_at_least(names: tuple[str, ...], support: int) -> Q:
    condition = Q()
    for name in names:
        condition |= Q(**{f"{name}__gte": support})
    return condition


def _query_neighbourhoods(traces, wanted: dict[tuple[int, int | None], str]) -> dict:
    """For each (chunk, project): up to RETRIEVAL_SCAN_MAX_ANCHORS distinct queries that carried its
    signal (their trace ids and content words). The weight will apply to a query at least
    RETRIEVAL_SCAN_MIN_NEIGHBOURHOOD similar to one of them that also shares most of its content words.
    One query."""
    max_anchors = promotions_settings.RETRIEVAL_SCAN_MAX_ANCHORS
    min_similarity = promotions_settings.RETRIEVAL_SCAN_MIN_NEIGHBOURHOOD
    by_kind: dict[str, set[int]] = {}
    for (chunk_id, _), kind in wanted.items():
        by_kind.setdefault(kind, set()).add(chunk_id)
    carried = Q(pk__in=[])
    for kind, chunk_ids in by_kind.items():
        carried |= Q(chunk_id__in=chunk_ids) & (POSITIVE if kind == "helpful" else Q(outcome=kind))
    rows = traces.filter(carried).order_by("created_at").values_list("chunk_id", "project_id", "trace_id", "query_text")
    kept: dict[tuple[int, int | None], dict[str, Any]] = {key: {} for key in wanted}
    for chunk_id, project_id, trace_id, text in rows.iterator(chunk_size=5000):
        found = kept.get((chunk_id, project_id))
        if found is not None and len(found) < max_anchors:
            found.setdefault(" ".join(text.lower().split()), trace_id)
    terms = {text: query_terms(text) for found in kept.values() for text in found}
    return {
        key: ([(trace, terms[text]) for text, trace in found.items()], min_similarity) for key, found in kept.items()
    }
