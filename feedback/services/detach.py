"""Deleting a project or an intelligence target: the stream keeps its events and drops only the
reference, after an event that records the deletion (the second audited exception to append-only;
see ``feedback.models.AppendOnlyQuerySet.detach`` and migration 0004)."""

from __future__ import annotations

from django.db import transaction

from accounts.actors import Actor
from feedback.models import (
    PROJECT_DELETED_EVENT_TYPE,
    TARGET_DELETED_EVENT_TYPE,
    EventFamily,
    FeedbackEvent,
    Signal,
    TaskFeedback,
)
from feedback.services.events import EventInput, event_record


def _deletion_event(*, actor: Actor, event_type: str, subject_type: str, subject_id: str, name: str) -> FeedbackEvent:
    return event_record(
        actor=actor,
        data=EventInput(
            event_type=event_type,
            event_family=EventFamily.WORKFLOW_OUTCOME,
            signal=Signal.COMPLETED,
            surface="deletion",
            subject_type=subject_type,
            subject_id=subject_id,
            free_text=name[:500],
        ),
    ).event


def feedback_detach_project(*, actor: Actor, project_id: int, name: str, counts: dict[str, int]) -> FeedbackEvent:
    """Record that project ``project_id`` is being deleted (an event of no project, naming it by id
    and name), then drop the project from its events and task ratings. Returns the deletion event;
    ``counts`` gets the rows changed per table. Runs inside the caller's transaction."""
    with transaction.atomic():
        event = _deletion_event(
            actor=actor,
            event_type=PROJECT_DELETED_EVENT_TYPE,
            subject_type="project",
            subject_id=str(project_id),
            name=name,
        )
        counts["ai_feedback_events (project detached)"] = FeedbackEvent.objects.detach(
            project_id=project_id, deletion_event_id=event.pk
        )
        counts["ai_task_feedback (project detached)"] = TaskFeedback.objects.filter(project_id=project_id).update(
            project=None
        )
    return event


def feedback_detach_target(*, actor: Actor, target_id: int, name: str, counts: dict[str, int]) -> FeedbackEvent:
    """Record that intelligence target ``target_id`` is being deleted, then drop it from the events
    that name it (``target_id`` becomes ""). Returns the deletion event. Runs inside the caller's
    transaction."""
    with transaction.atomic():
        event = _deletion_event(
            actor=actor,
            event_type=TARGET_DELETED_EVENT_TYPE,
            subject_type="intelligence_target",
            subject_id=str(target_id),
            name=name,
        )
        counts["ai_feedback_events (target detached)"] = FeedbackEvent.objects.detach(
            target_id=str(target_id), deletion_event_id=event.pk
        )
    return event
