"""The world the access matrix runs in: the roles of tests/conftest.py, and one of each thing the
API serves, owned by ``owner`` (project-scoped ones in the owner's project, ``apollo``)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import ApiKey
from feedback.models import EventFamily
from learning.services import memories, preferences, taste, workflows
from promotions.models import PromotionStatus
from tests.conftest import World
from tests.factories import (
    ChatMessageFactory,
    ChunkFactory,
    DocumentAttributionCandidateFactory,
    DocumentFactory,
    FeedbackEventFactory,
    IntelligenceTargetFactory,
    LearnedWorkflowFactory,
    LearningPromotionFactory,
    MemoryFactory,
    PreferenceFactory,
    RetrievalFeedbackFactory,
    ScanRunFactory,
    TaskFeedbackFactory,
    TastePatternFactory,
    UserFactory,
)
from tests.intelligence.loop_world import loop_access_ids
from tests.learning.conftest import command_run

# Who calls: "acting" is the service key naming the owner with X-On-Behalf-Of.
CALLERS = ("anonymous", "owner", "other", "member", "admin", "service", "acting")


@dataclass
class AccessWorld:
    world: World
    ids: dict[str, str]  # what a route's {placeholder} is filled with

    def client(self, caller: str) -> APIClient:
        if caller == "acting":
            return self.world.client("service", on_behalf_of=self.world.owner.external_id)
        return self.world.client(caller)


def _promotion(world: World, status: str) -> str:
    """A task-example promotion in ``status``, about a rating of its own (open ones are one per subject)."""
    task = TaskFeedbackFactory(user=world.owner, project=world.project, promoted=status == PromotionStatus.APPLIED)
    applied = status in (PromotionStatus.APPLIED, PromotionStatus.PAUSED)
    promotion = LearningPromotionFactory(
        status=status,
        subject_id=str(task.pk),
        project=world.project,
        proposed_learning={"title": task.task_snapshot["title"], "description": "Do it."},
        applied_at=timezone.now() if applied else None,
        destination_table="ai_task_feedback" if applied else "",
        destination_record_id=str(task.pk) if applied else "",
    )
    return str(promotion.pk)


def _attribution_ids(world: World) -> dict[str, int]:
    """apollo's target, and an open candidate (for another project's target) of an unattributed document."""
    target = IntelligenceTargetFactory(project=world.project)
    other_target = IntelligenceTargetFactory()
    candidate = DocumentAttributionCandidateFactory(
        document=DocumentFactory(id="unattributed-doc"), target=other_target
    )
    return {"target": target.pk, "attribution_candidate": candidate.pk}


def _undoable_ids(world: World) -> dict[str, object]:
    """The owner's items with a change to undo: a preference and a workflow switched off, a memory
    edited, a taste pattern stopped (which can also be resumed)."""
    owner = world.owner
    return {
        "switched_preference": preferences.preference_set_active(
            preference=PreferenceFactory(user=owner), active=False
        ).pk,
        "switched_workflow": workflows.workflow_set_active(
            workflow=LearnedWorkflowFactory(user=owner), active=False
        ).pk,
        "edited_memory": memories.memory_update(memory=MemoryFactory(owner=owner), content="I moved to Leeds.").pk,
        "stopped_taste_pattern": taste.taste_pattern_stop(
            user=owner, pattern_id=TastePatternFactory(user=owner, correction_type="tone", direction="formal").pk
        ).pk,
    }


@pytest.fixture
def access_world(world: World) -> AccessWorld:
    owner, project = world.owner, world.project
    chunk = ChunkFactory(document=DocumentFactory(id="apollo-doc", project=project))
    result = RetrievalFeedbackFactory(trace__user=owner, trace__project=project, chunk=chunk)
    ids = {
        "preference": PreferenceFactory(user=owner).pk,
        "workflow": LearnedWorkflowFactory(user=owner).pk,
        "memory": MemoryFactory(owner=owner).pk,
        "message": ChatMessageFactory(user=owner).pk,
        "taste_pattern": TastePatternFactory(user=owner).pk,
        # A project event members may read, and a private one only its owner (and admins) may.
        "event": FeedbackEventFactory(user=owner, project=project).pk,
        "private_event": FeedbackEventFactory(
            user=owner, project=project, private=True, event_family=EventFamily.USER_PREFERENCE
        ).pk,
        "task": TaskFeedbackFactory(user=owner, project=project).pk,
        "owner_key": ApiKey.objects.filter(owner=owner).get().pk,
        "service_key": world.service_key.pk,
        "erasable": UserFactory(username="erasable").pk,
        "user_id": owner.pk,
        "project": project.slug,
        "trace": result.trace_id,
        "chunk": chunk.chunk_id,
        "candidate": _promotion(world, PromotionStatus.CANDIDATE),
        "approved": _promotion(world, PromotionStatus.APPROVED),
        "applied": _promotion(world, PromotionStatus.APPLIED),
        "paused": _promotion(world, PromotionStatus.PAUSED),
        "scan": ScanRunFactory(requested_by=world.admin).pk,
        "run": command_run(world.client("owner"), output="Hi team, the report is attached.")["run_id"],
        **loop_access_ids(project),
        **_attribution_ids(world),
        **_undoable_ids(world),
    }
    return AccessWorld(world=world, ids={name: str(value) for name, value in ids.items()})
