"""The promotion ledger's state machine. Every lifecycle action is written to the feedback
stream (the audit trail) in the same transaction as the change it records."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.actors import Actor
from accounts.models import Project, User
from config.exceptions import AccessDenied, ApplicationError, Conflict, NotFoundError
from core.ids import parse_uuid
from feedback.models import EventFamily, Signal
from feedback.services.bulk import events_record_bulk
from feedback.services.events import EventInput, event_record
from intelligence.models import IntelligenceTarget
from promotions.conf import promotions_settings
from promotions.destinations import writer_for
from promotions.models import (
    AUTOMATIC_PATHS,
    LIVE_STATUSES,
    OPEN_STATUSES,
    LearningPromotion,
    PromotionPath,
    PromotionStatus,
    RiskLevel,
)
from promotions.summaries import promotion_summaries

logger = logging.getLogger(__name__)

S = PromotionStatus
# Rows per INSERT and events per bulk write (the event writer takes at most 1,000 at a time).
BULK_BATCH = 1000
# action: (states it may start from, state it leads to, the audit event's signal)
TRANSITIONS: dict[str, tuple[tuple[str, ...], str, str]] = {
    "approve": ((S.CANDIDATE,), S.APPROVED, Signal.ACCEPTED),
    "reject": ((S.CANDIDATE,), S.REJECTED, Signal.NEGATIVE),
    "apply": ((S.APPROVED,), S.APPLIED, Signal.COMPLETED),
    "pause": ((S.APPLIED,), S.PAUSED, Signal.IGNORED),
    "resume": ((S.PAUSED,), S.APPLIED, Signal.ACCEPTED),
    "supersede": (LIVE_STATUSES, S.SUPERSEDED, Signal.STALE),
    "expire": ((S.CANDIDATE,), S.EXPIRED, Signal.STALE),
}
# Not a transition: new evidence for an open candidate (its status does not change).
REINFORCE_SIGNAL = Signal.POSITIVE


def actions_from(status: str) -> list[str]:
    """The lifecycle actions a person may take on a promotion in this state, in the state machine's
    order (expiry is the schedule's, never a person's)."""
    return [action for action, (sources, _, _) in TRANSITIONS.items() if action != "expire" and status in sources]


def candidate_expires_at(now: datetime | None = None) -> datetime:
    """When a candidate opened now expires unless someone decides: CANDIDATE_EXPIRY_DAYS from now."""
    return (now or timezone.now()) + timedelta(days=promotions_settings.CANDIDATE_EXPIRY_DAYS)


def _path_check(promotion_path: str) -> None:
    if promotion_path not in PromotionPath.values:
        raise ApplicationError(
            f"promotion_path must be one of {', '.join(PromotionPath.values)}.", field="promotion_path"
        )


def _audit_input(
    *,
    promotion: LearningPromotion,
    action: str,
    actor: Actor,
    before: str,
    notes: str = "",
    signal: str | None = None,
    extra: dict[str, Any] | None = None,
) -> EventInput:
    """The feedback event of one lifecycle action: who did what to which promotion, from which state."""
    ledger = {"promotion_path": promotion.promotion_path, "rule": promotion.rule[:2000]}
    return EventInput(
        event_type=f"promotion_{action}",
        event_family=EventFamily.WORKFLOW_OUTCOME,
        signal=signal or TRANSITIONS[action][2],
        user_id=actor.user.pk if actor.user else None,
        project_slug=promotion.project.slug if promotion.project else None,
        target_id=str(promotion.target_id) if promotion.target_id else "",
        surface="promotion_ledger",
        subject_type="promotion",
        subject_id=str(promotion.pk),
        source_table=LearningPromotion._meta.db_table,
        source_record_id=str(promotion.pk),
        reason_category=promotion.promotion_type,
        free_text=notes[:10_000],
        before_snapshot={"status": before},
        after_snapshot={"status": promotion.status, **ledger, **(extra or {})},
        metadata=ledger,
    )


def _audit(**kwargs: Any) -> None:
    """One feedback event per lifecycle action, in the caller's transaction."""
    event_record(actor=kwargs["actor"], data=_audit_input(**kwargs))


def _require_reviewer(actor: Actor) -> User:
    if not actor.is_admin or actor.user is None:
        raise AccessDenied("Only staff admins review promotions.")
    return actor.user


