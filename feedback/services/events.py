"""The one event writer every surface calls: the checks an event passes, and single writes.

A write either stores the event (or returns the original one for a repeated
``idempotency_key``) or raises an :class:`~config.exceptions.ApplicationError`: nothing
is ever dropped silently.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, connection, transaction

from accounts.actors import Actor
from accounts.models import Project, ProjectMembership, User
from config.exceptions import AccessDenied, ApplicationError, Conflict
from feedback.conf import feedback_settings
from feedback.models import PRIVATE_FAMILIES, PRIVATE_SUBJECT_TYPES, EventFamily, FeedbackEvent, Signal

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
# Django builds a choices class's ``values`` list anew on every access.
_FAMILIES = frozenset(EventFamily.values)
_SIGNALS = frozenset(Signal.values)
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
    before_snapshot: Any = None  # None: {} (stored as an empty object)
    after_snapshot: Any = None
    source_context: dict = field(default_factory=dict)
    metadata: dict = field(default_factory=dict)
    private: bool = False
    idempotency_key: str | None = None


@dataclass(frozen=True)
class EventWrite:
    event: FeedbackEvent
    created: bool  # False: an earlier write with the same idempotency key


class EventLookups:
    """Projects, users and memberships a write needs, each fetched once per call (single or bulk)."""

    def __init__(self, actor: Actor, inputs: Sequence[EventInput]) -> None:
        slugs = {i.project_slug for i in inputs if i.project_slug}
        self.projects = {p.slug: p for p in Project.objects.filter(slug__in=slugs)} if slugs else {}
        self.member_of: set[int] = set()
        if actor.user is not None and not actor.sees_everything and not actor.is_service and self.projects:
            self.member_of = set(
                ProjectMembership.objects.filter(
                    user=actor.user, project_id__in=[p.pk for p in self.projects.values()]
                ).values_list("project_id", flat=True)
            )
        user_ids = {i.user_id for i in inputs if i.user_id is not None}
        self.user_ids: set[int] = set()
        if actor.is_service and user_ids:
            self.user_ids = set(User.objects.filter(pk__in=user_ids).values_list("pk", flat=True))


def json_size(value: Any) -> int:
    """The size of a value stored as JSON, in bytes (what the snapshot limits count)."""
    return len(json.dumps(value, separators=(",", ":"), default=str).encode())


def snapshot_fields_check(fields: dict[str, Any]) -> None:
    """For services that build a snapshot from several caller fields: refuse one that the stream
    would refuse (over FEEDBACK_MAX_SNAPSHOT_BYTES as JSON), naming the caller's largest field."""
    limit = feedback_settings.FEEDBACK_MAX_SNAPSHOT_BYTES
    if json_size(fields) > limit:
        name = max(fields, key=lambda key: json_size(fields[key]))
        raise ApplicationError(f"{name} is too large to store (over {limit} bytes as JSON).", field=name)


def event_build(actor: Actor, data: EventInput, lookups: EventLookups) -> FeedbackEvent:
    """Check one input against the design's rules and return the unsaved event."""
    if data.event_family not in _FAMILIES:
        raise ApplicationError(
            f"Unknown event family {data.event_family!r}; expected one of {', '.join(EventFamily.values)}.",
            field="event_family",
        )
    if data.signal not in _SIGNALS:
        raise ApplicationError(
            f"Unknown signal {data.signal!r}; expected one of {', '.join(Signal.values)}.", field="signal"
        )
    if not (data.event_type or "").strip():
        raise ApplicationError("event_type is required.", field="event_type")
    for name, limit in SHORT_TEXT_LIMITS.items():
        value = getattr(data, name)
        if value is not None and len(value) > limit:
            raise ApplicationError(f"{name} is at most {limit} characters.", field=name)
    max_text = feedback_settings.FEEDBACK_MAX_TEXT_CHARS
    if len(data.free_text) > max_text:
        raise ApplicationError(f"free_text is at most {max_text} characters.", field="free_text")
    max_snapshot = feedback_settings.FEEDBACK_MAX_SNAPSHOT_BYTES
    for name in SNAPSHOT_FIELDS:
        value = getattr(data, name)
        if name in ("source_context", "metadata") and not isinstance(value, dict):
            raise ApplicationError(f"{name} must be a JSON object.", field=name)
        if value is not None and json_size(value) > max_snapshot:
            raise ApplicationError(f"{name} is larger than {max_snapshot} bytes.", field=name)

    # Whom the event is about: a user (or a service key acting for one) writes only as themself;
    # the service acting as itself names anyone.
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
        if not actor.may_use_project(project.pk):
            raise AccessDenied("This service key is not allowed in this project.", field="project")
        if not actor.sees_everything and not actor.is_service and project.pk not in lookups.member_of:
            raise AccessDenied("You are not a member of this project.", field="project")
    elif not actor.may_use_project(None):
        raise AccessDenied("This service key is limited to projects: name one.", field="project")

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
        before_snapshot={} if data.before_snapshot is None else data.before_snapshot,
        after_snapshot={} if data.after_snapshot is None else data.after_snapshot,
        source_context=data.source_context,
        metadata=data.metadata,
        private=private,
        writer=actor.writer_id,
        idempotency_key=data.idempotency_key or None,
    )


def event_replay(existing: FeedbackEvent, attempted: FeedbackEvent, *, ignoring: Sequence[str] = ()) -> EventWrite:
    """The original event for a repeated key, or a conflict if the payload changed (``ignoring``:
    fields the writer itself filled in differently on each attempt, such as a fresh row's id)."""
    for name in COMPARED_FIELDS:
        if name in ignoring:
            continue
        if getattr(existing, name) != getattr(attempted, name):
            raise Conflict(
                f"idempotency_key {existing.idempotency_key!r} was already used for a different event "
                f"(field {name} differs).",
                field="idempotency_key",
            )
    return EventWrite(event=existing, created=False)


def event_record(*, actor: Actor, data: EventInput, replay_ignoring: Sequence[str] = ()) -> EventWrite:
    """Append one event to the stream (or return the original for a repeated idempotency key)."""
    event = event_build(actor, data, EventLookups(actor, [data]))
    # Insert first: a repeated key is the rare case, so it costs the round trip, not every write.
    try:
        _insert(event)
    except IntegrityError:
        if not event.idempotency_key:
            raise
        existing = FeedbackEvent.objects.filter(writer=event.writer, idempotency_key=event.idempotency_key).first()
        if existing is None:
            raise
        return event_replay(existing, event, ignoring=replay_ignoring)
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
