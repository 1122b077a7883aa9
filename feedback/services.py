"""The one event writer every surface calls, and task ratings.

A write either stores the event (or returns the original one for a repeated
``idempotency_key``) or raises an :class:`~config.exceptions.ApplicationError`: nothing
is ever dropped silently, and a bulk write stores all of its events or none.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction

from accounts.actors import Actor
from accounts.models import Project, ProjectMembership, User
from config.exceptions import AccessDenied, ApplicationError, Conflict
from feedback.models import (
    PRIVATE_FAMILIES,
    PRIVATE_SUBJECT_TYPES,
    EventFamily,
    FeedbackEvent,
    Signal,
    TaskFeedback,
)

SNAPSHOT_FIELDS = ("before_snapshot", "after_snapshot", "source_context", "metadata")
SHORT_TEXT_LIMITS = {
    "event_type": 100,
    "surface": 100,
    "subject_type": 100,
    "subject_id": 255,
    "target_id": 255,
    "session_id": 255,
    "source_table": 100,
    "source_record_id": 255,
    "reason_category": 100,
    "idempotency_key": 255,
}
# The fields a repeated idempotency key must agree on with the stored event.
COMPARED_FIELDS = (
    "event_type",
    "event_family",
    "signal",
    "user_id",
    "project_id",
    "target_id",
    "session_id",
    "source_table",
    "source_record_id",
    "surface",
    "subject_type",
    "subject_id",
    "reason_category",
    "free_text",
    "before_snapshot",
    "after_snapshot",
    "source_context",
    "metadata",
)


@dataclass
class EventInput:
    """What a surface reports; ``user_id`` None means the actor's own user."""

    event_type: str
    event_family: str
    signal: str
    user_id: int | None = None
    project_slug: str | None = None
    target_id: str = ""
    session_id: str = ""
    source_table: str = ""
    source_record_id: str = ""
    surface: str = ""
    subject_type: str = ""
    subject_id: str = ""
    reason_category: str = ""
    free_text: str = ""
    before_snapshot: Any = None
    after_snapshot: Any = None
    source_context: dict = field(default_factory=dict)
    metadata: dict = field(default_factory=dict)
    private: bool = False
    idempotency_key: str | None = None


@dataclass(frozen=True)
class EventWrite:
    event: FeedbackEvent
    created: bool  # False: an earlier write with the same idempotency key


class BulkWriteError(ApplicationError):
    """Some items of a bulk write are invalid; nothing was written."""

    def __init__(self, items: list[dict[str, Any]], total: int) -> None:
        super().__init__(
            f"{len(items)} of {total} events are invalid; nothing was written.",
            fields={"events": [f"item {item['index']} is invalid" for item in items]},
            extra={"items": [{"index": item["index"], "fields": item["fields"]} for item in items]},
        )
        self.items = items
        statuses = {item.get("status", 400) for item in items}
        # One kind of failure keeps its own status (403, 409); a mix is a plain 400.
        self.status_code = statuses.pop() if len(statuses) == 1 else 400
        if self.status_code == 403:
            self.code = "permission_denied"
        elif self.status_code == 409:
            self.code = "conflict"


class _Lookups:
    """Projects, users and memberships a write needs, each fetched once per call."""

    def __init__(self, actor: Actor, inputs: Sequence[EventInput]) -> None:
        slugs = {i.project_slug for i in inputs if i.project_slug}
        self.projects = {p.slug: p for p in Project.objects.filter(slug__in=slugs)} if slugs else {}
        self.member_of: set[int] = set()
        if actor.user is not None and not actor.sees_everything and self.projects:
            self.member_of = set(
                ProjectMembership.objects.filter(
                    user=actor.user, project_id__in=[p.pk for p in self.projects.values()]
                ).values_list("project_id", flat=True)
            )
        user_ids = {i.user_id for i in inputs if i.user_id is not None}
        self.user_ids: set[int] = set()
        if actor.is_service and user_ids:
            self.user_ids = set(User.objects.filter(pk__in=user_ids).values_list("pk", flat=True))


