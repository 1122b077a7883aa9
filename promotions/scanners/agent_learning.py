"""The agent-learning scanner: thumbs-down on assistant responses become candidate prevention
prompts (``agent_learning`` promotions), with the responses as their evidence.

Two rules fire here. A thumbs-down alone opens a candidate for a person (``one_off_thumbs_down``,
the human-review path: Gate 4). Thumbs-down on at least AGENT_SCAN_MIN_SUPPORT distinct responses
with similar signatures (the embedding of response and reason, within one project and tool) are
the same failure repeated (``repeated_thumbs_down``, the repeated-failure path): the open candidate
of any of them is reinforced with the whole group, or a new one opened, and at low risk
(``promotions.risk``) it is approved and applied at once; otherwise it waits for a person."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.utils import timezone

from accounts.actors import Actor
from core.embeddings import get_embedder
from feedback.models import EventFamily, FeedbackEvent, Signal
from feedback.services.events import EventInput, event_record
from learning.safety import quoted, steering_reasons
from promotions.conf import promotions_settings
from promotions.models import PromotionPath
from promotions.risk import risk_classify
from promotions.scanners.paths import evidence_spent, proposals_submit
from promotions.services import Proposal

ONE_OFF_RULE = "one_off_thumbs_down: a single thumbs-down opens a candidate for a person to review (Gate 4)"


@dataclass
class AgentScanReport:
    thumbs_down: int = 0
    groups: int = 0
    proposed: int = 0
    flagged: int = 0
    one_off: int = 0  # candidates opened from a single thumbs-down, for a person
    reinforced: int = 0  # open candidates given new similar evidence
    applied: int = 0  # repeated failures at low risk, approved and applied automatically
    waiting: int = 0  # repeated failures whose risk is not low: a person decides


def agent_learning_scan(*, actor: Actor | None = None) -> AgentScanReport:
    """Group recent thumbs-down on assistant responses by similarity (embedding of the response and
    the reason, within one project and tool); every group of at least AGENT_SCAN_MIN_SUPPORT
    distinct responses becomes one candidate prevention prompt, with the responses as evidence.
    Thumbs-down already behind a promotion are not counted again; reasons that try to steer the
    assistant are flagged for review and never become a prompt."""
    actor = actor or Actor.for_system()
    conf = promotions_settings
    since = timezone.now() - timedelta(days=conf.AGENT_SCAN_DAYS)
    # Thumbs-down behind a decided promotion are spent; those behind an open candidate may reinforce it.
    used = evidence_spent(promotion_type="agent_learning", subject_types=["response_feedback"], since=since)
    events = [
        event
        for event in FeedbackEvent.objects.filter(
            event_type="response_feedback",
            event_family=EventFamily.ASSISTANT_RESPONSE,
            signal=Signal.NEGATIVE,
            created_at__gte=since,
        )
        .select_related("project")
        .order_by("-created_at")[: conf.AGENT_SCAN_MAX_EVENTS]
        if str(event.pk) not in used
    ]
    report = AgentScanReport(thumbs_down=len(events))
    already_flagged = set(
        FeedbackEvent.objects.filter(
            event_type="learned_text_flagged",
            subject_type="feedback_event",
            subject_id__in=[str(e.pk) for e in events],
        ).values_list("subject_id", flat=True)
    )
    clean = []
    for event in events:
        if str(event.pk) in already_flagged:
            continue  # flagged by an earlier scan: left for review, not counted again
        if steering_reasons(event.free_text) or steering_reasons(_response_text(event)):
            report.flagged += 1
            _flag(event)
        else:
            clean.append(event)
    if not clean:
        return report
    clean.reverse()  # oldest first: a group is named after its first thumbs-down
    vectors = get_embedder().embed([f"{_response_text(e)[:2000]}\n{e.free_text[:500]}" for e in clean])
    groups: list[list[int]] = []
    for index, event in enumerate(clean):
        for group in groups:
            first = clean[group[0]]
            same_scope = (first.project_id, _tool(first)) == (event.project_id, _tool(event))
            if same_scope and float(vectors[group[0]] @ vectors[index]) >= conf.AGENT_SCAN_SIMILARITY:
                group.append(index)
                break
        else:
            groups.append([index])
    repeated: list[Proposal] = []
    one_off: list[Proposal] = []
    for group in groups:
        members = [clean[i] for i in group]
        support = len({e.subject_id for e in members})
        learning = _prevention(members)
        risk = risk_classify(
            texts=[learning["prevention_prompt"], *(e.free_text for e in members), *map(_response_text, members)],
            tags=learning["tags"],
            tool_name=learning["tool_name"],
        )
        learning["risk"] = risk.as_dict()
        if support >= conf.AGENT_SCAN_MIN_SUPPORT:
            report.groups += 1
            path, rule, target = PromotionPath.REPEATED_FAILURE, _repeated_rule(support), repeated
        else:
            path, rule, target = PromotionPath.HUMAN_REVIEW, ONE_OFF_RULE, one_off
        target.append(
            Proposal(
                subject_id=str(members[0].pk),
                proposed_learning=learning,
                confidence=round(1 - 1 / (1 + support / conf.AGENT_SCAN_MIN_SUPPORT), 3),
                risk_level=risk.level,
                project=members[0].project,
                source_event_ids=[str(e.pk) for e in members],
                promotion_path=path,
                rule=rule,
            )
        )
    # The repeated groups first: a one-off's candidate they absorb is reinforced, not proposed again.
    counts = proposals_submit(
        actor=actor, promotion_type="agent_learning", subject_type="response_feedback", proposals=repeated
    )
    report.proposed, report.reinforced, report.applied, report.waiting = (
        counts.proposed,
        counts.reinforced,
        counts.applied,
        counts.waiting,
    )
    singles = proposals_submit(
        actor=actor, promotion_type="agent_learning", subject_type="response_feedback", proposals=one_off
    )
    report.one_off = singles.proposed
    return report


def _repeated_rule(support: int) -> str:
    conf = promotions_settings
    return (
        f"repeated_thumbs_down: {support} thumbs-down on distinct responses (at least {conf.AGENT_SCAN_MIN_SUPPORT}) "
        f"with similar signatures (embedding similarity of response and reason >= {conf.AGENT_SCAN_SIMILARITY}), "
        f"in one project and tool, within {conf.AGENT_SCAN_DAYS} days"
    )


# Thumbs-down may also reach the stream through the generic events API, in any shape: these
# readers take only what they can use, and never fail on the rest.
def _snapshot(event: FeedbackEvent) -> dict[str, Any]:
    return event.after_snapshot if isinstance(event.after_snapshot, dict) else {}


def _response_text(event: FeedbackEvent) -> str:
    return str(_snapshot(event).get("response") or "")


def _tool(event: FeedbackEvent) -> str:
    metadata = event.metadata if isinstance(event.metadata, dict) else {}
    return str(metadata.get("tool_name") or "")[:100]


def _tags(event: FeedbackEvent) -> list[str]:
    metadata = event.metadata if isinstance(event.metadata, dict) else {}
    tags = metadata.get("tags")
    return [str(tag)[:50] for tag in tags] if isinstance(tags, list) else []


def _prevention(members: list[FeedbackEvent]) -> dict[str, Any]:
    """The proposed prevention prompt: what went wrong, in the users' words, quoted as evidence."""
    tool = _tool(members[0])
    reasons = list(dict.fromkeys(" ".join(e.free_text.split())[:200] for e in members if e.free_text.strip()))[:3]
    where = f" from {tool}" if tool else ""
    prompt = f"Users rejected {len(members)} similar responses{where}."
    if reasons:
        prompt += " Their reasons: " + "; ".join(quoted(r, 200) for r in reasons) + "."
    excerpt = quoted(_response_text(members[0]), 160)
    prompt += f" One such response began {excerpt}. Before answering a similar request, avoid these problems."
    return {
        "title": f"{len(members)} thumbs-down on similar responses{where}"[:200],
        "prevention_prompt": prompt,
        "tool_name": tool,
        "tags": sorted({tag for e in members for tag in _tags(e)})[:20],
        "evidence": [
            {
                "event": str(e.pk),
                "response_id": e.subject_id,
                "reason": e.free_text[:500],
                "response": _response_text(e)[:500],
                "tool_trace": _snapshot(e).get("tool_trace"),
            }
            for e in members[:10]
        ],
    }


def _flag(event: FeedbackEvent) -> None:
    # Written by the system whoever runs the scan: an admin's own actor may not write an event about
    # another user, and one writer keeps the idempotency key meaning one flag per thumbs-down.
    event_record(
        actor=Actor.for_system(),
        data=EventInput(
            event_type="learned_text_flagged",
            event_family=EventFamily.ASSISTANT_RESPONSE,
            signal=Signal.NEEDS_REVIEW,
            user_id=event.user_id,
            surface="agent_learning_scan",
            subject_type="feedback_event",
            subject_id=str(event.pk),
            reason_category="steering",
            free_text=event.free_text[:10_000],
            idempotency_key=f"steering:{event.pk}",
        ),
    )
