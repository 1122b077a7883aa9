"""Deleting an intelligence target: search traces and marks keep their rows, not the target's id.
(A project's deletion needs nothing here: their ``project`` is set null by the database.)"""

from __future__ import annotations

from django.db import transaction

from retrieval.models import RetrievalFeedback, RetrievalQuery


def retrieval_detach_target(*, target_id: int, counts: dict[str, int]) -> None:
    """Clear ``target_id`` on the traces and retrieval feedback that name this target."""
    with transaction.atomic():
        counts["retrieval_queries (target detached)"] = RetrievalQuery.objects.filter(target_id=str(target_id)).update(
            target_id=""
        )
        counts["ai_retrieval_feedback (target detached)"] = RetrievalFeedback.objects.filter(
            target_id=str(target_id)
        ).update(target_id="")