def _json_size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), default=str).encode())


def snapshot_fields_check(fields: dict[str, Any]) -> None:
    """For services that build a snapshot from several caller fields: refuse one that the stream
    would refuse (over FEEDBACK_MAX_SNAPSHOT_BYTES as JSON), naming the caller's largest field."""
    limit = settings.FEEDBACK_MAX_SNAPSHOT_BYTES
    if _json_size(fields) > limit:
        name = max(fields, key=lambda key: _json_size(fields[key]))
        raise ApplicationError(f"{name} is too large to store (over {limit} bytes as JSON).", field=name)


def _build_event(actor: Actor, data: EventInput, lookups: _Lookups) -> FeedbackEvent:
    """Check one input against the design's rules and return the unsaved event."""
    if data.event_family not in EventFamily.values:
        raise ApplicationError(
            f"Unknown event family {data.event_family!r}; expected one of {', '.join(EventFamily.values)}.",
            field="event_family",
        )
    if data.signal not in Signal.values:
        raise ApplicationError(
            f"Unknown signal {data.signal!r}; expected one of {', '.join(Signal.values)}.", field="signal"
        )
    if not (data.event_type or "").strip():
        raise ApplicationError("event_type is required.", field="event_type")
    for name, limit in SHORT_TEXT_LIMITS.items():
        value = getattr(data, name)
        if value is not None and len(value) > limit:
            raise ApplicationError(f"{name} is at most {limit} characters.", field=name)
    if len(data.free_text) > settings.FEEDBACK_MAX_TEXT_CHARS:
        raise ApplicationError(
            f"free_text is at most {settings.FEEDBACK_MAX_TEXT_CHARS} characters.", field="free_text"
        )
    for name in SNAPSHOT_FIELDS:
        value = getattr(data, name)
        if name in ("source_context", "metadata") and not isinstance(value, dict):
            raise ApplicationError(f"{name} must be a JSON object.", field=name)
        if value is not None and _json_size(value) > settings.FEEDBACK_MAX_SNAPSHOT_BYTES:
            raise ApplicationError(f"{name} is larger than {settings.FEEDBACK_MAX_SNAPSHOT_BYTES} bytes.", field=name)

    # Whom the event is about: a user writes only as themself; a service names anyone.
    if actor.is_service:
        if data.user_id is not None and data.user_id not in lookups.user_ids:
            raise ApplicationError(f"No user with id {data.user_id}.", field="user_id")
        user_id = data.user_id if data.user_id is not None else (actor.user.pk if actor.user else None)
    else:
        if actor.user is None:
            raise AccessDenied("Authentication required.")
        if data.user_id is not None and data.user_id != actor.user.pk:
            raise AccessDenied("A user may write events only as themself.", field="user_id")
        user_id = actor.user.pk

    project = None
    if data.project_slug:
        project = lookups.projects.get(data.project_slug)
        if project is None:
            raise ApplicationError(f"No project {data.project_slug!r}.", field="project")
        if not actor.sees_everything and project.pk not in lookups.member_of:
            raise AccessDenied("You are not a member of this project.", field="project")

    private = data.private or data.event_family in PRIVATE_FAMILIES or data.subject_type in PRIVATE_SUBJECT_TYPES
    return FeedbackEvent(
        user_id=user_id,
        project=project,
        target_id=data.target_id,
        session_id=data.session_id,
        source_table=data.source_table,
        source_record_id=data.source_record_id,
        event_type=data.event_type.strip(),
        event_family=data.event_family,
        surface=data.surface,
        subject_type=data.subject_type,
        subject_id=data.subject_id,
        signal=data.signal,
        reason_category=data.reason_category,
        free_text=data.free_text,
        before_snapshot=data.before_snapshot,
        after_snapshot=data.after_snapshot,
        source_context=data.source_context,
        metadata=data.metadata,
        private=private,
        writer=actor.writer_id,
        idempotency_key=data.idempotency_key or None,
    )


