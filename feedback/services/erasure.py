"""Erasing a user from the stream: their events anonymised (the one change append-only allows,
recorded by an event of its own) and their task ratings deleted."""

from __future__ import annotations

from django.db import transaction

from accounts.actors import Actor
from accounts.models import User
from feedback.models import ERASURE_EVENT_TYPE, EventFamily, FeedbackEvent, Signal, TaskFeedback
from feedback.services.events import EventInput, event_record


def feedback_erase_user(*, actor: Actor, user: User, counts: dict[str, int]) -> FeedbackEvent:
    """Record the erasure of ``user`` (an event naming them by id only), anonymise every event about
    them under it, and delete their task ratings. Returns the erasure event; ``counts`` gets the rows
    changed per table. Runs inside the caller's transaction (the whole erasure is one)."""
    with transaction.atomic():
        erasure = event_record(
            actor=actor,
            data=EventInput(
                event_type=ERASURE_EVENT_TYPE,
                event_family=EventFamily.USER_PREFERENCE,
                signal=Signal.COMPLETED,
                surface="erasure",
                subject_type="user",
                subject_id=str(user.pk),
                private=True,
            ),
        ).event
        counts["ai_feedback_events (anonymised)"] = FeedbackEvent.objects.anonymise_user(
            user_id=user.pk, erasure_event_id=erasure.pk
        )
        counts["ai_task_feedback"], _ = TaskFeedback.objects.filter(user=user).delete()
    return erasure
