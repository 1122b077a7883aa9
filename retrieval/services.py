"""Writes of retrieval: importing documents, searching (which records its trace), and feedback."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from django.db import transaction
from django.utils import timezone

from accounts.actors import Actor
from accounts.models import Project, ProjectMembership
from accounts.selectors import actor_may_use_project
from config.exceptions import AccessDenied, ApplicationError, Conflict, NotFoundError
from core.db import atomic_retrying_deadlocks
from core.embeddings import get_embedder
from core.text import digest
from feedback.models import EventFamily, Signal
from feedback.services.bulk import events_record_bulk
from feedback.services.events import EventInput
from retrieval.chunking import chunk_text
from retrieval.conf import retrieval_settings
from retrieval.index import bump_generation
from retrieval.models import (
    OUTCOMES,
    Chunk,
    Document,
    RetrievalFeedback,
    RetrievalQuery,
    RetrievalWeight,
    WeightScope,
    WeightStatus,
)
from retrieval.selectors import anchor_vectors, chunks_for_display, chunks_ranked, trace_get


@dataclass
class DocumentInput:
    id: str
    raw_text: str
    title: str = ""
    project_slug: str | None = None
    source_type: str = "text"
    source_system: str = ""
    url: str = ""
    participants: list = field(default_factory=list)
    source_created_at: datetime | None = None
    source_updated_at: datetime | None = None
    metadata: dict = field(default_factory=dict)


@dataclass
class ImportReport:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0


def _may_import(actor: Actor, slugs: set[str | None], projects: dict[str, Project]) -> None:
    if actor.sees_everything:
        return
    if actor.is_service:  # limited to projects: into those only, never organisation-wide
        if None in slugs or any(not actor.may_use_project(projects[s].pk) for s in slugs if s):
            raise AccessDenied("This service key may import only into the projects it is limited to.")
        return
    if actor.user is None or None in slugs:
        raise AccessDenied("Only staff admins and service keys import organisation-wide documents.")
    named = {s for s in slugs if s}
    admin_of = set(
        ProjectMembership.objects.filter(
            user=actor.user, role=ProjectMembership.Role.ADMIN, project__slug__in=named
        ).values_list("project__slug", flat=True)
    )
    if missing := named - admin_of:
        raise AccessDenied(f"You are not an admin of project {sorted(missing)[0]!r}.", field="project")


def documents_import(*, actor: Actor, items: Sequence[DocumentInput]) -> ImportReport:
    """Import documents: chunk, embed only content not seen before, and re-index; a document
    whose title and text are unchanged does no work at all."""
    slugs = {item.project_slug for item in items}
    projects = {p.slug: p for p in Project.objects.filter(slug__in=[s for s in slugs if s])}
    if unknown := {s for s in slugs if s} - set(projects):
        raise ApplicationError(f"No project {sorted(unknown)[0]!r}.", field="project")
    _may_import(actor, slugs, projects)
    for item in items:
        if not item.id or len(item.id) > 255:
            raise ApplicationError("Each document needs an id of 1 to 255 characters.", field="id")
        if not item.raw_text.strip():
            raise ApplicationError(f"Document {item.id!r} has no text.", field="raw_text")

    report = ImportReport()
    existing = dict(Document.objects.filter(pk__in=[i.id for i in items]).values_list("pk", "content_hash"))
    changed = []
    for item in items:
        content_hash = digest(item.title, item.raw_text)
        if existing.get(item.id) == content_hash:
            report.unchanged += 1
        else:
            changed.append(
                (item, content_hash, chunk_text(item.raw_text, max_chars=retrieval_settings.RETRIEVAL_CHUNK_CHARS))
            )
    if not changed:
        return report

    # Embed each distinct passage once; passages already embedded anywhere are reused.
    passage_hashes = {digest(p) for _, _, passages in changed for p in passages}
    known = dict(
        Chunk.objects.filter(content_hash__in=passage_hashes).values_list("content_hash", "embedding").distinct()
    )
    missing = sorted({p for _, _, passages in changed for p in passages if digest(p) not in known})
    if missing:
        for text, vector in zip(missing, get_embedder().embed(missing), strict=True):
            known[digest(text)] = vector.astype(np.float32).tobytes()
    report.chunks_embedded = len(missing)

    with transaction.atomic():
        for item, content_hash, passages in changed:
            fields = {
                "project": projects.get(item.project_slug) if item.project_slug else None,
                "source_type": item.source_type,
                "source_system": item.source_system,
                "title": item.title[:500],
                "url": item.url[:1000],
                "participants": item.participants,
                "source_created_at": item.source_created_at,
                "source_updated_at": item.source_updated_at,
                "raw_text": item.raw_text,
                "metadata": item.metadata,
                "content_hash": content_hash,
            }
            document, created = Document.objects.update_or_create(pk=item.id, defaults=fields)
            report.created += created
            report.updated += not created
            Chunk.objects.filter(document=document).delete()
            Chunk.objects.bulk_create(
                Chunk(
                    chunk_id=f"{document.pk}#{position}",
                    document=document,
                    position=position,
                    content=passage,
                    content_hash=digest(passage),
                    embedding=known[digest(passage)],
                )
                for position, passage in enumerate(passages)
            )
        report.chunks_reused = sum(len(p) for _, _, p in changed) - report.chunks_embedded
        bump_generation()
    return report


@dataclass
class SearchHit:
    rank: int
    score: float
    weight: float
    chunk: Chunk


@dataclass
class SearchResult:
    trace_id: str
    hits: list[SearchHit]


def search(
    *,
    actor: Actor,
    query: str,
    k: int = 10,
    project_slug: str | None = None,
    tool_name: str = "",
    session_id: str = "",
    target_id: str = "",
) -> SearchResult:
    """Rank the chunks the actor may read by similarity to the query; record the trace."""
    query = (query or "").strip()
    if not query:
        raise ApplicationError("query must not be empty.", field="query")
    max_k = retrieval_settings.RETRIEVAL_MAX_K
    if not 1 <= k <= max_k:
        raise ApplicationError(f"k must be between 1 and {max_k}.", field="k")
    project = None
    if project_slug:
        project = Project.objects.filter(slug=project_slug).first()
        if project is None:
            raise ApplicationError(f"No project {project_slug!r}.", field="project")
        if not actor_may_use_project(actor=actor, project=project):
            raise AccessDenied("You are not a member of this project.", field="project")
    vector = get_embedder().embed_one(query)
    ranked = chunks_ranked(actor=actor, query_vector=vector, project=project, k=k, query_text=query)
    chunks = chunks_for_display(chunk_ids=[hit.chunk_id for hit in ranked])
    hits = [
        SearchHit(rank=rank, score=hit.score, weight=hit.weight, chunk=chunks[hit.chunk_id])
        for rank, hit in enumerate(ranked, start=1)
    ]

    def record() -> RetrievalQuery:
        trace = RetrievalQuery.objects.create(
            user=actor.user,
            project=project,
            tool_name=tool_name[:100],
            session_id=session_id[:255],
            target_id=target_id[:255],
            query_text=query,
            embedding=vector,
            k=k,
        )
        RetrievalFeedback.objects.bulk_create(
            RetrievalFeedback(
                trace=trace,
                user=actor.user,
                project=project,
                target_id=target_id[:255],
                session_id=session_id[:255],
                tool_name=tool_name[:100],
                query_text=query,
                document_id=hit.chunk.document_id,
                chunk=hit.chunk,
                rank=hit.rank,
                score=hit.score,
                weight=hit.weight,
            )
            # One order for every writer: foreign-key row locks are taken in insertion order.
            for hit in sorted(hits, key=lambda hit: (hit.chunk.document_id, hit.rank))
        )
        return trace

    # A deadlock at COMMIT (the results' deferred foreign-key checks against a concurrent writer of
    # the documents) is retried: the search itself succeeded and the trace must not be lost.
    trace = atomic_retrying_deadlocks(record)
    return SearchResult(trace_id=str(trace.pk), hits=hits)


@dataclass
class ResultFeedback:
    chunk_id: str
    cited: bool | None = None
    used_in_answer: bool | None = None
    user_referenced: bool | None = None
    outcome: str | None = None


_SIGNAL_FOR_OUTCOME = {
    "helpful": Signal.POSITIVE,
    "unhelpful": Signal.NEGATIVE,
    "wrong_project": Signal.NEGATIVE,
    "stale": Signal.STALE,
    "unsupported": Signal.NEGATIVE,
    "unknown": Signal.IGNORED,
}


def retrieval_feedback_record(
    *, actor: Actor, trace_id: str, items: Sequence[ResultFeedback], answer_rating: str | None = None
) -> list[RetrievalFeedback]:
    """Mark traced results cited / used / referenced and their outcome. A downvoted answer marks
    the results it used ``unhelpful`` and the rest ``unknown``: evidence, never a verdict."""
    trace = trace_get(actor=actor, trace_id=trace_id)
    if trace is None:
        raise NotFoundError("No such trace.", field="trace_id")
    if answer_rating not in (None, "up", "down"):
        raise ApplicationError("answer_rating must be 'up' or 'down'.", field="answer_rating")
    with transaction.atomic():
        rows = {
            row.chunk.chunk_id: row for row in trace.results.select_for_update(of=("self",)).select_related("chunk")
        }
        for item in items:
            if item.chunk_id not in rows:
                raise ApplicationError(f"Chunk {item.chunk_id!r} is not in this trace.", field="chunk_id")
            if item.outcome is not None and item.outcome not in OUTCOMES:
                raise ApplicationError(f"Unknown outcome {item.outcome!r}.", field="outcome")
        changed: dict[str, RetrievalFeedback] = {}
        for item in items:
            row = rows[item.chunk_id]
            for name in ("cited", "used_in_answer", "user_referenced", "outcome"):
                value = getattr(item, name)
                if value is not None:
                    setattr(row, name, value)
            changed[item.chunk_id] = row
        if answer_rating == "down":
            for chunk_id, row in rows.items():
                if chunk_id in {i.chunk_id for i in items if i.outcome}:
                    continue
                row.outcome = "unhelpful" if (row.used_in_answer or row.cited) else "unknown"
                changed[chunk_id] = row
        # bulk_update does not run auto_now: the scan's rollups find marked rows by updated_at, and
        # searches that got feedback (even none used) by feedback_at.
        marked_at = timezone.now()
        RetrievalQuery.objects.filter(pk=trace.pk).update(feedback_at=marked_at)
        for row in changed.values():
            row.updated_at = marked_at
        RetrievalFeedback.objects.bulk_update(
            changed.values(), ["cited", "used_in_answer", "user_referenced", "outcome", "updated_at"]
        )
        events_record_bulk(
            actor=Actor.for_system(),
            items=[
                EventInput(
                    event_type="retrieval_result_feedback",
                    event_family=EventFamily.RETRIEVAL,
                    signal=Signal.POSITIVE
                    if (row.cited or row.used_in_answer) and row.outcome in ("helpful", "unknown")
                    else _SIGNAL_FOR_OUTCOME[row.outcome],
                    user_id=trace.user_id,
                    project_slug=trace.project.slug if trace.project else None,
                    session_id=trace.session_id,
                    surface=trace.tool_name or "search",
                    subject_type="chunk",
                    subject_id=chunk_id,
                    source_table=RetrievalFeedback._meta.db_table,
                    source_record_id=str(row.pk),
                    reason_category=row.outcome,
                    metadata={
                        "trace_id": str(trace.pk),
                        "rank": row.rank,
                        "cited": row.cited,
                        "used_in_answer": row.used_in_answer,
                        "answer_rating": answer_rating,
                    },
                )
                for chunk_id, row in changed.items()
            ],
        ) if changed else None
    return list(changed.values())


def weight_create(*, promotion_id: uuid.UUID, learning: dict) -> RetrievalWeight:
    """Create the weight an applied promotion describes; it supersedes the chunk's earlier
    active or paused weights of the same scope (and project). Once per promotion."""
    existing = RetrievalWeight.objects.filter(promotion_id=promotion_id).first()
    if existing is not None:
        return existing  # an apply delivered twice
    chunk = Chunk.objects.filter(pk=int(learning.get("chunk") or 0)).first()
    if chunk is None:
        raise Conflict(f"Chunk {learning.get('chunk')} no longer exists.", field="subject_id")
    scope = learning.get("scope")
    if scope not in WeightScope.values:
        raise ApplicationError(f"Unknown weight scope {scope!r}.", field="scope")
    project = Project.objects.filter(slug=learning["project"]).first() if learning.get("project") else None
    anchors = None
    if scope == WeightScope.QUERY:
        anchors = anchor_vectors(learning)
        if not len(anchors):
            raise Conflict("The queries this weight was learned from no longer exist.", field="anchor_traces")
    with transaction.atomic():
        RetrievalWeight.objects.filter(
            chunk=chunk, scope=scope, project=project, status__in=[WeightStatus.ACTIVE, WeightStatus.PAUSED]
        ).update(status=WeightStatus.SUPERSEDED)
        weight = RetrievalWeight.objects.create(
            chunk=chunk,
            document_id=chunk.document_id,
            scope=scope,
            project=project,
            query_anchors=anchors.ravel() if anchors is not None else None,
            min_similarity=learning.get("min_similarity"),
            query_terms=learning.get("anchor_terms") or [],
            multiplier=float(learning["multiplier"]),
            reason=str(learning.get("reason", ""))[:32],
            promotion_id=promotion_id,
        )
    return weight


def weight_set_status(*, promotion_id: uuid.UUID, status: str) -> int:
    """Pause, resume or supersede the weight a promotion made (0 if it has none)."""
    return RetrievalWeight.objects.filter(promotion_id=promotion_id).update(status=status)