def promotion_propose(
    *,
    actor: Actor,
    promotion_type: str,
    subject_type: str,
    subject_id: str,
    proposed_learning: dict[str, Any] | None = None,
    confidence: float = 0.5,
    risk_level: str = "low",
    project: Project | None = None,
    source_event_ids: list[str] | None = None,
    expires_at: datetime | None = None,
    notes: str = "",
    promotion_path: str = PromotionPath.HUMAN_REVIEW,
    rule: str = "",
    target: IntelligenceTarget | None = None,
) -> tuple[LearningPromotion, bool]:
    """Open a candidate; if the subject already has an open one, return that instead (created False).
    The destination writer checks the subject and may complete the proposed learning. The path and
    the rule that fired are recorded on it and in its audit event; it expires after
    CANDIDATE_EXPIRY_DAYS unless ``expires_at`` says otherwise."""
    writer = writer_for(promotion_type)
    _path_check(promotion_path)
    if risk_level not in RiskLevel.values:
        raise ApplicationError(f"risk_level must be one of {', '.join(RiskLevel.values)}.", field="risk_level")
    if subject_type not in writer.subject_types:
        raise ApplicationError(
            f"A {promotion_type} promotion is about a {' or a '.join(writer.subject_types)}.", field="subject_type"
        )
    if not 0 <= confidence <= 1:
        raise ApplicationError("confidence must be between 0 and 1.", field="confidence")
    proposed_learning = writer.prepare(
        subject_type=subject_type, subject_id=subject_id, actor=actor, learning=dict(proposed_learning or {})
    )
    existing = LearningPromotion.objects.filter(
        promotion_type=promotion_type, subject_type=subject_type, subject_id=subject_id, status__in=OPEN_STATUSES
    ).first()
    if existing is not None:
        return existing, False
    try:
        with transaction.atomic():
            promotion = LearningPromotion.objects.create(
                promotion_type=promotion_type,
                subject_type=subject_type,
                subject_id=subject_id,
                proposed_learning=proposed_learning or {},
                confidence=confidence,
                risk_level=risk_level,
                project=project,
                source_event_ids=source_event_ids or [],
                expires_at=expires_at or candidate_expires_at(),
                review_notes=notes,
                promotion_path=promotion_path,
                rule=rule or "human_review: proposed for a person to decide",
                target=target,
            )
            _audit(
                promotion=promotion, action="propose", actor=actor, before="", notes=notes, signal=Signal.NEEDS_REVIEW
            )
    except IntegrityError:
        # A concurrent proposal for the same subject won: there is still only one.
        existing = LearningPromotion.objects.filter(
            promotion_type=promotion_type, subject_type=subject_type, subject_id=subject_id, status__in=OPEN_STATUSES
        ).first()
        if existing is None:
            raise
        return existing, False
    return promotion, True


@dataclass(frozen=True)
class Proposal:
    """One candidate a scanner wants opened (see promotion_propose for the fields)."""

    subject_id: str
    proposed_learning: dict[str, Any]
    confidence: float
    risk_level: str = "low"
    project: Project | None = None
    source_event_ids: list[str] = field(default_factory=list)
    expires_at: datetime | None = None
    promotion_path: str = PromotionPath.HUMAN_REVIEW
    rule: str = ""
    target: IntelligenceTarget | None = None


def promotions_propose_bulk(
    *, actor: Actor, promotion_type: str, subject_type: str, proposals: Sequence[Proposal]
) -> list[LearningPromotion]:
    """Open many candidates at once (the scanners' path): one INSERT that skips subjects with an open
    promotion (the partial unique index decides, so concurrent scans never duplicate one), and the
    audit events of those actually opened, in the same transaction. Returns the opened ones.

    Subjects are trusted here: scanners propose what they read from the database."""
    writer_for(promotion_type)
    default_expiry = candidate_expires_at()
    first_per_subject: dict[str, Proposal] = {}
    for proposal in proposals:
        first_per_subject.setdefault(proposal.subject_id, proposal)
    fresh = [
        LearningPromotion(
            promotion_type=promotion_type,
            subject_type=subject_type,
            subject_id=p.subject_id,
            proposed_learning=p.proposed_learning,
            confidence=p.confidence,
            risk_level=p.risk_level,
            project=p.project,
            source_event_ids=p.source_event_ids,
            expires_at=p.expires_at or default_expiry,
            promotion_path=p.promotion_path,
            rule=p.rule,
            target=p.target,
        )
        for p in first_per_subject.values()
    ]
    if not fresh:
        return []
    with transaction.atomic():
        LearningPromotion.objects.bulk_create(fresh, batch_size=BULK_BATCH, ignore_conflicts=True)
        stored: set[uuid.UUID] = set()
        for start in range(0, len(fresh), BULK_BATCH):
            ids = [p.pk for p in fresh[start : start + BULK_BATCH]]
            stored.update(LearningPromotion.objects.filter(pk__in=ids).values_list("pk", flat=True))
        opened = [p for p in fresh if p.pk in stored]
        audits = [
            _audit_input(promotion=p, action="propose", actor=actor, before="", signal=Signal.NEEDS_REVIEW)
            for p in opened
        ]
        for start in range(0, len(audits), BULK_BATCH):
            events_record_bulk(actor=actor, items=audits[start : start + BULK_BATCH])
    return opened