def _replay(existing: FeedbackEvent, attempted: FeedbackEvent) -> EventWrite:
    """The original event for a repeated key, or a conflict if the payload changed."""
    for name in COMPARED_FIELDS:
        if getattr(existing, name) != getattr(attempted, name):
            raise Conflict(
                f"idempotency_key {existing.idempotency_key!r} was already used for a different event "
                f"(field {name} differs).",
                field="idempotency_key",
            )
    return EventWrite(event=existing, created=False)


def event_record(*, actor: Actor, data: EventInput) -> EventWrite:
    """Append one event to the stream (or return the original for a repeated idempotency key)."""
    event = _build_event(actor, data, _Lookups(actor, [data]))
    # Insert first: a repeated key is the rare case, so it costs the round trip, not every write.
    try:
        _insert(event)
    except IntegrityError:
        if not event.idempotency_key:
            raise
        existing = FeedbackEvent.objects.filter(writer=event.writer, idempotency_key=event.idempotency_key).first()
        if existing is None:
            raise
        return _replay(existing, event)
    return EventWrite(event=event, created=True)


def _insert(event: FeedbackEvent) -> None:
    """One INSERT. Inside a caller's transaction it gets a savepoint, so a refused insert
    (a repeated idempotency key) leaves the caller's transaction usable; in autocommit
    it is a single round trip and a refused insert leaves nothing behind."""
    if connection.in_atomic_block:
        with transaction.atomic():
            event.save(force_insert=True)
    else:
        event.save(force_insert=True)


def events_record_bulk(*, actor: Actor, items: Sequence[EventInput]) -> list[EventWrite]:
    """Append many events in one transaction: all are stored, or none and every bad item is named."""
    limit = settings.FEEDBACK_BULK_MAX_EVENTS
    if not items:
        raise ApplicationError("events must contain at least one event.", field="events")
    if len(items) > limit:
        raise ApplicationError(f"At most {limit} events per bulk request; got {len(items)}.", field="events")

    lookups = _Lookups(actor, items)
    built: list[FeedbackEvent | None] = []
    errors: list[dict[str, Any]] = []
    seen_keys: dict[str, int] = {}
    for index, data in enumerate(items):
        try:
            event = _build_event(actor, data, lookups)
            if event.idempotency_key:
                if event.idempotency_key in seen_keys:
                    raise ApplicationError(
                        f"idempotency_key repeats item {seen_keys[event.idempotency_key]} of this request.",
                        field="idempotency_key",
                    )
                seen_keys[event.idempotency_key] = index
            built.append(event)
        except ApplicationError as exc:
            errors.append(
                {"index": index, "status": exc.status_code, "fields": exc.fields or {"non_field_errors": [exc.message]}}
            )
            built.append(None)
    if errors:
        raise BulkWriteError(errors, len(items))
    events: list[FeedbackEvent] = [e for e in built if e is not None]

    for attempt in (1, 2):
        existing = _existing_by_key(actor.writer_id, seen_keys)
        results: list[EventWrite] = []
        fresh: list[FeedbackEvent] = []
        replay_errors: list[dict[str, Any]] = []
        for index, event in enumerate(events):
            if event.idempotency_key and event.idempotency_key in existing:
                try:
                    results.append(_replay(existing[event.idempotency_key], event))
                except Conflict as exc:
                    replay_errors.append({"index": index, "status": 409, "fields": exc.fields})
            else:
                results.append(EventWrite(event=event, created=True))
                fresh.append(event)
        if replay_errors:
            raise BulkWriteError(replay_errors, len(items))
        try:
            with transaction.atomic():
                FeedbackEvent.objects.bulk_create(fresh, batch_size=500)
            return results
        except IntegrityError:
            if attempt == 2 or not seen_keys:
                raise
            # A concurrent request stored some of these keys meanwhile: replay them.
    raise AssertionError("unreachable")


