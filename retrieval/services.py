"""Writes of retrieval: importing documents, searching (which records its trace), and feedback."""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from accounts.actors import Actor
from accounts.models import Project, ProjectMembership
from accounts.selectors import actor_may_use_project
from config.exceptions import AccessDenied, ApplicationError, Conflict, NotFoundError
from core.db import atomic_retrying_deadlocks, commit_without_waiting_for_disk, insert_with_children
from core.embeddings import get_embedder
from core.text import digest
from feedback.models import EventFamily, Signal
from feedback.services.bulk import events_record_bulk
from feedback.services.events import EventInput
from retrieval import exploration
from retrieval.chunking import chunk_text
from retrieval.conf import retrieval_settings
from retrieval.hooks import documents_changed_notify
from retrieval.index import bump_generation
from retrieval.models import (
    OUTCOMES,
    Chunk,
    Document,
    RetrievalFeedback,
    RetrievalProjectSettings,
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
    # Of the changed documents: passages that kept their chunk (id, embedding, weights, traces),
    # chunks of changed or removed passages deleted, and the live weights those orphaned.
    chunks_kept: int = 0
    chunks_removed: int = 0
    weights_orphaned: int = 0


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


def _may_replace(
    actor: Actor, stored: Sequence[tuple[str, str, str | None]], *, checked: set[str | None], order: Sequence[str]
) -> None:
    """Replacing a stored document takes the right to import where it is now (its project, or
    organisation-wide), not only where it goes: else an admin of one project could overwrite, and
    take, another project's document by naming its id. The refusal names the first refused document
    in the request's ``order`` and does not say where it is."""
    held = {slug for _, _, slug in stored} - checked
    if not held:
        return
    projects = {p.slug: p for p in Project.objects.filter(slug__in=[s for s in held if s])}
    try:
        _may_import(actor, held, projects)
    except AccessDenied:
        where = {pk: slug for pk, _, slug in stored}
        refused: dict[str | None, bool] = {}
        for pk in order:  # which one: only on the way to a refusal
            if pk not in where or where[pk] in checked:
                continue
            if where[pk] not in refused:
                try:
                    _may_import(actor, {where[pk]}, projects)
                    refused[where[pk]] = False
                except AccessDenied:
                    refused[where[pk]] = True
            if refused[where[pk]]:
                raise AccessDenied(f"Document {pk!r} exists and you may not replace it.", field="id") from None
        raise


@dataclass(frozen=True)
class StoredPassage:
    """A chunk row as re-import sees it (no text, no embedding)."""

    pk: int
    position: int
    content_hash: str
    chunk_id: str


def passages_match(stored: Sequence[StoredPassage], hashes: Sequence[str]) -> tuple[dict[int, StoredPassage], list]:
    """Which stored chunk each passage of the new text keeps, by content hash: the k-th occurrence of a
    passage in the new text keeps the k-th stored chunk with that content (by old position), so
    duplicates are matched in order and the same inputs always give the same answer. Returns
    {new position: stored chunk kept} and the stored chunks no passage kept (changed or removed)."""
    queues: dict[str, deque[StoredPassage]] = {}
    for row in sorted(stored, key=lambda row: row.position):
        queues.setdefault(row.content_hash, deque()).append(row)
    kept: dict[int, StoredPassage] = {}
    for position, content_hash in enumerate(hashes):
        queue = queues.get(content_hash)
        if queue:
            kept[position] = queue.popleft()
    return kept, [row for queue in queues.values() for row in queue]


def _new_chunk_id(document_id: str, position: int, taken: set[str]) -> str:
    """``<document>#<position>`` as on a first import, unless a kept (moved) passage of the document
    holds it: then ``<document>#<position>.<n>``. A kept passage keeps its chunk_id wherever it moves."""
    chunk_id = f"{document_id}#{position}"
    n = 0
    while chunk_id in taken:
        n += 1
        chunk_id = f"{document_id}#{position}.{n}"
    taken.add(chunk_id)
    return chunk_id


# Kept passages that move are parked above every real position first: (document, position) is unique.
_PARKED = 1 << 30
_BATCH = 2000


def documents_import(*, actor: Actor, items: Sequence[DocumentInput]) -> ImportReport:
    """Import documents: chunk, embed only content not seen before, and re-index; a document
    whose title and text are unchanged does no work at all. A re-imported passage whose content is
    unchanged keeps its chunk (id, chunk_id, embedding, weights and traces) even if it moved; the
    chunks of changed or removed passages go, their live weights become ``orphaned`` (one audit event
    each) and their traces stay with no chunk."""
    slugs = {item.project_slug for item in items}
    named = {s for s in slugs if s}
    projects = {p.slug: p for p in Project.objects.filter(slug__in=named)}
    if unknown := named - set(projects):
        raise ApplicationError(f"No project {sorted(unknown)[0]!r}.", field="project")
    for item in items:
        if not item.id or len(item.id) > 255:
            raise ApplicationError("Each document needs an id of 1 to 255 characters.", field="id")
        if not item.raw_text.strip():
            raise ApplicationError(f"Document {item.id!r} has no text.", field="raw_text")
    latest = {item.id: item for item in items}  # a document named twice in one batch: the last wins
    stored = list(Document.objects.filter(pk__in=list(latest)).values_list("pk", "content_hash", "project__slug"))
    # A stored document imported without a project stays where it is (``_same``): it takes the right to replace
    # it there, not the right to import organisation-wide. Refused, the answer is the one a new document without a
    # project gets, so that nobody learns from it whether, or where, a document exists.
    kept_where = {pk for pk, _, _ in stored if latest[pk].project_slug is None}
    _may_import(actor, {item.project_slug for item in latest.values() if item.id not in kept_where}, projects)
    try:
        _may_replace(actor, [row for row in stored if row[0] in kept_where], checked=set(), order=list(latest))
    except AccessDenied:
        _may_import(actor, {None}, projects)
        raise
    _may_replace(actor, [row for row in stored if row[0] not in kept_where], checked=set(named), order=list(latest))

    report = ImportReport()
    report.unchanged += len(items) - len(latest)
    existing = {pk: (content_hash, slug) for pk, content_hash, slug in stored}
    changed: list[tuple[DocumentInput, str, list[str]]] = []
    for item in latest.values():
        content_hash = digest(item.title, item.raw_text)
        if _same(existing.get(item.id), content_hash, item.project_slug):
            report.unchanged += 1
        else:
            passages = chunk_text(item.raw_text, max_chars=retrieval_settings.RETRIEVAL_CHUNK_CHARS)
            changed.append((item, content_hash, passages))
    if not changed:
        return report

    # Embed, before the transaction, the passages that will need a new chunk row: those the stored
    # version of their document lacks (a stale guess under a concurrent import is made good inside).
    stored_hashes: dict[str, set[str]] = {}
    for document_id, content_hash in Chunk.objects.filter(document_id__in=[c[0].id for c in changed]).values_list(
        "document_id", "content_hash"
    ):
        stored_hashes.setdefault(document_id, set()).add(content_hash)
    wanted = {
        digest(p) for item, _, passages in changed for p in passages if digest(p) not in stored_hashes.get(item.id, ())
    }
    known = _embeddings_by_hash(wanted)
    missing = sorted(
        {p for _, _, passages in changed for p in passages if digest(p) in wanted and digest(p) not in known}
    )
    if missing:
        for text, vector in zip(missing, get_embedder().embed(missing), strict=True):
            known[digest(text)] = vector.astype(np.float32).tobytes()
    report.chunks_embedded = len(missing)
    report.chunks_reused = sum(len(p) for _, _, p in changed) - report.chunks_embedded

    def write(checked_where: dict[str, str | None]) -> ImportReport:
        result = replace(report)
        _documents_store(changed=changed, projects=projects, known=known, report=result, checked=checked_where)
        return result

    # Search traces take share locks on the chunks and documents they point at: a deadlock with one
    # is broken by the database, and the import runs again from its first read.
    checked_where: dict[str, str | None] = {pk: slug for pk, _, slug in stored}
    return atomic_retrying_deadlocks(lambda: write(checked_where))


def _same(held: tuple[str, str | None] | None, content_hash: str, project: str | None) -> bool:
    """Whether a stored document (its content hash and project) is what the import asks for. An
    import that names no project leaves the document where it is: a connector re-syncing a document
    does not know the project attribution or a reviewer gave it since."""
    return held is not None and held[0] == content_hash and (project is None or project == held[1])


def _embeddings_by_hash(hashes: set[str]) -> dict[str, np.ndarray | bytes]:
    """Embeddings already stored for these passage hashes (one per hash: equal passages, equal vectors)."""
    found: dict[str, np.ndarray | bytes] = {}
    ordered = sorted(hashes)
    for start in range(0, len(ordered), _BATCH):
        rows = (
            Chunk.objects.filter(content_hash__in=ordered[start : start + _BATCH])
            .order_by()
            .values_list("content_hash", "embedding")
            .distinct()
        )
        for content_hash, vector in rows:
            found.setdefault(content_hash, vector)
    return found


def _documents_store(
    *,
    changed: list[tuple[DocumentInput, str, list[str]]],
    projects: dict[str, Project],
    known: dict[str, np.ndarray | bytes],
    report: ImportReport,
    checked: dict[str, str | None],
) -> None:
    """The import's transaction: lock each document (in id order, so two imports never wait on
    each other in a circle), match its passages to its stored chunks, then delete, move and insert."""
    removed: list[tuple[StoredPassage, Document]] = []
    moves: dict[int, int] = {}
    inserts: list[Chunk] = []
    stored_ids: list[str] = []
    for item, content_hash, passages in sorted(changed, key=lambda change: change[0].id):
        current = (
            Document.objects.select_for_update(of=("self",))
            .filter(pk=item.id)
            .values_list("content_hash", "project__slug", "project_id")
            .first()
        )
        if _same(current[:2] if current else None, content_hash, item.project_slug):
            report.unchanged += 1  # a concurrent import stored this very document meanwhile
            continue
        if (current is None) != (item.id not in checked) or (current is not None and current[1] != checked[item.id]):
            # Created, deleted or moved since the rights were checked: they were checked for where it was.
            raise Conflict(f"Document {item.id!r} changed while it was being imported; send it again.", field="id")
        # Not named: where it is now (organisation-wide when new).
        project_id = projects[item.project_slug].pk if item.project_slug else (current[2] if current else None)
        document, created = Document.objects.update_or_create(
            pk=item.id,
            defaults={
                "project_id": project_id,
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
            },
        )
        report.created += created
        report.updated += not created
        stored_ids.append(document.pk)
        stored = [
            StoredPassage(*row)
            for row in Chunk.objects.filter(document=document).values_list("pk", "position", "content_hash", "chunk_id")
        ]
        hashes = [digest(p) for p in passages]
        kept, gone = passages_match(stored, hashes)
        removed.extend((row, document) for row in gone)
        report.chunks_kept += len(kept)
        taken = {row.chunk_id for row in kept.values()}
        for position, passage in enumerate(passages):
            row = kept.get(position)
            if row is not None:
                if row.position != position:
                    moves[row.pk] = position
                continue
            if hashes[position] not in known:  # a concurrent import removed a passage we meant to keep
                known.update(_embeddings_by_hash({hashes[position]}))
                if hashes[position] not in known:
                    known[hashes[position]] = get_embedder().embed([passage])[0].astype(np.float32).tobytes()
                    report.chunks_embedded += 1
            inserts.append(
                Chunk(
                    chunk_id=_new_chunk_id(document.pk, position, taken),
                    document=document,
                    position=position,
                    content=passage,
                    content_hash=hashes[position],
                    embedding=known[hashes[position]],
                )
            )
    if removed:
        report.weights_orphaned += _weights_orphan(removed=removed)
        pks = [row.pk for row, _ in removed]
        for start in range(0, len(pks), _BATCH):
            # Traces and superseded weights of these chunks keep their rows (chunk set NULL).
            Chunk.objects.filter(pk__in=pks[start : start + _BATCH]).only("pk").delete()
        report.chunks_removed += len(pks)
    if moves:
        moved = sorted(moves)
        for start in range(0, len(moved), _BATCH):
            Chunk.objects.filter(pk__in=moved[start : start + _BATCH]).update(position=F("position") + _PARKED)
        Chunk.objects.bulk_update(
            [Chunk(pk=pk, position=moves[pk]) for pk in moved], ["position"], batch_size=_BATCH // 4
        )
    if inserts:
        Chunk.objects.bulk_create(inserts, batch_size=_BATCH // 4)
    if removed or inserts:
        bump_generation()  # the set of vectors changed (a kept chunk that only moved keeps its vector)
    # Attribution and compilation of what changed start in this same transaction (retrieval.hooks).
    documents_changed_notify(document_ids=stored_ids)


def _weights_orphan(*, removed: list[tuple[StoredPassage, Document]]) -> int:
    """Mark the live (active or paused) weights of these chunks ``orphaned`` and detach them, with one
    audit event each on the promotion that made it; returns how many. Search and the scan never
    read an orphaned weight, and its promotion can then only be superseded."""
    passages = {row.pk: (row, document) for row, document in removed}
    live: list[RetrievalWeight] = []
    pks = sorted(passages)
    for start in range(0, len(pks), _BATCH):
        # The chunks first: an apply that locked one of them has committed its weight by now (and
        # is read below), or will find the chunk gone.
        list(Chunk.objects.select_for_update().filter(pk__in=pks[start : start + _BATCH]).values_list("pk"))
        live.extend(
            RetrievalWeight.objects.select_for_update(of=("self",))
            .select_related("project")
            .filter(chunk_id__in=pks[start : start + _BATCH], status__in=[WeightStatus.ACTIVE, WeightStatus.PAUSED])
            .order_by("pk")
        )
    if not live:
        return 0
    RetrievalWeight.objects.filter(pk__in=[w.pk for w in live]).update(
        status=WeightStatus.ORPHANED, chunk=None, updated_at=timezone.now()
    )
    events = []
    for weight in live:
        row, document = passages[weight.chunk_id or 0]  # as read before the update (never None)
        events.append(
            EventInput(
                event_type="retrieval_weight_orphaned",
                event_family=EventFamily.WORKFLOW_OUTCOME,
                signal=Signal.STALE,
                project_slug=weight.project.slug if weight.project else None,
                surface="retrieval_import",
                subject_type="promotion" if weight.promotion_id else "retrieval_weight",
                subject_id=str(weight.promotion_id or weight.pk),
                source_table=RetrievalWeight._meta.db_table,
                source_record_id=str(weight.pk),
                reason_category="retrieval_weight",
                free_text=(
                    f"Weight {weight.pk} orphaned: passage {row.chunk_id} of document {document.pk!r} "
                    "changed or was removed by a re-import."
                ),
                before_snapshot={
                    "weight_status": weight.status,
                    "chunk": row.pk,
                    "chunk_id": row.chunk_id,
                    "position": row.position,
                    "content_hash": row.content_hash,
                },
                after_snapshot={
                    "weight_status": WeightStatus.ORPHANED,
                    "document": document.pk,
                    "document_content_hash": document.content_hash,
                },
            )
        )
    system = Actor.for_system()
    for start in range(0, len(events), 1000):  # the event writer takes at most 1,000 at a time
        events_record_bulk(actor=system, items=events[start : start + 1000])
    return len(live)


@dataclass
class SearchHit:
    rank: int  # as displayed
    score: float
    weight: float
    chunk: Chunk
    natural_rank: int = 0  # where its score ranked it (differs from rank only when explored)
    explored: bool = False  # exploration placed it at this rank


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
    """Rank the chunks the actor may read by similarity to the query; record the trace. A share of
    searches explores (``retrieval.exploration``): the results are returned, and traced, in the
    order displayed."""
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
    exploring = exploration.plan(project=project, k=k)
    ranked = chunks_ranked(actor=actor, query_vector=vector, project=project, k=k + exploring.pool, query_text=query)
    if exploring.explored and exploring.seed is not None:
        page = exploration.arrange(ranked, k=k, first=exploring.first, seed=exploring.seed)
    else:
        page = [(hit, rank, False) for rank, hit in enumerate(ranked[:k], start=1)]
    chunks = chunks_for_display(chunk_ids=[hit.chunk_id for hit, _, _ in page])
    hits = [
        SearchHit(
            rank=rank,
            score=hit.score,
            weight=hit.weight,
            chunk=chunks[hit.chunk_id],
            natural_rank=natural_rank,
            explored=explored,
        )
        for rank, (hit, natural_rank, explored) in enumerate(page, start=1)
    ]

    trace = RetrievalQuery(
        user=actor.user,
        project=project,
        tool_name=tool_name[:100],
        session_id=session_id[:255],
        target_id=target_id[:255],
        query_text=query,
        embedding=vector,
        k=k,
        exploration_share=exploring.share,
        explored=exploring.explored,
        exploration_seed=exploring.seed,
        exploration_first=exploring.first if exploring.explored else None,
        exploration_pool=exploring.pool if exploring.explored else None,
    )
    results = [
        RetrievalFeedback(
            user=actor.user,
            project=project,
            target_id=target_id[:255],
            session_id=session_id[:255],
            tool_name=tool_name[:100],
            query_text=query,
            document_id=hit.chunk.document_id,
            chunk_id=hit.chunk.pk,
            rank=hit.rank,
            score=hit.score,
            weight=hit.weight,
            natural_rank=hit.natural_rank,
            explored=hit.explored,
        )
        # One order for every writer: foreign-key row locks are taken in insertion order.
        for hit in sorted(hits, key=lambda hit: (hit.chunk.document_id, hit.rank))
    ]

    # The trace and its results in one statement (PostgreSQL). A deadlock at COMMIT (the results'
    # deferred foreign-key checks against a concurrent writer of the documents) is retried: the
    # search itself succeeded and the trace must not be lost to it.
    def write() -> None:
        commit_without_waiting_for_disk()  # an observation: the answer is the results
        insert_with_children(
            parent=trace,
            children=results,
            link="trace",
            varying=("document", "chunk", "rank", "score", "weight", "natural_rank", "explored"),
        )

    atomic_retrying_deadlocks(write)
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


_PASSAGE_REPORTS = frozenset({"stale", "wrong_project", "unsupported"})


def retrieval_feedback_record(
    *, actor: Actor, trace_id: str, items: Sequence[ResultFeedback], answer_rating: str | None = None
) -> list[RetrievalFeedback]:
    """Mark traced results cited / used / referenced and their outcome. A downvoted answer marks
    the results it used ``unhelpful`` and the rest ``unknown``; an upvoted one marks the results it
    used ``helpful`` and leaves the rest as they are. Evidence, never a verdict: the scan weighs it
    with everything else (a vote is about the answer, and the results it used are what it was made of)."""
    trace = trace_get(actor=actor, trace_id=trace_id)
    if trace is None:
        raise NotFoundError("No such trace.", field="trace_id")
    if answer_rating not in (None, "up", "down"):
        raise ApplicationError("answer_rating must be 'up' or 'down'.", field="answer_rating")
    with transaction.atomic():
        # A result whose passage a re-import changed or removed has no chunk any more: it cannot be marked.
        rows = {
            row.chunk.chunk_id: row
            for row in trace.results.select_for_update(of=("self",)).select_related("chunk")
            if row.chunk is not None
        }
        for item in items:
            if item.chunk_id not in rows:
                raise ApplicationError(
                    f"Chunk {item.chunk_id!r} is not in this trace (or a re-import has since changed or removed it).",
                    field="chunk_id",
                )
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
        if answer_rating is not None:
            explicit = {i.chunk_id for i in items if i.outcome}
            for chunk_id, row in rows.items():
                # A vote is about the answer: it never overrides an outcome sent with this call, nor a
                # report about the passage itself (stale, wrong project, unsupported) from an earlier one.
                if chunk_id in explicit or row.outcome in _PASSAGE_REPORTS:
                    continue
                used = row.used_in_answer or row.cited
                if answer_rating == "down":
                    row.outcome = "unhelpful" if used else "unknown"
                elif used:
                    row.outcome = "helpful"
                else:
                    continue
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


def _orphaned(weight: RetrievalWeight, action: str) -> Conflict:
    return Conflict(
        f"Retrieval weight {weight.pk} of this promotion is orphaned: the passage it was learned on "
        f"(in document {weight.document_id!r}) changed or was removed by a re-import, so there is nothing to "
        f"{action}. Supersede the promotion to close it.",
        field="status",
    )


def weight_create(*, promotion_id: uuid.UUID, learning: dict) -> RetrievalWeight:
    """Create the weight an applied promotion describes; it supersedes the chunk's earlier
    active or paused weights of the same scope (and project). Once per promotion."""
    existing = RetrievalWeight.objects.filter(promotion_id=promotion_id).first()
    if existing is not None:
        if existing.status == WeightStatus.ORPHANED:
            raise _orphaned(existing, "apply")
        return existing  # an apply delivered twice
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
        # Locked: a re-import that removes this passage waits for the weight and orphans it, or
        # removed it first and the apply is refused.
        chunk = Chunk.objects.select_for_update(no_key=True).filter(pk=int(learning.get("chunk") or 0)).first()
        if chunk is None:
            raise Conflict(
                f"Chunk {learning.get('chunk')} no longer exists: a re-import changed or removed its passage, "
                "or its document was deleted. Supersede this promotion.",
                field="subject_id",
            )
        RetrievalWeight.objects.filter(
            chunk=chunk, scope=scope, project=project, status__in=[WeightStatus.ACTIVE, WeightStatus.PAUSED]
        ).update(status=WeightStatus.SUPERSEDED)
        weight = RetrievalWeight.objects.create(
            chunk=chunk,
            document_id=chunk.document_id,
            content_hash=chunk.content_hash,
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


_ACTION_FOR_STATUS: dict[str, str] = {WeightStatus.PAUSED: "pause", WeightStatus.ACTIVE: "resume"}


def weight_set_status(*, promotion_id: uuid.UUID, status: str) -> RetrievalWeight | None:
    """Pause, resume or supersede the weight a promotion made; returns it (None: superseding a
    promotion that never made one). An orphaned weight refuses pause and resume with a 409 that names
    it, and superseding leaves it orphaned (nothing applies it any more); a weight that is gone (its
    document was deleted) refuses pause and resume likewise, rather than "succeeding" on nothing."""
    with transaction.atomic():
        weight = RetrievalWeight.objects.select_for_update().filter(promotion_id=promotion_id).first()
        if weight is None:
            if status == WeightStatus.SUPERSEDED:
                return None
            raise Conflict(
                "This promotion's retrieval weight no longer exists (its document was deleted); "
                f"there is nothing to {_ACTION_FOR_STATUS.get(status, status)}. Supersede the promotion to close it.",
                field="destination_record_id",
            )
        if weight.status == WeightStatus.ORPHANED:
            if status == WeightStatus.SUPERSEDED:
                return weight
            raise _orphaned(weight, _ACTION_FOR_STATUS.get(status, status))
        weight.status = status
        weight.save(update_fields=["status", "updated_at"])
    return weight


def project_settings_set(
    *, actor: Actor, project_slug: str, exploration_share: float | None
) -> RetrievalProjectSettings:
    """Set a project's own share of explored searches (None: back to the deployment's default).
    Staff admins, service keys (within their projects) and the project's admins."""
    project = Project.objects.filter(slug=project_slug).first()
    if project is None:
        raise ApplicationError(f"No project {project_slug!r}.", field="project")
    if actor.is_service:
        allowed = actor.may_use_project(project.pk)
    else:
        allowed = actor.sees_everything or (
            actor.user is not None
            and actor.may_use_project(project.pk)
            and ProjectMembership.objects.filter(
                user=actor.user, project=project, role=ProjectMembership.Role.ADMIN
            ).exists()
        )
    if not allowed:
        raise AccessDenied("Only staff admins and the project's admins change its retrieval settings.", field="project")
    if exploration_share is not None and not 0.0 <= exploration_share <= 1.0:
        raise ApplicationError("exploration_share must be between 0 and 1, or null.", field="exploration_share")
    row, _ = RetrievalProjectSettings.objects.update_or_create(
        project=project, defaults={"exploration_share": exploration_share}
    )
    return row


def document_set_project(*, document: Document, project_id: int | None) -> Document:
    """Set the project a document belongs to (attribution, or a reviewer's decision): its search
    visibility follows. The caller holds the document's row lock."""
    document.project_id = project_id
    document.save(update_fields=["project", "updated_at"])
    return document