def memory_share_propose(
    *, actor: Actor, subject_type: str, subject_id: str, visibility: str, project: Project | None, notes: str = ""
) -> tuple[LearningPromotion, bool]:
    """An owner asks for a private memory or preference to become a team or project memory: a
    ``memory`` candidate for review (the open one, if it has one). Ownership is the caller's check."""
    return promotion_propose(
        actor=actor,
        promotion_type="memory",
        subject_type=subject_type,
        subject_id=subject_id,
        proposed_learning={"visibility": visibility, "project": project.slug if project else None},
        project=project,
        risk_level="medium",
        notes=notes,
        rule="owner_share_request: the owner asked for their own private memory to be shared; a person decides",
    )


def workflow_share_propose(
    *, actor: Actor, workflow_id: int, visibility: str, project: Project | None, notes: str = ""
) -> tuple[LearningPromotion, bool]:
    """An owner asks for a private learned workflow to be shared with a project or team: a
    ``workflow`` candidate for review (the open one, if it has one). Ownership is the caller's check."""
    return promotion_propose(
        actor=actor,
        promotion_type="workflow",
        subject_type="workflow",
        subject_id=str(workflow_id),
        proposed_learning={"visibility": visibility, "project": project.slug if project else None},
        project=project,
        risk_level="medium",
        notes=notes,
        rule="owner_share_request: the owner asked for their own learned workflow to be shared; a person decides",
    )


def promotion_transition(
    *, actor: Actor, promotion_id: str, action: str, notes: str = "", superseded_by: str | None = None
) -> LearningPromotion:
    """Move a promotion through the state machine under a row lock; an illegal move is a 409. If the
    destination refuses (its row was deleted meanwhile), nothing changes, the 409 says why, and the
    failed attempt is written to the audit trail."""
    if action not in TRANSITIONS or action == "expire":
        raise ApplicationError(f"Unknown action {action!r}.", field="action")
    reviewer = _require_reviewer(actor)
    try:
        return _transition(
            actor=actor,
            reviewer=reviewer,
            promotion_id=promotion_id,
            action=action,
            notes=notes,
            superseded_by=superseded_by,
        )
    except _DestinationFailed as failed:
        promotion = LearningPromotion.objects.select_related("project").get(pk=failed.promotion_id)
        _audit(
            promotion=promotion,
            action=action,
            actor=actor,
            before=promotion.status,
            notes=notes,
            signal=Signal.FAILED,
            extra={"error": failed.error.message},
        )
        raise failed.error from None


class _DestinationFailed(Exception):
    def __init__(self, promotion_id: uuid.UUID, error: Conflict) -> None:
        super().__init__(error.message)
        self.promotion_id, self.error = promotion_id, error


def _transition(
    *, actor: Actor, reviewer: User | None, promotion_id: str, action: str, notes: str, superseded_by: str | None
) -> LearningPromotion:
    sources, target, _ = TRANSITIONS[action]
    with transaction.atomic():
        promotion = (
            LearningPromotion.objects.select_for_update(of=("self",))
            .select_related("project")
            .filter(pk=promotion_id)
            .first()
        )
        if promotion is None:
            raise NotFoundError("No such promotion.", field="id")
        before = promotion.status
        if before not in sources:
            raise Conflict(
                f"Cannot {action} a promotion that is {before}; {action} is allowed from {', '.join(sources)}.",
                field="status",
            )
        now = timezone.now()
        try:
            extra = _write_destination(promotion=promotion, action=action, superseded_by=superseded_by, now=now)
        except Conflict as exc:
            raise _DestinationFailed(promotion.pk, exc) from exc
        if action in ("approve", "reject"):
            promotion.reviewed_by, promotion.reviewed_at = reviewer, now
        if notes:
            promotion.review_notes = notes[:10_000]
        promotion.status = target
        promotion.save()
        _audit(promotion=promotion, action=action, actor=actor, before=before, notes=notes, extra=extra)
    return promotion


