"""The task-rating scanner: a generated task rated bad, with its reason, proposes or reinforces a
prevention prompt for task generation (an ``agent_learning`` candidate about the rated task).

A bad rating alone opens a candidate for a person (``bad_task_rating``, human review). Bad ratings
in one project whose reason and task are at least TASK_RATING_SIMILARITY alike (word cosine) are one
failure: the candidate of any of them is reinforced with them all, and once it rests on at least
AGENT_SCAN_MIN_SUPPORT distinct tasks it is a repeated failure, applied at once at low risk."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.utils import timezone

from accounts.actors import Actor
from core.text import lexical_similarity
from feedback.models import FeedbackEvent, TaskFeedback
from learning.safety import quoted, steering_reasons
from promotions.conf import promotions_settings
from promotions.models import PromotionPath
from promotions.risk import risk_classify
from promotions.scanners.paths import evidence_spent, proposals_submit
from promotions.services import Proposal

MAX_TASKS = 5000
# Agent learnings from task ratings carry this tag: task generation's context asks for it.
TASK_GENERATION_TAG = "task_generation"


@dataclass
class TaskRatingReport:
    bad_ratings: int = 0
    flagged: int = 0
    proposed: int = 0
    reinforced: int = 0
    applied: int = 0
    waiting: int = 0


def _title(feedback: TaskFeedback) -> str:
    snapshot = feedback.task_snapshot if isinstance(feedback.task_snapshot, dict) else {}
    return str(snapshot.get("title") or "")[:300]


def _signature(feedback: TaskFeedback) -> str:
    return f"{feedback.reason} {_title(feedback)}"


def task_rating_scan(*, actor: Actor | None = None) -> TaskRatingReport:
    """Group recent bad task ratings that give a reason; each group proposes or reinforces one
    prevention prompt for task generation in its project."""
    actor = actor or Actor.for_system()
    conf = promotions_settings
    since = timezone.now() - timedelta(days=conf.TASK_RATING_DAYS)
    used = evidence_spent(promotion_type="agent_learning", subject_types=["task_feedback"], since=since)
    ratings = list(
        TaskFeedback.objects.filter(rating=TaskFeedback.Rating.BAD, created_at__gte=since)
        .exclude(reason="")
        .select_related("project")
        .order_by("created_at")[:MAX_TASKS]
    )
    # Each rating's task_rated event (written with it): the evidence the ledger cites.
    events = dict(
        FeedbackEvent.objects.filter(
            source_table=TaskFeedback._meta.db_table,
            source_record_id__in=[str(r.pk) for r in ratings],
            event_type="task_rated",
        ).values_list("source_record_id", "pk")
    )
    report = TaskRatingReport()
    groups: list[list[TaskFeedback]] = []
    for rating in ratings:
        event_id = events.get(str(rating.pk))
        if event_id is None or str(event_id) in used:
            continue
        report.bad_ratings += 1
        if steering_reasons(_signature(rating)):
            report.flagged += 1
            continue
        for group in groups:
            if (
                group[0].project_id == rating.project_id
                and lexical_similarity(_signature(group[0]), _signature(rating)) >= conf.TASK_RATING_SIMILARITY
            ):
                group.append(rating)
                break
        else:
            groups.append([rating])
    proposals = []
    for members in groups:
        support = len(members)
        reasons = list(dict.fromkeys(" ".join(m.reason.split())[:200] for m in members))[:3]
        prompt = (
            f"Generated tasks were rated bad {support} time(s) for similar reasons: "
            + "; ".join(quoted(reason, 200) for reason in reasons)
            + f". One such task was titled {quoted(_title(members[0]), 120)}."
            + " When generating tasks, avoid these problems."
        )
        risk = risk_classify(texts=[prompt], tags=[TASK_GENERATION_TAG])
        repeated = support >= conf.AGENT_SCAN_MIN_SUPPORT
        proposals.append(
            Proposal(
                subject_id=str(members[0].pk),
                proposed_learning={
                    "title": f"{support} bad task rating(s): {reasons[0][:120]}"[:200],
                    "prevention_prompt": prompt,
                    "tool_name": "",
                    "tags": [TASK_GENERATION_TAG],
                    "evidence": [
                        {
                            "event": str(events[str(m.pk)]),
                            "task_feedback": str(m.pk),
                            "title": _title(m),
                            "reason": m.reason[:500],
                        }
                        for m in members[:10]
                    ],
                    "risk": risk.as_dict(),
                },
                confidence=round(1 - 1 / (1 + support / conf.AGENT_SCAN_MIN_SUPPORT), 3),
                risk_level=risk.level,
                project=members[0].project,
                source_event_ids=[str(events[str(m.pk)]) for m in members],
                promotion_path=PromotionPath.REPEATED_FAILURE if repeated else PromotionPath.HUMAN_REVIEW,
                rule=(
                    f"repeated_bad_task_rating: {support} bad ratings (at least {conf.AGENT_SCAN_MIN_SUPPORT}) whose "
                    f"reason and task are at least {conf.TASK_RATING_SIMILARITY} alike, "
                    f"within {conf.TASK_RATING_DAYS} days"
                    if repeated
                    else "bad_task_rating: a task rated bad with a reason proposes a prevention prompt for a person"
                ),
            )
        )
    counts = proposals_submit(
        actor=actor, promotion_type="agent_learning", subject_type="task_feedback", proposals=proposals
    )
    report.proposed, report.reinforced, report.applied, report.waiting = (
        counts.proposed,
        counts.reinforced,
        counts.applied,
        counts.waiting,
    )
    return report
