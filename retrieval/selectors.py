"""Reads of retrieval data, with the access rules applied."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
from django.db import connection, transaction
from django.db.models import Q, QuerySet
from pgvector.django import MaxInnerProduct

from accounts.actors import Actor
from accounts.models import Project
from accounts.selectors import project_ids_for_user
from core.ids import parse_uuid
from retrieval.conf import clamp_multiplier, retrieval_settings
from retrieval.index import get_index, uses_hnsw
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


def _chunks_in_reach(*, actor: Actor, project: Project | None) -> QuerySet[Chunk]:
    """The chunks the actor may read, within ``project`` and organisation-wide ones if set."""
    qs = Chunk.objects.filter(document_visibility_q(actor=actor, prefix="document__"))
    if project is not None:
        qs = qs.filter(Q(document__project=project) | Q(document__project__isnull=True))
    return qs


def chunks_visible(*, actor: Actor, project: Project | None, chunk_ids: list[int]) -> set[int]:
    """Which of the given chunks the actor may read (within ``project`` and organisation-wide ones,
    if set). Ids only: search reads the candidates' text for the top k alone."""
    return set(_chunks_in_reach(actor=actor, project=project).filter(pk__in=chunk_ids).values_list("pk", flat=True))


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


# One active weight as search reads it: scope, project id, anchors (stacked vectors, or None),
# anchor terms, min_similarity, multiplier.
WeightRow = tuple[str, int | None, np.ndarray | None, list, float | None, float]


def _multiplier(rows: list[WeightRow], project: Project | None, query_vector: np.ndarray, terms: set[str]) -> float:
    """The product of the weights (in id order) whose scope covers the query, held in bounds at
    each step: global; this project; or a near-paraphrase of the evidence's queries."""
    result = 1.0
    for scope, project_id, anchors, anchor_terms, min_similarity, multiplier in rows:
        if scope == WeightScope.PROJECT and (project is None or project.pk != project_id):
            continue
        if scope == WeightScope.QUERY and (
            anchors is None or not near_paraphrase(query_vector, terms, anchors, anchor_terms, min_similarity or 1.0)
        ):
            continue
        result = clamp_multiplier(result * multiplier)
    return result


def weights_for(
    *, chunk_ids: list[int], project: Project | None, query_vector: np.ndarray, query_text: str = ""
) -> dict[int, float]:
    """The multiplier each chunk gets for this query: the product of its active weights whose
    scope covers the query (global; this project; or a near-paraphrase of the evidence's queries)."""
    terms = set(query_terms(query_text))
    rows: dict[int, list[WeightRow]] = {}
    for chunk_id, *row in (
        RetrievalWeight.objects.filter(chunk_id__in=chunk_ids, status=WeightStatus.ACTIVE)
        .order_by("pk")
        .values_list("chunk_id", "scope", "project_id", "query_anchors", "query_terms", "min_similarity", "multiplier")
    ):
        rows.setdefault(chunk_id, []).append(tuple(row))
    return {chunk_id: _multiplier(chunk_rows, project, query_vector, terms) for chunk_id, chunk_rows in rows.items()}


def _candidates_exact(
    *, actor: Actor, project: Project | None, query_vector: np.ndarray, n: int
) -> list[tuple[int, float]]:
    """The ``n`` chunks most similar to the query among those the actor may read, exactly, from
    the in-process index (SQLite). Usually the index's top n are all readable; when some are
    not, 8 n are tried, and only then the index is searched restricted to every readable chunk
    (its ids read from the database: costly in a large corpus the reader sees little of)."""
    index = get_index()
    for fetch in (n, 8 * n):
        hits = index.search(query_vector, fetch)
        visible = chunks_visible(actor=actor, project=project, chunk_ids=[pk for pk, _ in hits])
        kept = [(pk, score) for pk, score in hits if pk in visible]
        if len(kept) >= n or len(hits) < fetch:  # enough, or every chunk was looked at
            return kept[:n]
    allowed = list(_chunks_in_reach(actor=actor, project=project).values_list("pk", flat=True))
    return index.search(query_vector, n, among=allowed)