def _write_destination(
    *, promotion: LearningPromotion, action: str, superseded_by: str | None, now: datetime
) -> dict[str, Any]:
    """What the action does to the promotion's destination (through its writer); the audit extras."""
    writer = writer_for(promotion.promotion_type)
    if action == "apply":
        destination = writer.apply(promotion)
        promotion.destination_table, promotion.destination_record_id = destination.table, destination.record_id
        promotion.applied_at = now
        return {"destination_table": destination.table, "destination_record_id": destination.record_id}
    if action == "pause":
        writer.pause(promotion)
    elif action == "resume":
        writer.resume(promotion)
    elif action == "supersede":
        extra = {}
        if superseded_by:
            replacement = promotion_replacement_check(promotion=promotion, superseded_by=superseded_by)
            promotion.superseded_by = replacement
            extra = {"superseded_by": str(replacement.pk)}
        return {**extra, **(writer.retire(promotion) or {})}
    return {}


def promotion_replacement_check(*, promotion: LearningPromotion, superseded_by: str) -> LearningPromotion:
    """The promotion that replaces ``promotion``: another one, of the same type, still live (a
    rejected, expired or superseded one replaces nothing)."""
    pk = parse_uuid(superseded_by)
    replacement = LearningPromotion.objects.filter(pk=pk).first() if pk else None
    if replacement is None or replacement.pk == promotion.pk:
        raise ApplicationError("superseded_by must name another promotion.", field="superseded_by")
    if replacement.promotion_type != promotion.promotion_type:
        raise ApplicationError(
            f"superseded_by must be another {promotion.promotion_type} promotion, not a {replacement.promotion_type}.",
            field="superseded_by",
        )
    if replacement.status not in LIVE_STATUSES:
        raise ApplicationError(
            f"superseded_by must be a live promotion ({', '.join(LIVE_STATUSES)}); that one is {replacement.status}.",
            field="superseded_by",
        )
    return replacement


def promotions_expire(*, now: datetime | None = None) -> int:
    """Candidates past their expires_at become expired: one UPDATE, and one audit event each."""
    now = now or timezone.now()
    with transaction.atomic():
        due = list(
            LearningPromotion.objects.select_for_update(of=("self",))
            .select_related("project")
            .filter(status=S.CANDIDATE, expires_at__lt=now)
        )
        if not due:
            return 0
        LearningPromotion.objects.filter(pk__in=[p.pk for p in due]).update(status=S.EXPIRED, updated_at=now)
        system = Actor.for_system()
        audits = []
        for promotion in due:
            promotion.status = S.EXPIRED
            audits.append(_audit_input(promotion=promotion, action="expire", actor=system, before=S.CANDIDATE))
        for start in range(0, len(audits), BULK_BATCH):
            events_record_bulk(actor=system, items=audits[start : start + BULK_BATCH])
    return len(due)


def promotion_reinforce(
    *,
    actor: Actor,
    promotion_id: str,
    proposed_learning: dict[str, Any],
    source_event_ids: list[str],
    confidence: float,
    risk_level: str,
    promotion_path: str,
    rule: str,
) -> LearningPromotion | None:
    """New evidence for an open candidate: its learning, evidence, confidence, risk, path and rule are
    replaced under a row lock and a ``promotion_reinforce`` event records what it was before. The
    same evidence again changes nothing (no event); a promotion that is no longer a candidate is left
    alone (None)."""
    _path_check(promotion_path)
    with transaction.atomic():
        promotion = (
            LearningPromotion.objects.select_for_update(of=("self",))
            .select_related("project")
            .filter(pk=promotion_id, status=S.CANDIDATE)
            .first()
        )
        if promotion is None:
            return None
        if (
            sorted(map(str, promotion.source_event_ids or [])) == sorted(map(str, source_event_ids))
            and promotion.promotion_path == promotion_path
            and promotion.risk_level == risk_level
        ):
            return promotion
        previous = {
            "previous_path": promotion.promotion_path,
            "previous_rule": promotion.rule[:2000],
            "previous_evidence": len(promotion.source_event_ids or []),
            "evidence": len(source_event_ids),
        }
        promotion.proposed_learning = proposed_learning
        promotion.source_event_ids = list(source_event_ids)
        promotion.confidence = min(1.0, max(0.0, confidence))
        promotion.risk_level = risk_level
        promotion.promotion_path = promotion_path
        promotion.rule = rule
        promotion.save(
            update_fields=[
                "proposed_learning",
                "source_event_ids",
                "confidence",
                "risk_level",
                "promotion_path",
                "rule",
                "updated_at",
            ]
        )
        _audit(
            promotion=promotion,
            action="reinforce",
            actor=actor,
            before=S.CANDIDATE,
            signal=REINFORCE_SIGNAL,
            extra=previous,
        )
    return promotion


