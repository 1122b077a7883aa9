"""Reads of retrieval data, with the access rules applied."""

from __future__ import annotations

import numpy as np
from django.db.models import Q

from accounts.actors import Actor
from accounts.models import Project
from accounts.selectors import project_ids_for_user
from retrieval.models import Chunk, RetrievalQuery, RetrievalWeight, WeightScope, WeightStatus


def document_visibility_q(*, actor: Actor, prefix: str = "") -> Q:
    """Organisation-wide documents for everyone signed in; project documents for the project's
    members; everything for admins and services."""
    if actor.sees_everything:
        return Q()
    if actor.user is None:
        return Q(pk__in=[])
    return Q(**{f"{prefix}project__isnull": True}) | Q(
        **{f"{prefix}project_id__in": project_ids_for_user(user=actor.user)}
    )


def chunks_visible(*, actor: Actor, project: Project | None, chunk_ids: list[int]) -> dict[int, Chunk]:
    """The given chunks the actor may read (within ``project`` and organisation-wide ones, if set)."""
    qs = Chunk.objects.filter(pk__in=chunk_ids).filter(document_visibility_q(actor=actor, prefix="document__"))
    if project is not None:
        qs = qs.filter(Q(document__project=project) | Q(document__project__isnull=True))
    return {c.pk: c for c in qs.select_related("document").defer("embedding")}


def trace_get(*, actor: Actor, trace_id: str) -> RetrievalQuery | None:
    """A search trace: its user's, or anyone's for admins and services (404 otherwise)."""
    qs = RetrievalQuery.objects.select_related("project").filter(pk=trace_id)
    if not actor.sees_everything:
        qs = qs.filter(user=actor.user) if actor.user is not None else qs.none()
    return qs.first()


def weights_for(*, chunk_ids: list[int], project: Project | None, query_vector: np.ndarray) -> dict[int, float]:
    """The multiplier each chunk gets for this query: the product of its active weights whose
    scope covers the query (global; this project; or a query close enough to the evidence)."""
    result: dict[int, float] = {}
    rows = RetrievalWeight.objects.filter(chunk_id__in=chunk_ids, status=WeightStatus.ACTIVE).values_list(
        "chunk_id", "scope", "project_id", "query_anchors", "min_similarity", "multiplier"
    )
    for chunk_id, scope, project_id, anchors, min_similarity, multiplier in rows:
        if scope == WeightScope.PROJECT and (project is None or project.pk != project_id):
            continue
        if scope == WeightScope.QUERY and (
            anchors is None
            or float((anchors.reshape(-1, query_vector.shape[0]) @ query_vector).max()) < (min_similarity or 1.0)
        ):
            continue
        result[chunk_id] = min(1.5, max(0.65, result.get(chunk_id, 1.0) * multiplier))
    return result


def rank_chunks(
    *, query_vector: np.ndarray, project: Project | None, k: int, extra: dict[int, float] | None = None
) -> list[int]:
    """Chunk ids as search would rank them for this query vector (as an admin sees them), with the
    active weights and, for a preview, ``extra`` multipliers on top."""
    from retrieval.index import get_index

    candidates = get_index().search(query_vector, max(200, k * 20))
    visible = chunks_visible(actor=Actor.for_system(), project=project, chunk_ids=[pk for pk, _ in candidates])
    multipliers = weights_for(chunk_ids=list(visible), project=project, query_vector=query_vector)
    for chunk_id, multiplier in (extra or {}).items():
        if chunk_id in visible:
            multipliers[chunk_id] = min(1.5, max(0.65, multipliers.get(chunk_id, 1.0) * multiplier))
    scored = sorted(
        ((max(score, 0.0) * multipliers.get(pk, 1.0), pk) for pk, score in candidates if pk in visible), reverse=True
    )
    return [pk for _, pk in scored[:k]]
