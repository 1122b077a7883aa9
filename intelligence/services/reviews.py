"""Card reviews (``intelligence_reviews``): a staff reviewer approves or rejects a correction.

Approving changes the card (its status, its target, its text, or its evidence moved into another
card), writes a ``packet_quality`` event with the card before and after, and asks for a refresh of
the packet of every target the change touches, all in one transaction: the next refresh job of
each target shows the change."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Count, Max, Min
from django.utils import timezone

from accounts.actors import Actor
from accounts.models import User
from config.exceptions import AccessDenied, ApplicationError, Conflict, NotFoundError
from feedback.models import EventFamily, FeedbackEvent, Signal
from feedback.services.events import EventInput, event_record
from intelligence.models import (
    CardStatus,
    InsightCard,
    InsightCardEvidence,
    InsightCardTarget,
    IntelligenceReview,
    IntelligenceTarget,
    ReviewKind,
    ReviewState,
    ReviewStatus,
)
from intelligence.services.refresh import packet_refresh_request

DECISIONS = ("approve", "reject")
MAX_NOTES = 10_000


@dataclass(frozen=True)
class ReviewDecision:
    review: IntelligenceReview
    event: FeedbackEvent
    refreshed_target_ids: list[int]


def _reviewer(actor: Actor) -> User:
    if not actor.is_admin or actor.user is None:
        raise AccessDenied("Only staff admins review cards.")
    return actor.user


def card_snapshot(card: InsightCard) -> dict[str, Any]:
    """What a review may change about a card, as the event's before/after snapshot."""
    return {
        "status": card.status,
        "target_id": card.target_id,
        "title": card.title,
        "summary": card.summary,
        "evidence_count": card.evidence_count,
        "linked_target_ids": sorted(
            InsightCardTarget.objects.filter(card=card, status=ReviewState.APPROVED).values_list("target_id", flat=True)
        ),
    }


def _card_evidence_totals(card: InsightCard) -> None:
    """Recount a card's evidence and its first/last evidence dates from its rows."""
    totals = InsightCardEvidence.objects.filter(card=card).aggregate(
        n=Count("pk"), first=Min("observed_at"), last=Max("observed_at")
    )
    card.evidence_count = totals["n"]
    fields = ["evidence_count", "updated_at"]
    if totals["n"]:
        card.first_evidence_at = min(filter(None, [card.first_evidence_at, totals["first"]]), default=None)
        card.last_evidence_at = max(filter(None, [card.last_evidence_at, totals["last"]]), default=None)
        fields += ["first_evidence_at", "last_evidence_at"]
    card.save(update_fields=fields)


def _apply(review: IntelligenceReview, card: InsightCard) -> set[int]:
    """Make the approved correction; the targets whose packets it changes."""
    affected = {card.target_id}
    affected.update(
        InsightCardTarget.objects.filter(card=card, status=ReviewState.APPROVED).values_list("target_id", flat=True)
    )
    if review.kind == ReviewKind.WRONG:
        card.status = CardStatus.CONTRADICTED
        card.save(update_fields=["status", "updated_at"])
    elif review.kind == ReviewKind.STALE:
        card.status = CardStatus.STALE
        card.save(update_fields=["status", "updated_at"])
    elif review.kind == ReviewKind.EDIT:
        fields = [name for name in ("title", "summary") if name in review.proposed]
        for name in fields:
            setattr(card, name, review.proposed[name])
        card.save(update_fields=[*fields, "updated_at"])
    elif review.kind == ReviewKind.WRONG_TARGET:
        target = IntelligenceTarget.objects.filter(
            pk=review.proposed.get("target_id"), project_id=card.project_id, active=True
        ).first()
        if target is None:
            raise ApplicationError("The corrected target no longer exists in this project.", field="target")
        card.target = target
        card.save(update_fields=["target", "updated_at"])
        # A proposed link to the target the card now belongs to is settled by this decision.
        InsightCardTarget.objects.filter(card=card, target=target).delete()
        affected.add(target.pk)
    elif review.kind == ReviewKind.MERGE:
        into = (
            InsightCard.objects.select_for_update()
            .filter(pk=review.proposed.get("merge_into"), project_id=card.project_id)
            .exclude(status__in=[CardStatus.DISMISSED, CardStatus.CONTRADICTED])
            .first()
        )
        if into is None or into.pk == card.pk:
            raise ApplicationError("The card to merge into is gone or dismissed.", field="merge_into")
        present = set(InsightCardEvidence.objects.filter(card=into).values_list("excerpt_hash", flat=True))
        InsightCardEvidence.objects.filter(card=card).exclude(excerpt_hash__in=present).update(card=into)
        into.confidence = max(into.confidence, card.confidence)
        into.save(update_fields=["confidence", "updated_at"])
        _card_evidence_totals(into)
        _card_evidence_totals(card)
        card.status = CardStatus.DISMISSED
        card.save(update_fields=["status", "updated_at"])
        affected.add(into.target_id)
        affected.update(
            InsightCardTarget.objects.filter(card=into, status=ReviewState.APPROVED).values_list("target_id", flat=True)
        )
    return affected


def review_decide(*, actor: Actor, review_id: str, decision: str, notes: str = "") -> ReviewDecision:
    """Approve (make the correction) or reject an open card review, with notes; audited as a
    ``packet_quality`` event with the card before and after, and the affected packets refreshed."""
    reviewer = _reviewer(actor)
    if decision not in DECISIONS:
        raise ApplicationError(f"Unknown decision {decision!r}; expected approve or reject.", field="decision")
    if len(notes) > MAX_NOTES:
        raise ApplicationError(f"notes is at most {MAX_NOTES} characters.", field="notes")
    with transaction.atomic():
        review = IntelligenceReview.objects.select_for_update().filter(pk=review_id).first()
        if review is None:
            raise NotFoundError("No such review.")
        if review.status != ReviewStatus.OPEN:
            raise Conflict(f"This review was already {review.status}.", field="decision")
        card = InsightCard.objects.select_for_update().select_related("project").get(pk=review.card_id)
        before = card_snapshot(card)
        affected: set[int] = set()
        if decision == "approve":
            affected = _apply(review, card)
        review.status = ReviewStatus.APPROVED if decision == "approve" else ReviewStatus.REJECTED
        review.reviewer = reviewer
        review.decision_notes = notes
        review.decided_at = timezone.now()
        review.save(update_fields=["status", "reviewer", "decision_notes", "decided_at"])
        after = card_snapshot(card)
        write = event_record(
            actor=actor,
            data=EventInput(
                event_type=f"card_review_{review.status}",
                event_family=EventFamily.PACKET_QUALITY,
                signal=Signal.CORRECTED if decision == "approve" else Signal.NEGATIVE,
                project_slug=card.project.slug,
                target_id=str(before["target_id"]),
                surface="card_review",
                subject_type="insight_card",
                subject_id=str(card.pk),
                source_table=IntelligenceReview._meta.db_table,
                source_record_id=str(review.pk),
                reason_category=review.kind,
                free_text=notes,
                before_snapshot=before,
                after_snapshot=after,
                metadata={
                    "card_type": card.card_type,
                    "target_id": card.target_id,
                    "review_id": str(review.pk),
                    "review_kind": review.kind,
                    "proposed": review.proposed,
                    "refreshed_target_ids": sorted(affected),
                },
            ),
        )
        if affected:
            packet_refresh_request(target_ids=affected, reason=f"card review {review.kind} approved")
    return ReviewDecision(review=review, event=write.event, refreshed_target_ids=sorted(affected))
