"""Destination writers: what applying, pausing, resuming and retiring a promotion does, per type.

Each promotion type that can change behaviour registers one writer here. A type without
a writer cannot be proposed, so nothing is approved that could never be applied.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from django.db import transaction
from django.db.models import Q

from accounts.actors import Actor
from accounts.models import Project
from config.exceptions import ApplicationError
from core.ids import parse_uuid
from feedback.models import FeedbackEvent, TaskFeedback
from feedback.services.task_feedback import task_feedback_set_promoted
from intelligence.models import AttributionRule, IntelligenceTarget, PacketRule, RuleStatus
from intelligence.services.attribution_rules import (
    attribution_rule_create,
    attribution_rule_set_status,
    rule_pattern_normalise,
)
from intelligence.services.compile import memory_card_record, memory_card_set_status
from intelligence.services.packet_rules import packet_rule_check, packet_rule_create, packet_rule_set_status
from learning.context.cache import context_invalidate_shared
from learning.models import AgentLearning, LearnedWorkflow, Memory
from learning.safety import steering_reasons
from learning.services.agent import agent_learning_create, agent_learning_set_status
from learning.services.memories import memory_share_apply, memory_share_check, memory_share_set_status
from learning.services.workflows import workflow_share_apply, workflow_share_check, workflow_share_set_status
from promotions.models import OPEN_STATUSES, LearningPromotion
from retrieval.models import Chunk, RetrievalWeight, WeightStatus
from retrieval.services import weight_create, weight_set_status


@dataclass(frozen=True)
class Destination:
    table: str
    record_id: str


class DestinationWriter(Protocol):
    subject_types: tuple[str, ...]  # the first is the default

    def prepare(self, *, subject_type: str, subject_id: str, actor: Actor, learning: dict[str, Any]) -> dict[str, Any]:
        """Check the subject may be proposed; return the proposed learning to store."""
        ...

    def apply(self, promotion: LearningPromotion) -> Destination: ...

    def pause(self, promotion: LearningPromotion) -> None: ...

    def resume(self, promotion: LearningPromotion) -> None: ...

    def retire(self, promotion: LearningPromotion) -> dict[str, Any] | None:
        """Retire the destination (superseding); what the audit event should add, if anything."""
        ...


def task_title(value: Any) -> str:
    """A task's title as compared for duplicates (case and spacing ignored)."""
    title = value.get("title", "") if isinstance(value, dict) else value
    return " ".join(str(title).lower().split())


def task_example_titles_taken(*, project_ids: set[int | None]) -> set[tuple[int | None, str]]:
    """(project, title) of the examples already promoted and of the open task-example candidates,
    in these projects: a task with one of these titles would be a duplicate. Two queries."""
    promoted = TaskFeedback.objects.filter(promoted=True).filter(
        Q(project_id__in=[p for p in project_ids if p is not None])
        | (Q(project__isnull=True) if None in project_ids else Q(pk__in=[]))
    )
    taken: set[tuple[int | None, str]] = {
        (project_id, task_title(snapshot))
        for project_id, snapshot in promoted.values_list("project_id", "task_snapshot")
    }
    open_candidates = LearningPromotion.objects.filter(promotion_type="task_example", status__in=OPEN_STATUSES)
    taken |= {
        (project_id, task_title(learning))
        for project_id, learning in open_candidates.values_list("project_id", "proposed_learning")
        if project_id in project_ids
    }
    return taken


