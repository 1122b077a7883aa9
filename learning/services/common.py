"""What the learning services share: invalidation after commit, analysis events, steering flags, reinforcement."""

from __future__ import annotations

import logging

from django.db import transaction

from accounts.actors import Actor
from accounts.models import User
from feedback.models import EventFamily, Signal
from feedback.services.events import EventInput, event_record
from learning.conf import learning_settings
from learning.context.cache import context_invalidate
from learning.models import ChatMessage
from learning.safety import steering_reasons

logger = logging.getLogger(__name__)


def changed_after_commit(user_id: int) -> None:
    """The user's learned items changed: drop their cached context once this commits."""
    transaction.on_commit(lambda: context_invalidate(user_id=user_id))


def user_writer_lock(user_id: int) -> None:
    """Take the user's writer lock until the transaction ends: one writer of a user's learned
    preferences and workflows at a time, so two workers cannot both create the same new one. FOR NO
    KEY UPDATE of the user's row, not FOR UPDATE: it excludes the other writers alike, but not the
    key-share lock that every insert naming the user takes (their next message, its prompt pattern,
    an event), so what the worker stores never holds up the user's requests."""
    User.objects.select_for_update(no_key=True).filter(pk=user_id).first()


def message_event_record(message: ChatMessage, kind: str, **fields: object) -> None:
    """Write what the analysis saw into the feedback stream, tied to the message."""
    event_record(
        actor=Actor.for_system(),
        data=EventInput(
            user_id=message.user_id,
            project_slug=message.project.slug if message.project_id and message.project else None,
            session_id=message.session_id[:255],
            source_table=ChatMessage._meta.db_table,
            source_record_id=str(message.pk),
            surface="chat",
            private=True,
            idempotency_key=f"analysis:{message.pk}:{kind}",
            **fields,  # type: ignore[arg-type]
        ),
    )


def steering_flag(*, user: User, text: str, subject_type: str, subject_id: str) -> bool:
    """Learned text that reads like orders to the assistant is kept (quoted, in the user's own
    context only) and flagged for review in the stream. True if flagged."""
    reasons = steering_reasons(text)
    if reasons:
        event_record(
            actor=Actor.for_system(),
            data=EventInput(
                event_type="learned_text_flagged",
                event_family=EventFamily.USER_PREFERENCE,
                signal=Signal.NEEDS_REVIEW,
                user_id=user.pk,
                surface="learning",
                subject_type=subject_type,
                subject_id=subject_id,
                reason_category="steering",
                free_text=text[:10_000],
                metadata={"reasons": reasons},
                private=True,
            ),
        )
    return bool(reasons)


def reinforced(confidence: float, strength: float) -> float:
    """Confidence after one more sighting: rises with diminishing returns, never past 0.99."""
    return min(0.99, confidence + (1.0 - confidence) * learning_settings.REINFORCEMENT_RATE * max(0.2, strength))
