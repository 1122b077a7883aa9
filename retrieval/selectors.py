"""Reads of retrieval data, with the access rules applied."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.db.models import Q

from accounts.actors import Actor
from accounts.models import Project
from accounts.selectors import project_ids_for_user
from core.ids import parse_uuid
from retrieval.conf import clamp_multiplier
from retrieval.index import get_index
from retrieval.models import Chunk, RetrievalQuery, RetrievalWeight, WeightScope, WeightStatus
from retrieval.scope import near_paraphrase, query_terms


def document_visibility_q(*, actor: Actor, prefix: str = "") -> Q:
    """Organisation-wide documents for everyone signed in; project documents for the project's
    members (a service key acting for a user: that user's); everything for admins and services;
    a service key limited to projects: organisation-wide ones and its projects'."""
    if actor.sees_everything:
        return Q()
    organisation = Q(**{f"{prefix}project__isnull": True})
    if actor.is_service:
        return organisation | Q(**{f"{prefix}project_id__in": actor.project_ids or ()})
    if actor.user is None:
        return Q(pk__in=[])
    return organisation | (
        Q(**{f"{prefix}project_id__in": project_ids_for_user(user=actor.user)}) & actor.limit_q(f"{prefix}project")
    )


def chunks_visible(*, actor: Actor, project: Project | None, chunk_ids: list[int]) -> set[int]:
    """Which of the given chunks the actor may read (within ``project`` and organisation-wide ones,
    if set). Ids only: search reads the candidates' text for the top k alone."""
    qs = Chunk.objects.filter(pk__in=chunk_ids).filter(document_visibility_q(actor=actor, prefix="document__"))
    if project is not None:
        qs = qs.filter(Q(document__project=project) | Q(document__project__isnull=True))
    return set(qs.values_list("pk", flat=True))


def chunks_for_display(*, chunk_ids: list[int]) -> dict[int, Chunk]:
    """The chunks search returns, with their documents' titles and addresses (not their texts)."""
    return Chunk.objects.select_related("document").defer("embedding", "document__raw_text").in_bulk(chunk_ids)


def trace_get(*, actor: Actor, trace_id: str) -> RetrievalQuery | None:
    """A search trace: its user's (also for a service key acting for them), or anyone's for admins
    and services (a limited service key: in its projects); 404 otherwise."""
    pk = parse_uuid(trace_id)
    if pk is None:
        return None
    qs = RetrievalQuery.objects.select_related("project").filter(pk=pk)
    if actor.is_service and not actor.sees_everything:
        qs = qs.filter(project_id__in=actor.project_ids or ())
    elif not actor.sees_everything:
        qs = qs.filter(actor.limit_q()).filter(user=actor.user) if actor.user is not None else qs.none()
    return qs.first()


def anchor_vectors(learning: dict) -> np.ndarray:
    """The embeddings of a query-scoped learning's anchor queries (its evidence traces), one row each;
    traces deleted since the scan are missing from the result."""
    ids = [pk for pk in map(parse_uuid, learning.get("anchor_traces") or []) if pk is not None]
    found = dict(RetrievalQuery.objects.filter(pk__in=ids).values_list("pk", "embedding"))
    vectors = [np.frombuffer(bytes(found[pk]), dtype=np.float32) for pk in ids if pk in found]
    return np.vstack(vectors) if vectors else np.zeros((0, 384), dtype=np.float32)


def weights_for(
    *, chunk_ids: list[int], project: Project | None, query_vector: np.ndarray, query_text: str = ""
) -> dict[int, float]:
    """The multiplier each chunk gets for this query: the product of its active weights whose
    scope covers the query (global; this project; or a near-paraphrase of the evidence's queries)."""
    result: dict[int, float] = {}
    terms = set(query_terms(query_text))
    rows = RetrievalWeight.objects.filter(chunk_id__in=chunk_ids, status=WeightStatus.ACTIVE).values_list(
        "chunk_id", "scope", "project_id", "query_anchors", "query_terms", "min_similarity", "multiplier"
    )
    for chunk_id, scope, project_id, anchors, anchor_terms, min_similarity, multiplier in rows:
        if scope == WeightScope.PROJECT and (project is None or project.pk != project_id):
            continue
        if scope == WeightScope.QUERY and (
            anchors is None or not near_paraphrase(query_vector, terms, anchors, anchor_terms, min_similarity or 1.0)
        ):
            continue
        result[chunk_id] = clamp_multiplier(result.get(chunk_id, 1.0) * multiplier)
    return result


@dataclass(frozen=True)
class RankedChunk:
    chunk_id: int
    score: float  # the similarity times the weight
    weight: float  # the combined multiplier of the chunk's weights for this query (1.0: none)


def chunks_ranked(
    *,
    actor: Actor,
    query_vector: np.ndarray,
    project: Project | None,
    k: int,
    query_text: str = "",
    extra: dict[int, float] | None = None,
) -> list[RankedChunk]:
    """The top ``k`` chunks the actor may read for this query: similarity (negative counts as 0)
    times the active weights' multiplier, and, for a preview, ``extra`` multipliers on top (the
    product held within the weight bounds). Ties go to the higher similarity, then the higher id."""
    candidates = get_index().search(query_vector, max(200, k * 20))
    visible = chunks_visible(actor=actor, project=project, chunk_ids=[pk for pk, _ in candidates])
    multipliers = weights_for(
        chunk_ids=list(visible), project=project, query_vector=query_vector, query_text=query_text
    )
    for chunk_id, multiplier in (extra or {}).items():
        if chunk_id in visible:
            multipliers[chunk_id] = clamp_multiplier(multipliers.get(chunk_id, 1.0) * multiplier)
    scored = sorted(
        ((max(score, 0.0) * multipliers.get(pk, 1.0), score, pk) for pk, score in candidates if pk in visible),
        reverse=True,
    )
    return [RankedChunk(chunk_id=pk, score=weighted, weight=multipliers.get(pk, 1.0)) for weighted, _, pk in scored[:k]]


def rank_chunks(
    *,
    query_vector: np.ndarray,
    project: Project | None,
    k: int,
    extra: dict[int, float] | None = None,
    query_text: str = "",
) -> list[int]:
    """Chunk ids as search ranks them for this query vector, as an admin sees them (the impact preview)."""
    ranked = chunks_ranked(
        actor=Actor.for_system(), query_vector=query_vector, project=project, k=k, query_text=query_text, extra=extra
    )
    return [hit.chunk_id for hit in ranked]
