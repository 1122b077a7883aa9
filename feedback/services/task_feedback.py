"""Task ratings: a rated generated task and its ``task_generation`` event, written together."""

from __future__ import annotations

from django.db import transaction

from accounts.actors import Actor
from config.exceptions import ApplicationError, Conflict
from core.ids import parse_uuid
from feedback.conf import feedback_settings
from feedback.models import EventFamily, FeedbackEvent, Signal, TaskFeedback
from feedback.services.events import EventInput, EventLookups, event_build, event_record, json_size


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
    if json_size(task_snapshot) > feedback_settings.FEEDBACK_MAX_SNAPSHOT_BYTES:
        raise ApplicationError(
            f"task_snapshot is larger than {feedback_settings.FEEDBACK_MAX_SNAPSHOT_BYTES} bytes.",
            field="task_snapshot",
        )
    if len(reason) > feedback_settings.FEEDBACK_MAX_TEXT_CHARS:
        raise ApplicationError(
            f"reason is at most {feedback_settings.FEEDBACK_MAX_TEXT_CHARS} characters.", field="reason"
        )

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
    lookups = EventLookups(actor, [data])
    draft = event_build(actor, data, lookups)  # access rules and bounds, before anything is written
    if draft.user_id is None:
        raise ApplicationError("A task rating needs a user: pass user_id or X-On-Behalf-Of.", field="user_id")
    if idempotency_key:
        existing = FeedbackEvent.objects.filter(writer=draft.writer, idempotency_key=idempotency_key).first()
        if existing is not None:
            # The key may name any event of this writer: only a task rating's own event points at a rating
            # (source_record_id is free text on other events, so it is parsed, never queried as it is).
            rated = parse_uuid(existing.source_record_id) if existing.source_table == data.source_table else None
            feedback = TaskFeedback.objects.filter(pk=rated).first() if rated else None
            if feedback is None:
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
    pk = parse_uuid(feedback_id)
    with transaction.atomic():
        feedback = TaskFeedback.objects.select_for_update().filter(pk=pk).first() if pk else None
        if feedback is None:
            raise Conflict(f"The rated task {feedback_id} no longer exists.", field="subject_id")
        if feedback.promoted != promoted:
            feedback.promoted = promoted
            feedback.save(update_fields=["promoted"])
    return feedback
