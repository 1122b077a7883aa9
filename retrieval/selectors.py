"""Reads of retrieval data, with the access rules applied."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

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
from retrieval.scope import ScopeRule, near_paraphrase, query_terms


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
    qs = Chunk.objects.filter(document_visibility_q(actor=actor))  # on the chunk's copy of its document's project
    if project is not None:
        qs = qs.filter(Q(project=project) | Q(project__isnull=True))
    return qs


def chunks_visible(*, actor: Actor, project: Project | None, chunk_ids: list[int]) -> set[int]:
    """Which of the given chunks the actor may read (within ``project`` and organisation-wide ones,
    if set). Ids only: search reads the candidates' text for the top k alone."""
    return set(_chunks_in_reach(actor=actor, project=project).filter(pk__in=chunk_ids).values_list("pk", flat=True))


def chunks_for_display(*, chunk_ids: list[int]) -> dict[int, Chunk]:
    """The chunks search returns, with their documents' titles and addresses (not their texts)."""
    fields = ("chunk_id", "document_id", "position", "content", "document__title", "document__url")
    return Chunk.objects.select_related("document").only(*fields).in_bulk(chunk_ids)


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


def _multiplier(
    rows: list[WeightRow], project: Project | None, query_vector: np.ndarray, terms: set[str], rule: ScopeRule
) -> float:
    """The product of the weights (in id order) whose scope covers the query, held in bounds at
    each step: global; this project; or a near-paraphrase of the evidence's queries (by ``rule``,
    read from the settings once per search: a search weighs each of up to hundreds of candidates)."""
    result = 1.0
    for scope, project_id, anchors, anchor_terms, min_similarity, multiplier in rows:
        if scope == WeightScope.PROJECT and (project is None or project.pk != project_id):
            continue
        if scope == WeightScope.QUERY and (
            anchors is None
            or not near_paraphrase(query_vector, terms, anchors, anchor_terms, min_similarity or 1.0, rule)
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
    rule = ScopeRule.from_settings()
    return {
        chunk_id: _multiplier(chunk_rows, project, query_vector, terms, rule) for chunk_id, chunk_rows in rows.items()
    }


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
        rule = ScopeRule.from_settings()
        multipliers = {pk: _multiplier(rows, project, query_vector, terms, rule) for pk, rows in weight_rows.items()}
    else:
        candidates = _candidates_exact(actor=actor, project=project, query_vector=query_vector, n=n)
        multipliers = weights_for(
            chunk_ids=[pk for pk, _ in candidates], project=project, query_vector=query_vector, query_text=query_text
        )
    return _ranked(candidates, multipliers, extra, k)


def _ranked(
    candidates: list[tuple[int, float]], multipliers: dict[int, float], extra: dict[int, float] | None, k: int
) -> list[RankedChunk]:
    """The ranking rule: similarity (negative counts as 0) times the multiplier, ``extra`` on top
    within the bounds; ties to the higher similarity, then the higher id."""
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


@dataclass(frozen=True)
class Replay:
    """One traced search to rank again (the impact preview): its vector, project, k and text."""

    query_vector: np.ndarray
    project: Project | None
    k: int
    query_text: str = ""


# Ids per IN list when the replays' candidates are looked up (SQLite allows 32,766 parameters).
_IN_BATCH = 10_000


def _batched(ids: set[int]) -> list[list[int]]:
    ordered = sorted(ids)
    return [ordered[start : start + _IN_BATCH] for start in range(0, len(ordered), _IN_BATCH)]


def rank_chunks_many(*, replays: list[Replay], extra: dict[int, float] | None = None) -> list[list[int]]:
    """``rank_chunks`` for many searches at once, as an admin sees them, in a number of queries that
    does not grow with the number of searches: on PostgreSQL one statement (a lateral HNSW lookup
    per search); in process, the index is searched per vector and the candidates' projects and
    weights are read once for all (per 10,000 distinct candidates). The ranking rule is the one of
    ``chunks_ranked``."""
    if not replays:
        return []
    found = _candidates_hnsw_many(replays) if uses_hnsw() else _candidates_exact_many(replays)
    rankings = []
    rule = ScopeRule.from_settings()
    for replay, (candidates, weight_rows) in zip(replays, found, strict=True):
        terms = set(query_terms(replay.query_text))
        multipliers = {
            pk: _multiplier(rows, replay.project, replay.query_vector, terms, rule) for pk, rows in weight_rows.items()
        }
        rankings.append([hit.chunk_id for hit in _ranked(candidates, multipliers, extra, replay.k)])
    return rankings


def _candidate_count(k: int) -> int:
    return max(200, k * 20)  # as chunks_ranked: candidates by similarity before weights reorder them


def _candidates_exact_many(
    replays: list[Replay],
) -> list[tuple[list[tuple[int, float]], dict[int, list[WeightRow]]]]:
    """In process: each vector's nearest chunks from the index, then every candidate's project and
    active weights in one read for all. A search whose project hides so many of its nearest chunks
    that fewer than its candidate count remain is ranked on its own (as search does it)."""
    hits = get_index().search_many(
        [replay.query_vector for replay in replays], [_candidate_count(replay.k) for replay in replays]
    )
    project_of: dict[int, int | None] = {}
    for ids in _batched({pk for found in hits for pk, _ in found}):
        project_of.update(Chunk.objects.filter(pk__in=ids).values_list("pk", "project_id"))
    system = Actor.for_system()
    kept: list[list[tuple[int, float]]] = []
    for replay, found in zip(replays, hits, strict=True):
        n = _candidate_count(replay.k)
        project_id = replay.project.pk if replay.project else None
        mine = [
            (pk, score)
            for pk, score in found
            if pk in project_of and (project_id is None or project_of[pk] in (None, project_id))
        ]
        if len(mine) < n and len(found) == n:
            mine = _candidates_exact(actor=system, project=replay.project, query_vector=replay.query_vector, n=n)
        kept.append(mine)
    weights: dict[int, list[tuple]] = {}
    for ids in _batched({pk for mine in kept for pk, _ in mine}):
        for chunk_id, *row in (
            RetrievalWeight.objects.filter(chunk_id__in=ids, status=WeightStatus.ACTIVE)
            .order_by("pk")
            .values_list(
                "chunk_id", "scope", "project_id", "query_anchors", "query_terms", "min_similarity", "multiplier"
            )
        ):
            weights.setdefault(chunk_id, []).append(tuple(row))
    return [(mine, {pk: weights[pk] for pk, _ in mine if pk in weights}) for mine in kept]


def _vector_literal(vector: np.ndarray) -> str:
    return "[" + ",".join(f"{float(x):.9g}" for x in vector) + "]"  # 9 digits: a float32 exactly


def _candidates_hnsw_many(
    replays: list[Replay],
) -> list[tuple[list[tuple[int, float]], dict[int, list[WeightRow]]]]:
    """PostgreSQL: every search's nearest chunks (within its project and organisation-wide ones)
    and their active weights, in one statement: a lateral HNSW lookup per search vector."""
    chunks = Chunk._meta.db_table
    weights = RetrievalWeight._meta.db_table
    # Composed only of table names; values are parameters.
    sql = (
        "WITH q (i, v, project_id, n) AS MATERIALIZED ("  # noqa: S608
        "SELECT i, v::vector, project_id, n FROM unnest(%s::int[], %s::text[], %s::bigint[], %s::int[]) "
        "AS t (i, v, project_id, n)) "
        "SELECT q.i, c.id, c.distance, w.scope, w.project_id, w.query_anchors, w.query_terms, w.min_similarity, "
        "w.multiplier FROM q CROSS JOIN LATERAL ("
        f"SELECT ch.id, ch.embedding <#> q.v AS distance FROM {chunks} ch "
        "WHERE q.project_id IS NULL OR ch.project_id = q.project_id OR ch.project_id IS NULL "
        "ORDER BY ch.embedding <#> q.v LIMIT q.n) c "
        f"LEFT JOIN LATERAL (SELECT * FROM {weights} w WHERE w.chunk_id = c.id AND w.status = %s "
        "AND (w.scope <> %s OR w.project_id = q.project_id) OFFSET 0) w ON true ORDER BY q.i, c.id, w.id"
    )
    params: list[Any] = [
        list(range(len(replays))),
        [_vector_literal(replay.query_vector) for replay in replays],
        [replay.project.pk if replay.project else None for replay in replays],
        [_candidate_count(replay.k) for replay in replays],
        WeightStatus.ACTIVE,
        WeightScope.PROJECT,
    ]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT set_config('hnsw.ef_search', %s, true), set_config('hnsw.iterative_scan', 'relaxed_order', true), "
            "set_config('hnsw.max_scan_tuples', %s, true)",
            [str(retrieval_settings.RETRIEVAL_HNSW_EF_SEARCH), str(retrieval_settings.RETRIEVAL_HNSW_MAX_SCAN_TUPLES)],
        )
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    found: list[tuple[dict[int, float], dict[int, list[WeightRow]]]] = [({}, {}) for _ in replays]
    for i, pk, distance, scope, project_id, anchors, terms, min_similarity, multiplier in rows:
        candidates, weight_rows = found[i]
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
    return [(list(candidates.items()), weight_rows) for candidates, weight_rows in found]
