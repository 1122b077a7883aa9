"""The tool-failure scanner: the same failure of one tool, repeated, becomes a prevention prompt.

A failed run is a ``post_command`` event with the ``failed`` signal (``learning.services.taste``).
Its signature is the tool (plugin and command) and the error it showed, with numbers and ids
masked. Failed runs of one tool in one project whose signatures are at least
TOOL_FAILURE_SIMILARITY alike (word cosine), on at least TOOL_FAILURE_MIN_SUPPORT distinct runs,
are the same failure repeated (the repeated-failure path): one ``agent_learning`` candidate scoped
to that tool, applied at once at low risk, else waiting for a person."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.utils import timezone

from accounts.actors import Actor
from core.text import lexical_similarity
from feedback.models import EventFamily, FeedbackEvent, Signal
from learning.safety import quoted, steering_reasons
from promotions.conf import promotions_settings
from promotions.models import PromotionPath
from promotions.risk import risk_classify
from promotions.scanners.paths import evidence_spent, proposals_submit
from promotions.services import Proposal

MASK = re.compile(r"\b[0-9a-f]{8,}\b|\d+", re.IGNORECASE)
MAX_EVENTS = 5000


@dataclass
class ToolFailureReport:
    failed_runs: int = 0
    groups: int = 0
    proposed: int = 0
    reinforced: int = 0
    applied: int = 0
    waiting: int = 0


def _metadata(event: FeedbackEvent) -> dict[str, Any]:
    return event.metadata if isinstance(event.metadata, dict) else {}


def tool_of(event: FeedbackEvent) -> str:
    """The tool a run belongs to, as agent learnings name it: ``plugin/command``."""
    metadata = _metadata(event)
    return f"{metadata.get('plugin') or ''}/{metadata.get('command') or ''}"[:100]


def failure_signature(event: FeedbackEvent) -> str:
    """What went wrong, comparable across runs: the error text (or the output) with numbers and ids masked."""
    snapshot = event.after_snapshot if isinstance(event.after_snapshot, dict) else {}
    error = str(_metadata(event).get("error") or event.free_text or snapshot.get("output") or "")
    return MASK.sub("#", " ".join(error.split())[:1000])


def tool_failure_scan(*, actor: Actor | None = None) -> ToolFailureReport:
    """Group recent failed tool runs by tool and signature; a group of at least
    TOOL_FAILURE_MIN_SUPPORT runs proposes (or reinforces) one prevention prompt for that tool."""
    actor = actor or Actor.for_system()
    conf = promotions_settings
    since = timezone.now() - timedelta(days=conf.TOOL_FAILURE_DAYS)
    used = evidence_spent(promotion_type="agent_learning", subject_types=["tool_failure"], since=since)
    events = [
        event
        for event in FeedbackEvent.objects.filter(
            event_type="post_command",
            event_family=EventFamily.TOOL_ACTION,
            signal=Signal.FAILED,
            created_at__gte=since,
        )
        .select_related("project")
        .order_by("created_at")[:MAX_EVENTS]
        if str(event.pk) not in used
    ]
    report = ToolFailureReport(failed_runs=len(events))
    groups: list[list[FeedbackEvent]] = []
    for event in events:
        signature = failure_signature(event)
        if not signature or steering_reasons(signature):
            continue  # nothing to compare, or text that tries to steer: never a prompt
        for group in groups:
            first = group[0]
            same_tool = (first.project_id, tool_of(first)) == (event.project_id, tool_of(event))
            if same_tool and lexical_similarity(failure_signature(first), signature) >= conf.TOOL_FAILURE_SIMILARITY:
                group.append(event)
                break
        else:
            groups.append([event])
    proposals = []
    for members in groups:
        runs = len({e.subject_id for e in members})
        if runs < conf.TOOL_FAILURE_MIN_SUPPORT:
            continue
        report.groups += 1
        tool = tool_of(members[0])
        errors = list(dict.fromkeys(failure_signature(e)[:200] for e in members))[:3]
        prompt = (
            f"The tool {tool} failed {runs} times in a similar way: "
            + "; ".join(quoted(error, 200) for error in errors)
            + ". Before running it again, check its inputs for the cause of this error and avoid repeating it."
        )
        risk = risk_classify(texts=[prompt], tool_name=tool)
        learning = {
            "title": f"{runs} similar failures of {tool}"[:200],
            "prevention_prompt": prompt,
            "tool_name": tool,
            "tags": ["tool_failure"],
            "evidence": [
                {"event": str(e.pk), "run": e.subject_id, "error": failure_signature(e)[:500]} for e in members[:10]
            ],
            "risk": risk.as_dict(),
        }
        proposals.append(
            Proposal(
                subject_id=str(members[0].pk),
                proposed_learning=learning,
                confidence=round(1 - 1 / (1 + runs / conf.TOOL_FAILURE_MIN_SUPPORT), 3),
                risk_level=risk.level,
                project=members[0].project,
                source_event_ids=[str(e.pk) for e in members],
                promotion_path=PromotionPath.REPEATED_FAILURE,
                rule=(
                    f"repeated_tool_failure: {runs} failed runs of {tool} (at least {conf.TOOL_FAILURE_MIN_SUPPORT}) "
                    f"with error signatures at least {conf.TOOL_FAILURE_SIMILARITY} alike, within "
                    f"{conf.TOOL_FAILURE_DAYS} days"
                ),
            )
        )
    counts = proposals_submit(
        actor=actor, promotion_type="agent_learning", subject_type="tool_failure", proposals=proposals
    )
    report.proposed, report.reinforced, report.applied, report.waiting = (
        counts.proposed,
        counts.reinforced,
        counts.applied,
        counts.waiting,
    )
    return report
