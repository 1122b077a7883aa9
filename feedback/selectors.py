"""Reads of the event stream and task ratings, with the design's access rules applied."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from accounts.actors import Actor
from accounts.selectors import project_ids_for_user
from core.ids import parse_uuid
from feedback.models import FeedbackEvent, TaskFeedback


def event_visibility_q(*, actor: Actor) -> Q:
    """The events an actor may read.

    Services and staff admins read everything. A user (and a service key acting for one)
    reads their own events, and the non-private events of the projects they are a member of.
    Private (preference and memory) events are for their owner and admins only. A service key
    limited to projects reads within them only.
    """
    if actor.sees_everything:
        return Q()
    if actor.is_service:
        return actor.limit_q()
    if actor.user is None:
        return Q(pk__in=[])
    mine = Q(user=actor.user) | Q(project_id__in=project_ids_for_user(user=actor.user), private=False)
    return mine & actor.limit_q()


def event_list(*, actor: Actor) -> QuerySet[FeedbackEvent]:
    """Events the actor may read, newest first (filters are applied by the caller's FilterSet)."""
    return (
        FeedbackEvent.objects.filter(event_visibility_q(actor=actor))
        .select_related("project")
        .order_by("-created_at", "-id")
    )


def event_get(*, actor: Actor, event_id: str) -> FeedbackEvent | None:
    """One event if the actor may read it; None otherwise (so ids of others' events do not leak)."""
    pk = parse_uuid(event_id)
    return event_list(actor=actor).filter(pk=pk).first() if pk else None


def task_feedback_list(*, actor: Actor) -> QuerySet[TaskFeedback]:
    """Task ratings the actor may read: own, their projects', or all for admins and services."""
    qs = TaskFeedback.objects.select_related("project").order_by("-created_at", "-id")
    if actor.sees_everything:
        return qs
    if actor.is_service:
        return qs.filter(actor.limit_q())
    if actor.user is None:
        return qs.none()
    return qs.filter(Q(user=actor.user) | Q(project_id__in=project_ids_for_user(user=actor.user))).filter(
        actor.limit_q()
    )


def task_feedback_get(*, actor: Actor, feedback_id: str) -> TaskFeedback | None:
    """One task rating if the actor may read it; None otherwise."""
    pk = parse_uuid(feedback_id)
    return task_feedback_list(actor=actor).filter(pk=pk).first() if pk else None