def _candidates_hnsw(
    *, actor: Actor, project: Project | None, query_vector: np.ndarray, n: int
) -> tuple[list[tuple[int, float]], dict[int, list[WeightRow]]]:
    """PostgreSQL: the ``n`` chunks nearest the query among those the actor may read, from the
    HNSW index, with their active weights (those the project scope allows) in the same statement.
    The index is walked iteratively until ``n`` readable chunks are found (pgvector's iterative
    scan), so a filter that rejects most chunks still fills the over-fetch. The weights are looked
    up per candidate (a lateral join on their chunk index; OFFSET 0 keeps the planner from turning
    it into a hash of every active weight)."""
    nearest = (
        _chunks_in_reach(actor=actor, project=project)
        .annotate(distance=MaxInnerProduct("embedding", query_vector))
        .order_by("distance")
        .values_list("pk", "distance")[:n]
    )
    inner, params = nearest.query.sql_with_params()
    weights = RetrievalWeight._meta.db_table
    # Composed only of Django's own SQL for the query above and a table name; values are parameters.
    sql = (
        f"WITH candidates (id, distance) AS MATERIALIZED ({inner}) "  # noqa: S608
        "SELECT c.id, c.distance, w.scope, w.project_id, w.query_anchors, w.query_terms, w.min_similarity, "
        f"w.multiplier FROM candidates c LEFT JOIN LATERAL (SELECT * FROM {weights} w WHERE w.chunk_id = c.id "
        "AND w.status = %s AND (w.scope <> %s OR w.project_id = %s) OFFSET 0) w ON true ORDER BY c.id, w.id"
    )
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT set_config('hnsw.ef_search', %s, true), set_config('hnsw.iterative_scan', 'relaxed_order', true), "
            "set_config('hnsw.max_scan_tuples', %s, true)",
            [str(retrieval_settings.RETRIEVAL_HNSW_EF_SEARCH), str(retrieval_settings.RETRIEVAL_HNSW_MAX_SCAN_TUPLES)],
        )
        cursor.execute(sql, [*params, WeightStatus.ACTIVE, WeightScope.PROJECT, project.pk if project else None])
        rows = cursor.fetchall()
    candidates: dict[int, float] = {}
    weight_rows: dict[int, list[WeightRow]] = {}
    for pk, distance, scope, project_id, anchors, terms, min_similarity, multiplier in rows:
        candidates.setdefault(pk, -distance)  # <#> is the negative inner product
        if scope is not None:
            weight_rows.setdefault(pk, []).append(
                (
                    scope,
                    project_id,
                    np.frombuffer(bytes(anchors), dtype=np.float32) if anchors is not None else None,
                    json.loads(terms) if isinstance(terms, str) else terms,
                    min_similarity,
                    multiplier,
                )
            )
    return list(candidates.items()), weight_rows


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
    n = max(200, k * 20)  # candidates by similarity before weights reorder them
    if uses_hnsw():
        candidates, weight_rows = _candidates_hnsw(actor=actor, project=project, query_vector=query_vector, n=n)
        terms = set(query_terms(query_text))
        multipliers = {pk: _multiplier(rows, project, query_vector, terms) for pk, rows in weight_rows.items()}
    else:
        candidates = _candidates_exact(actor=actor, project=project, query_vector=query_vector, n=n)
        multipliers = weights_for(
            chunk_ids=[pk for pk, _ in candidates], project=project, query_vector=query_vector, query_text=query_text
        )
    visible = {pk for pk, _ in candidates}
    for chunk_id, multiplier in (extra or {}).items():
        if chunk_id in visible:
            multipliers[chunk_id] = clamp_multiplier(multipliers.get(chunk_id, 1.0) * multiplier)
    scored = sorted(
        ((max(score, 0.0) * multipliers.get(pk, 1.0), score, pk) for pk, score in candidates),
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
