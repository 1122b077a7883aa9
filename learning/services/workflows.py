"""Learned workflows: the repeated requests analysis reveals, and the user switching them off or forgetting them."""

from __future__ import annotations

import numpy as np
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from accounts.models import User
from learning.analyzer.base import (
    WorkflowFinding,
)
from learning.conf import learning_settings
from learning.models import ChatMessage, LearnedWorkflow
from learning.services.common import changed_after_commit, reinforced


def workflow_learn(
    *, user: User, finding: WorkflowFinding, message: ChatMessage, vectors: list[np.ndarray]
) -> LearnedWorkflow:
    """Create the workflow three similar requests revealed, or count one more use of a known one."""
    now = timezone.now()
    centroid = np.mean(np.vstack(vectors), axis=0).astype(np.float32)
    centroid /= np.linalg.norm(centroid) or 1.0
    with transaction.atomic():
        changed_after_commit(user.pk)
        best, best_similarity = None, learning_settings.WORKFLOW_SIMILARITY
        for workflow in LearnedWorkflow.objects.select_for_update().filter(user=user, embedding__isnull=False):
            if workflow.embedding is None:
                continue
            similarity = float(np.dot(workflow.embedding, vectors[0]))
            if similarity >= best_similarity:
                best, best_similarity = workflow, similarity
        if best is None:
            return LearnedWorkflow.objects.create(
                user=user,
                workflow_name=finding.workflow_name[:200],
                trigger_pattern=finding.trigger_pattern[:500],
                learned_steps=finding.learned_steps,
                preferred_output=finding.preferred_output[:500],
                example_input=message.content[:4000],
                times_detected=len(vectors),
                last_used_at=now,
                confidence=round(min(0.95, finding.confidence), 4),
                embedding=centroid,
            )
        assert best.embedding is not None
        merged = best.embedding * best.times_detected + vectors[0]
        best.embedding = (merged / (np.linalg.norm(merged) or 1.0)).astype(np.float32)
        best.times_detected = F("times_detected") + 1
        best.last_used_at = now
        best.confidence = round(reinforced(best.confidence, finding.confidence), 4)
        if finding.preferred_output and not best.preferred_output:
            best.preferred_output = finding.preferred_output[:500]
        best.save(
            update_fields=[
                "embedding",
                "times_detected",
                "last_used_at",
                "confidence",
                "preferred_output",
                "updated_at",
            ]
        )
        best.refresh_from_db(fields=["times_detected"])
        return best


def workflow_set_active(*, workflow: LearnedWorkflow, active: bool) -> LearnedWorkflow:
    with transaction.atomic():
        row = LearnedWorkflow.objects.select_for_update().get(pk=workflow.pk)
        row.active = active
        row.save(update_fields=["active", "updated_at"])
        changed_after_commit(row.user_id)
    return row


def workflow_delete(*, workflow: LearnedWorkflow) -> None:
    with transaction.atomic():
        LearnedWorkflow.objects.filter(pk=workflow.pk).delete()
        changed_after_commit(workflow.user_id)
