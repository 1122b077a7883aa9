"""The workflow-outcome scanner: a generated task whose workflow outcomes succeed with high
confidence becomes a task example (the workflow-outcome path).

Outcomes are ``workflow_outcome`` events about a rated task (subject ``task_feedback``, or the
``ai_task_feedback`` row as their source): completed, positive or accepted count as successes,
failed or negative as failures. Only outcomes the product reports (a service key or the system)
count: a user's own report is evidence for a person, not for an automatic path. **High confidence**
is the Wilson lower bound of the success share, at WORKFLOW_OUTCOME_Z, reaching
WORKFLOW_OUTCOME_MIN_CONFIDENCE (by default 0.6 at z 1.28: three successes and no failure, or eight
of nine). Such a task, rated good, is proposed as a ``task_example`` (or its open candidate
reinforced) and applied at once when its text is low risk; otherwise a person decides."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import timedelta

from django.db.models import Q
from django.utils import timezone

from accounts.actors import Actor
from config.exceptions import ApplicationError
from core.ids import parse_uuid
from feedback.models import EventFamily, FeedbackEvent, Signal, TaskFeedback
from promotions.conf import promotions_settings
from promotions.destinations import task_example_learning, task_example_titles_taken, task_title
from promotions.models import PromotionPath
from promotions.risk import risk_classify
from promotions.scanners.paths import evidence_spent, proposals_submit
from promotions.scanners.retrieval import wilson
from promotions.services import Proposal

SUCCESS = (Signal.COMPLETED, Signal.POSITIVE, Signal.ACCEPTED)
FAILURE = (Signal.FAILED, Signal.NEGATIVE)
MAX_EVENTS = 20_000


@dataclass
class WorkflowOutcomeReport:
    outcomes: int = 0
    tasks: int = 0
    high_confidence: int = 0
    not_eligible: int = 0  # high confidence, but the task is missing, not rated good, or a duplicate
    proposed: int = 0
    reinforced: int = 0
    applied: int = 0
    waiting: int = 0


def _task_id(event: FeedbackEvent) -> str | None:
    raw = event.subject_id if event.subject_type == "task_feedback" else event.source_record_id
    pk = parse_uuid(raw)
    return str(pk) if pk else None


def workflow_outcome_scan(*, actor: Actor | None = None) -> WorkflowOutcomeReport:
    """Count each rated task's reported workflow outcomes; tasks with a high-confidence success share
    are proposed (or reinforced) as task examples, applied at once at low risk."""
    actor = actor or Actor.for_system()
    conf = promotions_settings
    since = timezone.now() - timedelta(days=conf.WORKFLOW_OUTCOME_DAYS)
    used = evidence_spent(promotion_type="task_example", subject_types=["task_feedback"], since=since)
    about_task = Q(subject_type="task_feedback") | Q(source_table=TaskFeedback._meta.db_table)
    events = list(
        FeedbackEvent.objects.filter(about_task, event_family=EventFamily.WORKFLOW_OUTCOME, created_at__gte=since)
        .filter(signal__in=[*SUCCESS, *FAILURE])
        .exclude(writer__startswith="user:")
        .order_by("created_at")[:MAX_EVENTS]
    )
    report = WorkflowOutcomeReport()
    per_task: dict[str, list[FeedbackEvent]] = defaultdict(list)
    for event in events:
        task_id = _task_id(event)
        if task_id is not None and str(event.pk) not in used:
            per_task[task_id].append(event)
            report.outcomes += 1
    report.tasks = len(per_task)
    confident: dict[str, tuple[list[FeedbackEvent], float, int]] = {}
    for task_id, outcomes in per_task.items():
        successes = sum(e.signal in SUCCESS for e in outcomes)
        lower, _ = wilson(successes, len(outcomes), conf.WORKFLOW_OUTCOME_Z)
        if lower >= conf.WORKFLOW_OUTCOME_MIN_CONFIDENCE:
            confident[task_id] = (outcomes, lower, successes)
    report.high_confidence = len(confident)
    tasks = TaskFeedback.objects.select_related("project").in_bulk(list(confident))
    taken = task_example_titles_taken(project_ids={t.project_id for t in tasks.values()})
    proposals = []
    for task_id, (outcomes, lower, successes) in confident.items():
        feedback = tasks.get(parse_uuid(task_id))
        if feedback is None or feedback.promoted:
            report.not_eligible += 1
            continue
        own = (feedback.project_id, task_title(feedback.task_snapshot))
        feedback.completed = True  # the reported outcomes are the evidence it was completed (not saved)
        try:
            learning = task_example_learning(feedback, actor=actor, taken=taken - {own})
        except ApplicationError:
            report.not_eligible += 1
            continue
        risk = risk_classify(texts=[learning["title"], learning["description"], learning["reason"]])
        learning.update(
            {
                "outcomes": {"successes": successes, "total": len(outcomes), "lower_bound": round(lower, 3)},
                "risk": risk.as_dict(),
            }
        )
        proposals.append(
            Proposal(
                subject_id=task_id,
                proposed_learning=learning,
                confidence=round(lower, 3),
                risk_level=risk.level,
                project=feedback.project,
                source_event_ids=[str(e.pk) for e in outcomes],
                promotion_path=PromotionPath.WORKFLOW_OUTCOME,
                rule=(
                    f"high_confidence_workflow_outcome: {successes} of {len(outcomes)} reported outcomes succeeded; "
                    f"Wilson lower bound {lower:.3f} >= {conf.WORKFLOW_OUTCOME_MIN_CONFIDENCE} "
                    f"(z {conf.WORKFLOW_OUTCOME_Z}), within {conf.WORKFLOW_OUTCOME_DAYS} days"
                ),
            )
        )
    counts = proposals_submit(
        actor=actor, promotion_type="task_example", subject_type="task_feedback", proposals=proposals
    )
    report.proposed, report.reinforced, report.applied, report.waiting = (
        counts.proposed,
        counts.reinforced,
        counts.applied,
        counts.waiting,
    )
    return report
