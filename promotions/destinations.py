"""Destination writers: what applying, pausing, resuming and retiring a promotion does, per type.

Each promotion type that can change behaviour registers one writer here. A type without
a writer cannot be proposed, so nothing is approved that could never be applied.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Protocol

from config.exceptions import ApplicationError
from feedback.models import TaskFeedback
from feedback.services import task_feedback_set_promoted
from promotions.models import LearningPromotion
from retrieval.models import Chunk, RetrievalWeight, WeightStatus
from retrieval.services import weight_create, weight_set_status


@dataclass(frozen=True)
class Destination:
    table: str
    record_id: str


class DestinationWriter(Protocol):
    subject_type: str

    def validate_subject(self, subject_id: str) -> None: ...

    def apply(self, promotion: LearningPromotion) -> Destination: ...

    def pause(self, promotion: LearningPromotion) -> None: ...

    def resume(self, promotion: LearningPromotion) -> None: ...

    def retire(self, promotion: LearningPromotion) -> None: ...


class TaskExampleWriter:
    """A well-rated generated task becomes an example future task generation may show."""

    subject_type = "task_feedback"

    def validate_subject(self, subject_id: str) -> None:
        try:
            uuid.UUID(subject_id)
        except ValueError as exc:
            raise ApplicationError("subject_id must be the id of a rated task.", field="subject_id") from exc
        feedback = TaskFeedback.objects.filter(pk=subject_id).only("rating").first()
        if feedback is None:
            raise ApplicationError(f"No rated task {subject_id}.", field="subject_id")
        if feedback.rating != TaskFeedback.Rating.GOOD:
            raise ApplicationError("Only tasks rated good can become examples.", field="subject_id")

    def apply(self, promotion: LearningPromotion) -> Destination:
        feedback = task_feedback_set_promoted(feedback_id=promotion.subject_id, promoted=True)
        return Destination(table=TaskFeedback._meta.db_table, record_id=str(feedback.pk))

    def pause(self, promotion: LearningPromotion) -> None:
        task_feedback_set_promoted(feedback_id=promotion.subject_id, promoted=False)

    def resume(self, promotion: LearningPromotion) -> None:
        task_feedback_set_promoted(feedback_id=promotion.subject_id, promoted=True)

    def retire(self, promotion: LearningPromotion) -> None:
        if promotion.applied_at is not None:
            task_feedback_set_promoted(feedback_id=promotion.subject_id, promoted=False)


class RetrievalWeightWriter:
    """A learned ranking multiplier for one chunk (``ai_retrieval_weights``)."""

    subject_type = "chunk"

    def validate_subject(self, subject_id: str) -> None:
        if not subject_id.isdigit() or not Chunk.objects.filter(pk=int(subject_id)).exists():
            raise ApplicationError(f"No chunk {subject_id}.", field="subject_id")

    def apply(self, promotion: LearningPromotion) -> Destination:
        weight = weight_create(promotion_id=promotion.pk, learning=promotion.proposed_learning)
        return Destination(table=RetrievalWeight._meta.db_table, record_id=str(weight.pk))

    def pause(self, promotion: LearningPromotion) -> None:
        weight_set_status(promotion_id=promotion.pk, status=WeightStatus.PAUSED)

    def resume(self, promotion: LearningPromotion) -> None:
        weight_set_status(promotion_id=promotion.pk, status=WeightStatus.ACTIVE)

    def retire(self, promotion: LearningPromotion) -> None:
        weight_set_status(promotion_id=promotion.pk, status=WeightStatus.SUPERSEDED)


WRITERS: dict[str, DestinationWriter] = {
    "task_example": TaskExampleWriter(),
    "retrieval_weight": RetrievalWeightWriter(),
}


def writer_for(promotion_type: str) -> DestinationWriter:
    writer = WRITERS.get(promotion_type)
    if writer is None:
        raise ApplicationError(
            f"Unknown promotion type {promotion_type!r}; expected one of {', '.join(sorted(WRITERS))}.",
            field="promotion_type",
        )
    return writer
