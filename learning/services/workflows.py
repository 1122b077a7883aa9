"""Learned workflows: the repeated requests analysis reveals, their use in contexts, sharing them
with a project, and the user switching them off or forgetting them."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np
from django.db import transaction
from django.utils import timezone

from accounts.models import Project, User
from config.exceptions import ApplicationError, NotFoundError
from learning.analyzer import workflows as detection
from learning.analyzer.base import WorkflowFinding
from learning.context.cache import context_invalidate_shared
from learning.models import ChatMessage, LearnedWorkflow, PromptPattern
from learning.selectors import answered_request_newest
from learning.services.common import changed_after_commit, reinforced, user_writer_lock
from learning.services.undo import row_restore, row_snapshot, undo_record, undo_take

PRIVATE = "private"


def workflow_learn(
    *, user: User, finding: WorkflowFinding, message: ChatMessage, vector: np.ndarray, past: Sequence[PromptPattern]
) -> LearnedWorkflow | None:
    """Create the workflow three same-task requests revealed (named after the group, with its
    example and format), or count one more occurrence of the known one it matches (None when the
    user deleted or shared that one while it was being compared: the occurrence teaches nothing)."""
    request_ids = [p.message_id for p in past] + [message.pk]
    vectors = [vector, *(p.embedding for p in past if p.embedding is not None)]
    centroid = np.mean(np.vstack(vectors), axis=0).astype(np.float32)
    centroid /= np.linalg.norm(centroid) or 1.0
    with transaction.atomic():
        # Two workers must not both create the same new workflow: the user's writer lock makes them take
        # turns. The workflows themselves are compared unlocked (a request injecting one of them writes its
        # last_used_at meanwhile); only the one reinforced is locked, once chosen.
        user_writer_lock(user.pk)
        changed_after_commit(user.pk)
        known = list(LearnedWorkflow.objects.filter(user=user, visibility=PRIVATE))
        matches = [
            (i, similarity)
            for i, w in enumerate(known)
            if (
                similarity := detection.task_similarity(
                    message.content,
                    w.example_input or w.trigger_pattern,
                    sentence=detection.centred_cosine(vector, w.embedding) if w.embedding is not None else 0.0,
                )
            ).same_task
        ]
        if not matches:
            requests = [*ChatMessage.objects.filter(pk__in=request_ids[:-1]).order_by("created_at"), message]
            texts = [m.content for m in requests]
            example_input, example_output = answered_request_newest(message_ids=request_ids) or (message.content, "")
            output = finding.preferred_output or detection.preferred_output(texts)
            name = detection.workflow_name(texts)
            return LearnedWorkflow.objects.create(
                user=user,
                workflow_name=name[:200],
                trigger_pattern=finding.trigger_pattern[:500],
                learned_steps=detection.learned_steps(name=name, output_format=output, example_output=example_output),
                preferred_output=output[:500],
                example_input=example_input[:4000],
                example_output=example_output[:8000],
                times_detected=len(requests),
                confidence=round(min(0.95, finding.confidence), 4),
                embedding=centroid,
            )
        index, _ = max(matches, key=lambda m: m[1].score)
        best = known[index]
        # The name stays as first given: a workflow the user knows by name does not drift. The fields
        # written here are written only here, under the writer lock taken above, so the row read after
        # it is current for them; one UPDATE writes them (and locks the row until commit). It updates
        # nothing when the user deleted or shared the workflow meanwhile (workflow_delete, share_apply).
        changes: dict[str, Any] = {"times_detected": best.times_detected + 1, "updated_at": timezone.now()}
        if best.embedding is not None:
            merged = best.embedding * best.times_detected + vector
            changes["embedding"] = (merged / (np.linalg.norm(merged) or 1.0)).astype(np.float32)
        else:
            changes["embedding"] = centroid
        changes["confidence"] = round(reinforced(best.confidence, finding.confidence), 4)
        if finding.preferred_output and not best.preferred_output:
            changes["preferred_output"] = finding.preferred_output[:500]
        if not best.example_output and (answered := answered_request_newest(message_ids=request_ids)) is not None:
            example_input, example_output = answered
            changes["example_input"], changes["example_output"] = example_input[:4000], example_output[:8000]
            changes["learned_steps"] = detection.learned_steps(
                name=best.workflow_name,
                output_format=changes.get("preferred_output", best.preferred_output),
                example_output=example_output,
            )
        if not LearnedWorkflow.objects.filter(pk=best.pk, visibility=PRIVATE).update(**changes):
            return None
        for name, value in changes.items():
            setattr(best, name, value)
        return best


def workflows_mark_used(*, workflow_ids: Sequence[int]) -> int:
    """Note that these workflows were just injected into a context (``last_used_at``), in one UPDATE."""
    if not workflow_ids:
        return 0
    return LearnedWorkflow.objects.filter(pk__in=list(workflow_ids)).update(last_used_at=timezone.now())


def workflow_set_active(*, workflow: LearnedWorkflow, active: bool) -> LearnedWorkflow:
    """Switch a workflow on or off (undoable: ``workflow_undo``)."""
    with transaction.atomic():
        row = LearnedWorkflow.objects.select_for_update().get(pk=workflow.pk)
        undo_record(
            user_id=row.user_id,
            subject_type="workflow",
            subject_id=row.pk,
            action="switched_on" if active else "switched_off",
            before={"active": row.active},
        )
        row.active = active
        row.save(update_fields=["active", "updated_at"])
        _changed(row)
    return row


def _changed(row: LearnedWorkflow) -> None:
    changed_after_commit(row.user_id)
    if row.visibility != PRIVATE:
        transaction.on_commit(context_invalidate_shared)


def workflow_delete(*, workflow: LearnedWorkflow) -> None:
    """Forget a workflow (its shared copies stay, detached from it). Undoable for
    LEARNING_UNDO_SECONDS: the undo entry keeps the row and which copies came from it."""
    with transaction.atomic():
        row = LearnedWorkflow.objects.select_for_update().filter(pk=workflow.pk).first()
        if row is None:
            return
        copies = list(LearnedWorkflow.objects.filter(shared_from=row).values_list("pk", flat=True))
        undo_record(
            user_id=row.user_id,
            subject_type="workflow",
            subject_id=row.pk,
            action="deleted",
            before={"row": row_snapshot(row), "copies": copies},
        )
        row.delete()
        _changed(row)


def workflow_undo(*, user: User, workflow_id: int) -> tuple[str, LearnedWorkflow]:
    """Undo the user's newest change to this workflow (within LEARNING_UNDO_SECONDS): a switch is
    switched back; a deleted workflow comes back as it was, its shared copies pointing at it again."""
    with transaction.atomic():
        entry = undo_take(user=user, subject_type="workflow", subject_id=workflow_id, label="workflow")
        if entry.action == "deleted":
            row = row_restore(
                LearnedWorkflow,
                entry.before["row"],
                conflict_field="id",
                conflict=f"Workflow {workflow_id} exists already; nothing to restore.",
            )
            LearnedWorkflow.objects.filter(pk__in=entry.before.get("copies", []), shared_from__isnull=True).update(
                shared_from=row
            )
        else:
            row = LearnedWorkflow.objects.select_for_update().filter(pk=workflow_id, user=user).first()
            if row is None:
                raise NotFoundError(f"Workflow {workflow_id} no longer exists.", field="id")
            row.active = bool(entry.before["active"])
            row.save(update_fields=["active", "updated_at"])
        _changed(row)
    row.refresh_from_db()
    return entry.action, row


def workflow_share_check(*, workflow_id: str, visibility: str, project: Project | None) -> dict:
    """What sharing a private workflow with a team or project would create: the proposed learning
    of a ``workflow`` promotion; refused for a workflow that is not an active private one."""
    if visibility not in ("team", "project"):
        raise ApplicationError("visibility must be 'team' or 'project'.", field="visibility")
    if visibility == "project" and project is None:
        raise ApplicationError("A project workflow needs its project.", field="project")
    workflow = (
        LearnedWorkflow.objects.filter(pk=int(workflow_id), visibility=PRIVATE, active=True).first()
        if str(workflow_id).isdigit()
        else None
    )
    if workflow is None:
        raise ApplicationError(f"No active private workflow {workflow_id}.", field="subject_id")
    return {
        "owner": workflow.user_id,
        "workflow_name": workflow.workflow_name,
        "trigger_pattern": workflow.trigger_pattern,
        "learned_steps": workflow.learned_steps,
        "preferred_output": workflow.preferred_output,
        "visibility": visibility,
        "project": project.slug if (project and visibility == "project") else None,
        "confidence": round(workflow.confidence, 3),
    }


def workflow_share_apply(*, promotion_id: uuid.UUID, workflow_id: str, learning: dict) -> LearnedWorkflow:
    """Create the shared copy an applied ``workflow`` promotion describes (once per promotion)."""
    existing = LearnedWorkflow.objects.filter(promotion_id=promotion_id).first()
    if existing is not None:
        return existing
    with transaction.atomic():
        source = LearnedWorkflow.objects.select_for_update().filter(pk=int(workflow_id), visibility=PRIVATE).first()
        if source is None:
            raise ApplicationError(f"No private workflow {workflow_id}.", field="subject_id")
        project = (
            Project.objects.filter(slug=learning["project"]).first()
            if learning.get("visibility") == "project"
            else None
        )
        if learning.get("visibility") == "project" and project is None:
            raise ApplicationError(f"No project {learning.get('project')!r}.", field="project")
        copy = LearnedWorkflow.objects.create(
            user_id=source.user_id,
            workflow_name=source.workflow_name,
            trigger_pattern=source.trigger_pattern,
            learned_steps=source.learned_steps,
            preferred_output=source.preferred_output,
            example_input=source.example_input,
            example_output=source.example_output,
            times_detected=source.times_detected,
            confidence=source.confidence,
            embedding=source.embedding,
            visibility=learning.get("visibility", "project"),
            project=project,
            shared_from=source,
            promotion_id=promotion_id,
        )
        transaction.on_commit(context_invalidate_shared)
    return copy


def workflow_share_set_status(*, promotion_id: uuid.UUID, active: bool, missing_ok: bool = False) -> None:
    """Pause, resume or retire the shared copy a promotion created."""
    updated = LearnedWorkflow.objects.filter(promotion_id=promotion_id).update(active=active)
    if not updated and not missing_ok:
        raise ApplicationError("The shared workflow of this promotion is gone.", field="promotion")
    transaction.on_commit(context_invalidate_shared)