def _existing_by_key(writer: str, keys: Iterable[str]) -> dict[str, FeedbackEvent]:
    keys = list(keys)
    if not keys:
        return {}
    return {str(e.idempotency_key): e for e in FeedbackEvent.objects.filter(writer=writer, idempotency_key__in=keys)}


def task_feedback_record(
    *,
    actor: Actor,
    task_snapshot: dict,
    rating: str,
    reason: str = "",
    completed: bool = False,
    project_slug: str | None = None,
    user_id: int | None = None,
    surface: str = "",
    idempotency_key: str | None = None,
) -> tuple[TaskFeedback, bool]:
    """Rate a generated task and append its normalized ``task_generation`` event, atomically."""
    if rating not in TaskFeedback.Rating.values:
        raise ApplicationError(f"Unknown rating {rating!r}; use 'good' or 'bad'.", field="rating")
    if not isinstance(task_snapshot, dict) or not task_snapshot:
        raise ApplicationError("task_snapshot must be a non-empty JSON object.", field="task_snapshot")
    if _json_size(task_snapshot) > settings.FEEDBACK_MAX_SNAPSHOT_BYTES:
        raise ApplicationError(
            f"task_snapshot is larger than {settings.FEEDBACK_MAX_SNAPSHOT_BYTES} bytes.", field="task_snapshot"
        )
    if len(reason) > settings.FEEDBACK_MAX_TEXT_CHARS:
        raise ApplicationError(f"reason is at most {settings.FEEDBACK_MAX_TEXT_CHARS} characters.", field="reason")

    data = EventInput(
        event_type="task_rated",
        event_family=EventFamily.TASK_GENERATION,
        signal=Signal.POSITIVE if rating == TaskFeedback.Rating.GOOD else Signal.NEGATIVE,
        user_id=user_id,
        project_slug=project_slug,
        surface=surface,
        subject_type="task",
        subject_id=str(task_snapshot.get("id", ""))[:255],
        reason_category="completed" if completed else "",
        free_text=reason,
        before_snapshot=task_snapshot,
        metadata={"rating": rating, "completed": completed},
        source_table=TaskFeedback._meta.db_table,
        idempotency_key=idempotency_key,
    )
    lookups = _Lookups(actor, [data])
    draft = _build_event(actor, data, lookups)  # access rules and bounds, before anything is written
    if draft.user_id is None:
        raise ApplicationError("A task rating needs a user: pass user_id or X-On-Behalf-Of.", field="user_id")
    if idempotency_key:
        existing = FeedbackEvent.objects.filter(writer=draft.writer, idempotency_key=idempotency_key).first()
        if existing is not None:
            feedback = TaskFeedback.objects.filter(pk=existing.source_record_id).first()
            if feedback is None or existing.source_table != data.source_table:
                raise Conflict("idempotency_key was already used for another event.", field="idempotency_key")
            return feedback, False

    with transaction.atomic():
        feedback = TaskFeedback.objects.create(
            user_id=draft.user_id,
            project=draft.project,
            task_snapshot=task_snapshot,
            rating=rating,
            reason=reason,
            completed=completed,
        )
        data.source_record_id = str(feedback.pk)
        write = event_record(actor=actor, data=data)
        if not write.created:
            # Lost a race with a retry carrying the same key: keep theirs, drop ours.
            transaction.set_rollback(True)
    if not write.created:
        return TaskFeedback.objects.get(pk=write.event.source_record_id), False
    return feedback, True


def task_feedback_set_promoted(*, feedback_id: str, promoted: bool) -> TaskFeedback:
    """Mark a rated task as an approved example (or no longer one); only the promotion ledger calls this."""
    with transaction.atomic():
        feedback = TaskFeedback.objects.select_for_update().filter(pk=feedback_id).first()
        if feedback is None:
            raise Conflict(f"The rated task {feedback_id} no longer exists.", field="subject_id")
        if feedback.promoted != promoted:
            feedback.promoted = promoted
            feedback.save(update_fields=["promoted"])
    return feedback
