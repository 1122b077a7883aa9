"""Agent learnings: feedback on assistant responses, and the prevention prompts reviewed from it.

A thumbs-up or -down on a response is an ``assistant_response`` event (evidence). Usages of
the learnings injected into that response's context are marked helped or hurt. Repeated
thumbs-down on similar responses become a promotion candidate (``promotions.scanners``);
only applying the approved promotion creates an ``AgentLearning``.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction

from accounts.actors import Actor
from accounts.models import Project, User
from config.exceptions import ApplicationError, Conflict
from feedback.models import EventFamily, FeedbackEvent, Signal
from feedback.services.events import EventInput, event_record, snapshot_fields_check
from learning.context.cache import context_invalidate_shared
from learning.models import AgentLearning
from learning.safety import steering_reasons
from learning.services.usages import usages_judge

RATINGS = {"up": Signal.POSITIVE, "down": Signal.NEGATIVE}


def response_feedback_record(
    *,
    actor: Actor,
    user: User,
    response_id: str,
    rating: str,
    reason: str = "",
    response_text: str = "",
    tool_name: str = "",
    tool_trace: Any = None,
    tags: list[str] | None = None,
    project: Project | None = None,
    session_id: str = "",
) -> tuple[FeedbackEvent, int]:
    """Record a rating of one assistant response, and mark the learnings injected into its context
    as helped (up) or hurt (down). Returns the event and how many usages it judged."""
    if rating not in RATINGS:
        raise ApplicationError("rating must be 'up' or 'down'.", field="rating")
    response_id = (response_id or "").strip()
    if not response_id:
        raise ApplicationError("response_id must not be empty.", field="response_id")
    snapshot_fields_check({"response_text": response_text, "tool_trace": tool_trace})
    with transaction.atomic():
        written = event_record(
            actor=actor,
            data=EventInput(
                event_type="response_feedback",
                event_family=EventFamily.ASSISTANT_RESPONSE,
                signal=RATINGS[rating],
                user_id=user.pk,
                project_slug=project.slug if project else None,
                session_id=session_id[:255],
                surface=(tool_name or "chat")[:50],
                subject_type="assistant_response",
                subject_id=response_id[:255],
                reason_category=rating,
                free_text=reason,
                after_snapshot={"response": response_text, "tool_trace": tool_trace},
                metadata={"tool_name": tool_name[:100], "tags": [str(t)[:50] for t in (tags or [])][:20]},
            ),
        )
        judged = usages_judge(user=user, response_id=response_id, helped=rating == "up")
    return written.event, judged


def agent_learning_create(
    *, promotion_id: uuid.UUID, learning: dict[str, Any], project: Project | None
) -> AgentLearning:
    """Create the prevention prompt an applied promotion describes (once per promotion)."""
    existing = AgentLearning.objects.filter(promotion_id=promotion_id).first()
    if existing is not None:
        return existing  # an apply delivered twice
    prompt = str(learning.get("prevention_prompt") or "").strip()
    if not prompt:
        raise ApplicationError("The proposed learning has no prevention_prompt.", field="proposed_learning")
    if steering_reasons(prompt):
        raise Conflict(
            "The prevention prompt reads like instructions from a user; it is never injected.",
            field="proposed_learning",
        )
    with transaction.atomic():
        row = AgentLearning.objects.create(
            project=project,
            tool_name=str(learning.get("tool_name") or "")[:100],
            tags=[str(tag)[:50] for tag in learning.get("tags", [])][:20],
            title=str(learning.get("title", ""))[:200],
            prevention_prompt=prompt,
            evidence=learning.get("evidence", []),
            promotion_id=promotion_id,
        )
        transaction.on_commit(context_invalidate_shared)
    return row


def agent_learning_set_status(*, promotion_id: uuid.UUID, status: str) -> None:
    """Pause, resume or retire the learning a promotion made. Pausing or resuming one that was
    deleted meanwhile is a clear conflict; retiring it has nothing left to do."""
    updated = AgentLearning.objects.filter(promotion_id=promotion_id).update(status=status)
    if not updated and status != AgentLearning.Status.RETIRED:
        raise Conflict("The agent learning this promotion created no longer exists.", field="destination_record_id")
    transaction.on_commit(context_invalidate_shared)
