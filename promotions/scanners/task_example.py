"""The task-example scanner: completed tasks rated good become candidate task examples."""

from __future__ import annotations

from dataclasses import dataclass

from accounts.actors import Actor
from config.exceptions import ApplicationError
from core.ids import parse_uuid
from feedback.models import TaskFeedback
from promotions.conf import promotions_settings
from promotions.destinations import task_example_learning, task_example_titles_taken, task_title
from promotions.models import LearningPromotion
from promotions.services import Proposal, promotions_propose_bulk


@dataclass
class TaskExampleScanReport:
    eligible: int = 0
    proposed: int = 0


def task_example_scan(*, actor: Actor | None = None) -> TaskExampleScanReport:
    """Propose as task examples the tasks rated good and completed that are not examples yet (and
    have no promotion): the writer checks each is complete and not a duplicate."""
    actor = actor or Actor.for_system()
    behind_promotions = LearningPromotion.objects.filter(promotion_type="task_example").values("subject_id")
    eligible = (
        TaskFeedback.objects.filter(rating=TaskFeedback.Rating.GOOD, completed=True, promoted=False)
        .exclude(id__in=[parse_uuid(s) for s in behind_promotions.values_list("subject_id", flat=True)])
        .select_related("project")
        .order_by("created_at")[: promotions_settings.TASK_EXAMPLE_SCAN_MAX_TASKS]
    )
    rows = list(eligible)
    report = TaskExampleScanReport(eligible=len(rows))
    # Titles of examples and of open candidates are taken (else every later scan would propose
    # their duplicates); each proposal takes its own. Two queries for the whole scan.
    taken = task_example_titles_taken(project_ids={feedback.project_id for feedback in rows})
    proposals = []
    for feedback in rows:
        try:
            learning = task_example_learning(feedback, actor=actor, taken=taken)
        except ApplicationError:
            continue  # incomplete, a duplicate, or steering text
        taken.add((feedback.project_id, task_title(learning["title"])))
        proposals.append(
            Proposal(
                subject_id=str(feedback.pk),
                proposed_learning=learning,
                confidence=0.8,
                project=feedback.project,
                rule="task_rated_good: a completed task rated good is proposed as an example for a person",
            )
        )
    report.proposed = len(
        promotions_propose_bulk(
            actor=actor, promotion_type="task_example", subject_type="task_feedback", proposals=proposals
        )
    )
    return report
