"""Impact preview: what a retrieval weight would change, replayed on recent traced queries."""

from __future__ import annotations

import math

import numpy as np

from config.exceptions import ApplicationError, Conflict
from promotions.models import LearningPromotion
from retrieval.models import Chunk, RetrievalFeedback, RetrievalQuery
from retrieval.scope import ScopeRule, near_paraphrase, query_terms
from retrieval.selectors import Replay, anchor_vectors, rank_chunks_many

POSITIVE_OUTCOMES = {"helpful"}


def _ndcg(ranking: list[int], relevant: set[int], k: int = 10) -> float:
    dcg = sum(1 / math.log2(i + 2) for i, pk in enumerate(ranking[:k]) if pk in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(k, len(relevant))))
    return dcg / ideal if ideal else 0.0


def _in_scope(learning: dict, anchors: np.ndarray, trace: RetrievalQuery, rule: ScopeRule) -> bool:
    scope = learning.get("scope")
    if scope == "global":
        return True
    if scope == "project":
        return bool(trace.project and trace.project.slug == learning.get("project"))
    if not len(anchors) or trace.embedding is None:
        return False
    return near_paraphrase(
        trace.embedding,
        set(query_terms(trace.query_text)),
        anchors,
        learning.get("anchor_terms") or [],
        float(learning.get("min_similarity") or 1.0),
        rule,
    )


def retrieval_weight_preview(*, promotion: LearningPromotion, limit: int = 200) -> dict:
    """Replay the recent traced queries the weight would touch, with and without it: the chunk's
    rank in each, and where the trace carries judgments (helpful / cited / used), NDCG@10. Each is
    ranked as search ranks it now (the active weights whose scope covers the query, its own words
    included); a fixed number of queries, whatever the number of searches touched."""
    if promotion.promotion_type != "retrieval_weight":
        raise ApplicationError("Only retrieval weights have an impact preview.", field="promotion_type")
    learning = promotion.proposed_learning
    try:
        chunk_id, multiplier = int(learning["chunk"]), float(learning["multiplier"])
    except (KeyError, TypeError, ValueError):
        raise ApplicationError(
            "This weight's proposed learning names no chunk and multiplier: nothing to preview.",
            field="proposed_learning",
        ) from None
    if not Chunk.objects.filter(pk=chunk_id).exists():
        raise Conflict(
            f"Chunk {chunk_id} no longer exists: a re-import changed or removed its passage, so there is no "
            "impact to preview.",
            field="subject_id",
        )
    recent = list(RetrievalQuery.objects.select_related("project").order_by("-created_at")[:limit])
    anchors = anchor_vectors(learning)
    rule = ScopeRule.from_settings()  # once per preview, not per trace (as search does)
    touched = [trace for trace in recent if _in_scope(learning, anchors, trace, rule)]
    judged: dict[str, set[int]] = {}
    for trace_id, pk, cited, used, outcome in (
        RetrievalFeedback.objects.filter(trace_id__in=[t.pk for t in touched])
        .order_by()  # read into sets: the default ordering would only join the searches to sort them
        .values_list("trace_id", "chunk_id", "cited", "used_in_answer", "outcome")
    ):
        if cited or used or outcome in POSITIVE_OUTCOMES:
            judged.setdefault(str(trace_id), set()).add(pk)
    rows: list[dict] = []
    changes: list[float] = []
    # Every touched search ranked twice, in a fixed number of queries (the console shows this inline).
    replays = [
        Replay(query_vector=trace.embedding, project=trace.project, k=trace.k, query_text=trace.query_text)
        for trace in touched
    ]
    befores = rank_chunks_many(replays=replays)
    afters = rank_chunks_many(replays=replays, extra={chunk_id: multiplier})
    for trace, before, after in zip(touched, befores, afters, strict=True):
        relevant = judged.get(str(trace.pk))
        if relevant:
            changes.append(_ndcg(after, relevant) - _ndcg(before, relevant))
        rows.append(
            {
                "trace_id": str(trace.pk),
                "query": trace.query_text[:300],
                "rank_before": before.index(chunk_id) + 1 if chunk_id in before else None,
                "rank_after": after.index(chunk_id) + 1 if chunk_id in after else None,
                "ndcg_before": round(_ndcg(before, relevant), 4) if relevant else None,
                "ndcg_after": round(_ndcg(after, relevant), 4) if relevant else None,
            }
        )
    return {
        "promotion": str(promotion.pk),
        "chunk": chunk_id,
        "multiplier": multiplier,
        "scope": learning.get("scope"),
        "queries": rows,
        "summary": {
            "touched": len(rows),
            "rank_changed": sum(r["rank_before"] != r["rank_after"] for r in rows),
            "judged": len(changes),
            "improved": sum(c > 0 for c in changes),
            "worsened": sum(c < 0 for c in changes),
            "mean_ndcg_change": round(sum(changes) / len(changes), 4) if changes else None,
        },
    }
