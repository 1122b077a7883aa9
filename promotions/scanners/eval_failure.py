"""The eval-failure scanner: a deterministic eval failure that maps to a prevention rule becomes a
prevention prompt (the eval-failure path).

``eval_failure`` events are written by the product (the analyzer's fallbacks and give-ups) and by
eval harnesses. One maps to a prevention rule when the product reported it (a service key or the
system, never a user's own report), it is marked ``metadata.deterministic`` true (a check that
fails the same way every time, not a model's judgement), and it says what was expected in
``metadata.expected`` (the rule the check enforces: "Dates are written as YYYY-MM-DD."), with the
check's name in ``metadata.check``. Everything else (the analyzer's infrastructure failures among
them) is counted as unmapped and left alone. Failures of one check with one expectation, in one
project and tool, are one candidate (``agent_learning``), applied at once at low risk."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.utils import timezone

from accounts.actors import Actor
from core.text import normalise
from feedback.models import EventFamily, FeedbackEvent, Signal
from learning.safety import quoted, steering_reasons
from promotions.conf import promotions_settings
from promotions.models import PromotionPath
from promotions.risk import risk_classify
from promotions.scanners.paths import evidence_spent, proposals_submit
from promotions.services import Proposal

MAX_EVENTS = 5000


@dataclass
class EvalFailureReport:
    failures: int = 0
    unmapped: int = 0  # not deterministic, no expectation, or reported by a user
    flagged: int = 0  # an expectation that reads like steering: never a prompt
    groups: int = 0
    proposed: int = 0
    reinforced: int = 0
    applied: int = 0
    waiting: int = 0


def _metadata(event: FeedbackEvent) -> dict[str, Any]:
    return event.metadata if isinstance(event.metadata, dict) else {}


def prevention_rule(event: FeedbackEvent) -> tuple[str, str, str] | None:
    """(check, expected, tool) when the failure maps to a prevention rule (see the module), else None."""
    metadata = _metadata(event)
    if event.writer.startswith("user:") or metadata.get("deterministic") is not True:
        return None
    expected = " ".join(str(metadata.get("expected") or "").split())[:500]
    if not expected:
        return None
    check = str(metadata.get("check") or event.reason_category or event.event_type)[:100]
    return check, expected, str(metadata.get("tool_name") or "")[:100]


def eval_failure_scan(*, actor: Actor | None = None) -> EvalFailureReport:
    """Read recent eval failures; those that map to a prevention rule, grouped by check,
    expectation, project and tool, propose (or reinforce) one prevention prompt each."""
    actor = actor or Actor.for_system()
    conf = promotions_settings
    since = timezone.now() - timedelta(days=conf.EVAL_FAILURE_DAYS)
    used = evidence_spent(promotion_type="agent_learning", subject_types=["eval_failure"], since=since)
    events = [
        e
        for e in FeedbackEvent.objects.filter(
            event_family=EventFamily.EVAL_FAILURE, signal=Signal.FAILED, created_at__gte=since
        )
        .select_related("project")
        .order_by("created_at")[:MAX_EVENTS]
        if str(e.pk) not in used
    ]
    report = EvalFailureReport(failures=len(events))
    groups: dict[tuple[Any, ...], list[FeedbackEvent]] = {}
    rules: dict[tuple[Any, ...], tuple[str, str, str]] = {}
    for event in events:
        rule = prevention_rule(event)
        if rule is None:
            report.unmapped += 1
            continue
        if steering_reasons(rule[1]):
            report.flagged += 1
            continue
        key = (event.project_id, rule[0], normalise(rule[1]), rule[2])
        groups.setdefault(key, []).append(event)
        rules.setdefault(key, rule)
    proposals = []
    for key, members in groups.items():
        check, expected, tool = rules[key]
        report.groups += 1
        observed = list(dict.fromkeys(" ".join(e.free_text.split())[:200] for e in members if e.free_text.strip()))[:2]
        prompt = f"An automatic check ({check}) failed {len(members)} time(s): expected {quoted(expected, 500)}."
        if observed:
            prompt += " Observed: " + "; ".join(quoted(o, 200) for o in observed) + "."
        prompt += " Make sure the answer meets this expectation."
        tags = [str(t)[:50] for t in _metadata(members[0]).get("tags") or [] if isinstance(t, str)][:20]
        risk = risk_classify(texts=[prompt], tags=tags, tool_name=tool)
        proposals.append(
            Proposal(
                subject_id=str(members[0].pk),
                proposed_learning={
                    "title": f"Eval {check} failed {len(members)} time(s)"[:200],
                    "prevention_prompt": prompt,
                    "tool_name": tool,
                    "tags": sorted({"eval", *tags})[:20],
                    "evidence": [{"event": str(e.pk), "observed": e.free_text[:500]} for e in members[:10]],
                    "risk": risk.as_dict(),
                },
                confidence=1.0,  # deterministic: it fails the same way every time
                risk_level=risk.level,
                project=members[0].project,
                source_event_ids=[str(e.pk) for e in members],
                promotion_path=PromotionPath.EVAL_FAILURE,
                rule=(
                    f"deterministic_eval_failure: check {check!r} failed (deterministic, reported by the product) "
                    f"and maps to the prevention rule {quoted(expected, 200)}"
                ),
            )
        )
    counts = proposals_submit(
        actor=actor, promotion_type="agent_learning", subject_type="eval_failure", proposals=proposals
    )
    report.proposed, report.reinforced, report.applied, report.waiting = (
        counts.proposed,
        counts.reinforced,
        counts.applied,
        counts.waiting,
    )
    return report