def task_example_learning(
    feedback: TaskFeedback, *, actor: Actor, taken: set[tuple[int | None, str]], learning: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The proposed learning of a rated task as an example, or an ApplicationError saying why it
    cannot be one: rated good, complete, completed (or proposed by an admin), not steering, and
    not a duplicate of a title in ``taken``."""
    if feedback.rating != TaskFeedback.Rating.GOOD:
        raise ApplicationError("Only tasks rated good can become examples.", field="subject_id")
    snapshot = feedback.task_snapshot if isinstance(feedback.task_snapshot, dict) else {}
    title, description = str(snapshot.get("title", "")).strip(), str(snapshot.get("description", "")).strip()
    if not title or not description:
        raise ApplicationError("Only complete tasks (a title and a description) become examples.", field="subject_id")
    if not feedback.completed and not actor.is_admin:
        raise ApplicationError(
            "A task nobody completed becomes an example only if an admin proposes it.", field="subject_id"
        )
    if steering_reasons(f"{title} {description}"):
        raise ApplicationError(
            "This task reads like instructions to the assistant; it is never an example.", field="subject_id"
        )
    if (feedback.project_id, task_title(title)) in taken:
        raise ApplicationError("An example (or a candidate) with this title already exists.", field="subject_id")
    # What the reviewer sees is what will be injected: the task's own text, not the proposer's.
    return {
        **(learning or {}),
        "title": title[:300],
        "description": description[:2000],
        "completed": feedback.completed,
        "reason": feedback.reason[:500],
    }


class TaskExampleWriter:
    """A well-rated generated task becomes an example that future task generation is shown (see
    task_example_learning for what qualifies)."""

    subject_types: tuple[str, ...] = ("task_feedback",)

    def prepare(self, *, subject_type: str, subject_id: str, actor: Actor, learning: dict[str, Any]) -> dict[str, Any]:
        if parse_uuid(subject_id) is None:
            raise ApplicationError("subject_id must be the id of a rated task.", field="subject_id")
        feedback = TaskFeedback.objects.filter(pk=subject_id).first()
        if feedback is None:
            raise ApplicationError(f"No rated task {subject_id}.", field="subject_id")
        taken = task_example_titles_taken(project_ids={feedback.project_id})
        if feedback.promoted:
            taken.discard((feedback.project_id, task_title(feedback.task_snapshot)))  # itself (paused and resumed)
        return task_example_learning(feedback, actor=actor, taken=taken, learning=learning)

    def apply(self, promotion: LearningPromotion) -> Destination:
        feedback = task_feedback_set_promoted(feedback_id=promotion.subject_id, promoted=True)
        transaction.on_commit(context_invalidate_shared)
        return Destination(table=TaskFeedback._meta.db_table, record_id=str(feedback.pk))

    def pause(self, promotion: LearningPromotion) -> None:
        task_feedback_set_promoted(feedback_id=promotion.subject_id, promoted=False)
        transaction.on_commit(context_invalidate_shared)

    def resume(self, promotion: LearningPromotion) -> None:
        task_feedback_set_promoted(feedback_id=promotion.subject_id, promoted=True)
        transaction.on_commit(context_invalidate_shared)

    def retire(self, promotion: LearningPromotion) -> None:
        if promotion.applied_at is not None and TaskFeedback.objects.filter(pk=promotion.subject_id).exists():
            task_feedback_set_promoted(feedback_id=promotion.subject_id, promoted=False)
            transaction.on_commit(context_invalidate_shared)


class RetrievalWeightWriter:
    """A learned ranking multiplier for one chunk (``ai_retrieval_weights``)."""

    subject_types: tuple[str, ...] = ("chunk",)

    def prepare(self, *, subject_type: str, subject_id: str, actor: Actor, learning: dict[str, Any]) -> dict[str, Any]:
        if not subject_id.isdigit() or not Chunk.objects.filter(pk=int(subject_id)).exists():
            raise ApplicationError(f"No chunk {subject_id}.", field="subject_id")
        return learning

    def apply(self, promotion: LearningPromotion) -> Destination:
        weight = weight_create(promotion_id=promotion.pk, learning=promotion.proposed_learning)
        return Destination(table=RetrievalWeight._meta.db_table, record_id=str(weight.pk))

    def pause(self, promotion: LearningPromotion) -> None:
        weight_set_status(promotion_id=promotion.pk, status=WeightStatus.PAUSED)

    def resume(self, promotion: LearningPromotion) -> None:
        weight_set_status(promotion_id=promotion.pk, status=WeightStatus.ACTIVE)

    def retire(self, promotion: LearningPromotion) -> dict[str, Any] | None:
        # An orphaned weight stays orphaned (a documented no-op): the audit event says so.
        weight = weight_set_status(promotion_id=promotion.pk, status=WeightStatus.SUPERSEDED)
        if weight is not None and weight.status == WeightStatus.ORPHANED:
            return {"weight": weight.pk, "weight_status": WeightStatus.ORPHANED}
        return None


class MemoryWriter:
    """A private memory or preference shared as a team or project memory (``ai_memories``)."""

    subject_types: tuple[str, ...] = ("memory", "preference")

    def prepare(self, *, subject_type: str, subject_id: str, actor: Actor, learning: dict[str, Any]) -> dict[str, Any]:
        project = None
        if not isinstance(learning.get("project") or "", str) or not isinstance(learning.get("visibility", ""), str):
            raise ApplicationError("project and visibility must be text.", field="proposed_learning")
        if learning.get("project"):
            project = Project.objects.filter(slug=learning["project"]).first()
            if project is None:
                raise ApplicationError(f"No project {learning['project']!r}.", field="project")
        return memory_share_check(
            subject_type=subject_type,
            subject_id=subject_id,
            visibility=str(learning.get("visibility", "team")),
            project=project,
        )

    def apply(self, promotion: LearningPromotion) -> Destination:
        memory = memory_share_apply(
            promotion_id=promotion.pk,
            subject_type=promotion.subject_type,
            subject_id=promotion.subject_id,
            learning=promotion.proposed_learning,
        )
        if memory.project is not None and memory.visibility in (Memory.Visibility.PROJECT, Memory.Visibility.TEAM):
            # A project's shared memory is also a statement in its packet, marked as from memory.
            memory_card_record(
                project=memory.project,
                memory_id=memory.pk,
                content=memory.content,
                kind=memory.kind,
                observed_at=memory.created_at,
            )
        return Destination(table=Memory._meta.db_table, record_id=str(memory.pk))

    def pause(self, promotion: LearningPromotion) -> None:
        memory_share_set_status(promotion_id=promotion.pk, active=False)
        self._cards(promotion, active=False)

    def resume(self, promotion: LearningPromotion) -> None:
        memory_share_set_status(promotion_id=promotion.pk, active=True)
        self._cards(promotion, active=True)

    def retire(self, promotion: LearningPromotion) -> None:
        memory_share_set_status(promotion_id=promotion.pk, active=False, missing_ok=True)
        self._cards(promotion, active=False)

    def _cards(self, promotion: LearningPromotion, *, active: bool) -> None:
        for memory_id in Memory.objects.filter(promotion_id=promotion.pk).values_list("pk", flat=True):
            memory_card_set_status(memory_id=memory_id, active=active)


class AgentLearningWriter:
    """A prevention prompt from repeated thumbs-down on similar responses (``agent_learnings``).
    Proposed by the agent-learning scan; the subject is the first thumbs-down of the group."""

    # The subject: the first thumbs-down of a group, the first failed run of a tool, the first
    # deterministic eval failure, or a task rated bad (see promotions/scanners).
    subject_types: tuple[str, ...] = ("response_feedback", "tool_failure", "eval_failure", "task_feedback")

    def prepare(self, *, subject_type: str, subject_id: str, actor: Actor, learning: dict[str, Any]) -> dict[str, Any]:
        if parse_uuid(subject_id) is None:
            raise ApplicationError(f"subject_id must be the id of a {subject_type}.", field="subject_id")
        if subject_type == "task_feedback":
            found = TaskFeedback.objects.filter(pk=subject_id, rating=TaskFeedback.Rating.BAD).exists()
        else:
            kinds = {
                "response_feedback": Q(event_type="response_feedback"),
                "tool_failure": Q(event_type="post_command", signal="failed"),
                "eval_failure": Q(event_family="eval_failure"),
            }
            found = FeedbackEvent.objects.filter(kinds[subject_type], pk=subject_id).exists()
        if not found:
            raise ApplicationError(f"No {subject_type.replace('_', ' ')} {subject_id}.", field="subject_id")
        if not isinstance(learning.get("prevention_prompt"), str) or not learning["prevention_prompt"].strip():
            raise ApplicationError("An agent learning needs a prevention_prompt (text).", field="proposed_learning")
        tags = learning.get("tags", [])
        if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
            raise ApplicationError("tags must be a list of strings.", field="proposed_learning")
        if not all(isinstance(learning.get(key, ""), str) for key in ("title", "tool_name")):
            raise ApplicationError("title and tool_name must be text.", field="proposed_learning")
        if steering_reasons(str(learning["prevention_prompt"])):
            raise ApplicationError(
                "The prevention prompt reads like instructions from a user.", field="proposed_learning"
            )
        return learning

    def apply(self, promotion: LearningPromotion) -> Destination:
        row = agent_learning_create(
            promotion_id=promotion.pk, learning=promotion.proposed_learning, project=promotion.project
        )
        return Destination(table=AgentLearning._meta.db_table, record_id=str(row.pk))

    def pause(self, promotion: LearningPromotion) -> None:
        agent_learning_set_status(promotion_id=promotion.pk, status=AgentLearning.Status.PAUSED)

    def resume(self, promotion: LearningPromotion) -> None:
        agent_learning_set_status(promotion_id=promotion.pk, status=AgentLearning.Status.ACTIVE)

    def retire(self, promotion: LearningPromotion) -> None:
        agent_learning_set_status(promotion_id=promotion.pk, status=AgentLearning.Status.RETIRED)


class WorkflowWriter:
    """A private learned workflow shared as a copy that reaches a project's members (or everybody,
    for ``team``) in their context (``user_learned_workflows``)."""

    subject_types: tuple[str, ...] = ("workflow",)

    def prepare(self, *, subject_type: str, subject_id: str, actor: Actor, learning: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(learning.get("project") or "", str) or not isinstance(learning.get("visibility", ""), str):
            raise ApplicationError("project and visibility must be text.", field="proposed_learning")
        project = None
        if learning.get("project"):
            project = Project.objects.filter(slug=learning["project"]).first()
            if project is None:
                raise ApplicationError(f"No project {learning['project']!r}.", field="project")
        return workflow_share_check(
            workflow_id=subject_id, visibility=str(learning.get("visibility", "project")), project=project
        )

    def apply(self, promotion: LearningPromotion) -> Destination:
        row = workflow_share_apply(
            promotion_id=promotion.pk, workflow_id=promotion.subject_id, learning=promotion.proposed_learning
        )
        return Destination(table=LearnedWorkflow._meta.db_table, record_id=str(row.pk))

    def pause(self, promotion: LearningPromotion) -> None:
        workflow_share_set_status(promotion_id=promotion.pk, active=False)

    def resume(self, promotion: LearningPromotion) -> None:
        workflow_share_set_status(promotion_id=promotion.pk, active=True)

    def retire(self, promotion: LearningPromotion) -> None:
        workflow_share_set_status(promotion_id=promotion.pk, active=False, missing_ok=True)


class PacketRuleWriter:
    """A learned packet rule (``intelligence_packet_rules``): section order, a card type raised or
    lowered, a shorter staleness window, a confirming source, a watched source. Proposed by the
    packet-rule scan; the subject is the pattern the rule is about."""

    subject_types: tuple[str, ...] = ("packet_rule",)

    def prepare(self, *, subject_type: str, subject_id: str, actor: Actor, learning: dict[str, Any]) -> dict[str, Any]:
        if not subject_id.strip():
            raise ApplicationError("subject_id must name the rule's pattern.", field="subject_id")
        return packet_rule_check(learning=learning)

    def apply(self, promotion: LearningPromotion) -> Destination:
        rule = packet_rule_create(
            promotion_id=promotion.pk, project=promotion.project, learning=promotion.proposed_learning
        )
        return Destination(table=PacketRule._meta.db_table, record_id=str(rule.pk))

    def pause(self, promotion: LearningPromotion) -> None:
        packet_rule_set_status(promotion_id=promotion.pk, status=RuleStatus.PAUSED)

    def resume(self, promotion: LearningPromotion) -> None:
        packet_rule_set_status(promotion_id=promotion.pk, status=RuleStatus.ACTIVE)

    def retire(self, promotion: LearningPromotion) -> None:
        packet_rule_set_status(promotion_id=promotion.pk, status=RuleStatus.SUPERSEDED, missing_ok=True)


class AttributionRuleWriter:
    """A learned attribution rule (``intelligence_attribution_rules``): documents matching the
    pattern (a phrase, folder, participant or sender domain) count as evidence for the target.
    Proposed by the attribution scan; the subject is the pattern ("alias:the dig")."""

    subject_types: tuple[str, ...] = ("attribution_pattern",)

    def prepare(self, *, subject_type: str, subject_id: str, actor: Actor, learning: dict[str, Any]) -> dict[str, Any]:
        target_id = learning.get("target_id")
        if not isinstance(target_id, int) or isinstance(target_id, bool):
            raise ApplicationError("An attribution rule names its target_id (a number).", field="proposed_learning")
        if not IntelligenceTarget.objects.filter(pk=target_id, active=True).exists():
            raise ApplicationError(f"No active target {target_id}.", field="proposed_learning")
        kind = learning.get("match_kind")
        if not isinstance(kind, str) or not isinstance(learning.get("pattern"), str):
            raise ApplicationError("match_kind and pattern must be text.", field="proposed_learning")
        pattern = rule_pattern_normalise(match_kind=kind, pattern=learning["pattern"])
        return {**learning, "pattern": pattern}

    def apply(self, promotion: LearningPromotion) -> Destination:
        rule = attribution_rule_create(promotion_id=promotion.pk, learning=promotion.proposed_learning)
        return Destination(table=AttributionRule._meta.db_table, record_id=str(rule.pk))

    def pause(self, promotion: LearningPromotion) -> None:
        attribution_rule_set_status(promotion_id=promotion.pk, status=RuleStatus.PAUSED)

    def resume(self, promotion: LearningPromotion) -> None:
        attribution_rule_set_status(promotion_id=promotion.pk, status=RuleStatus.ACTIVE)

    def retire(self, promotion: LearningPromotion) -> None:
        attribution_rule_set_status(promotion_id=promotion.pk, status=RuleStatus.SUPERSEDED, missing_ok=True)


WRITERS: dict[str, DestinationWriter] = {
    "task_example": TaskExampleWriter(),
    "retrieval_weight": RetrievalWeightWriter(),
    "memory": MemoryWriter(),
    "agent_learning": AgentLearningWriter(),
    "workflow": WorkflowWriter(),
    "packet_rule": PacketRuleWriter(),
    "attribution_rule": AttributionRuleWriter(),
}


def writer_for(promotion_type: str) -> DestinationWriter:
    writer = WRITERS.get(promotion_type)
    if writer is None:
        raise ApplicationError(
            f"Unknown promotion type {promotion_type!r}; expected one of {', '.join(sorted(WRITERS))}.",
            field="promotion_type",
        )
    return writer