def promotion_auto_promote(*, promotion_id: str) -> LearningPromotion:
    """An automatic path's candidate at low risk is approved and applied by the system under the rule
    that fired, each step audited like a person's. Anything else (human review, a risk above low, no
    longer a candidate) waits for a person; a destination that refuses leaves it approved, with the
    refusal audited, for a person to look at."""
    promotion = LearningPromotion.objects.select_related("project").get(pk=promotion_id)
    if (
        promotion.status != S.CANDIDATE
        or promotion.promotion_path not in AUTOMATIC_PATHS
        or promotion.risk_level != RiskLevel.LOW
    ):
        return promotion
    system = Actor.for_system()
    notes = f"Applied automatically ({promotion.promotion_path}) at low risk. Rule: {promotion.rule}"[:10_000]
    for action in ("approve", "apply"):
        try:
            promotion = _transition(
                actor=system,
                reviewer=None,
                promotion_id=str(promotion.pk),
                action=action,
                notes=notes,
                superseded_by=None,
            )
        except _DestinationFailed as failed:
            promotion = LearningPromotion.objects.select_related("project").get(pk=failed.promotion_id)
            _audit(
                promotion=promotion,
                action=action,
                actor=system,
                before=promotion.status,
                notes=notes,
                signal=Signal.FAILED,
                extra={"error": failed.error.message},
            )
            logger.warning("automatic %s of promotion %s refused: %s", action, promotion.pk, failed.error.message)
            return promotion
        except Conflict:
            # A person decided meanwhile: theirs stands.
            return LearningPromotion.objects.get(pk=promotion.pk)
    return promotion


# Bulk review: the console's "approve selected" / "reject selected".
BULK_REVIEW_ACTIONS = ("approve", "reject")
# At most a page of the console's largest page size.
BULK_REVIEW_MAX = 100


def _listed(items: Sequence[str], limit: int = 5) -> str:
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more


def promotions_review_bulk(
    *, actor: Actor, promotion_ids: Sequence[str], action: str, notes: str = ""
) -> list[LearningPromotion]:
    """Approve or reject several candidates as one decision with the same notes: each goes through
    the state machine and is audited as a single action would be, all in one transaction. If any id
    is not a promotion, or any promotion is no longer a candidate (someone decided meanwhile), none
    changes and the error names each one that stopped the batch: a batch is never half done."""
    reviewer = _require_reviewer(actor)
    if action not in BULK_REVIEW_ACTIONS:
        raise ApplicationError(f"A bulk review can {' or '.join(BULK_REVIEW_ACTIONS)}; not {action!r}.", field="action")
    past = str(TRANSITIONS[action][1])
    if not promotion_ids:
        raise ApplicationError(f"Select at least one promotion; nothing was {past}.", field="ids")
    parsed = [(raw, parse_uuid(str(raw).strip())) for raw in promotion_ids]
    bad = [repr(str(raw)[:40]) for raw, pk in parsed if pk is None]
    if bad:
        raise ApplicationError(f"Not promotion ids: {_listed(bad)}; nothing was {past}.", field="ids")
    unique = list(dict.fromkeys(pk for _, pk in parsed if pk is not None))
    if len(unique) > BULK_REVIEW_MAX:
        raise ApplicationError(
            f"At most {BULK_REVIEW_MAX} promotions at a time ({len(unique)} were selected); nothing was {past}.",
            field="ids",
        )
    sources = TRANSITIONS[action][0]
    with transaction.atomic():
        locked = {
            p.pk: p
            for p in LearningPromotion.objects.select_for_update(of=("self",))
            .select_related("project")
            .filter(pk__in=unique)
        }
        missing = [str(pk) for pk in unique if pk not in locked]
        if missing:
            raise NotFoundError(f"No such promotion: {_listed(missing)}; nothing was {past}.", field="ids")
        blocked = [locked[pk] for pk in unique if locked[pk].status not in sources]
        if blocked:
            names = promotion_summaries(blocked)
            which = [f"“{names[p.pk]}” is {p.status}" for p in blocked]
            raise Conflict(
                f"Nothing was {past}: {len(blocked)} of the {len(unique)} selected promotions "
                f"{'is no longer a candidate' if len(blocked) == 1 else 'are no longer candidates'} "
                f"({_listed(which)}). "
                "Reload the list and select again.",
                field="ids",
                extra={"blocked": [str(p.pk) for p in blocked]},
            )
        done = []
        for pk in unique:
            try:
                done.append(
                    _transition(
                        actor=actor,
                        reviewer=reviewer,
                        promotion_id=str(pk),
                        action=action,
                        notes=notes,
                        superseded_by=None,
                    )
                )
            except _DestinationFailed as failed:  # approve and reject write no destination; never half done
                raise failed.error from None
    return done
