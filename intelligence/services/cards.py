"""Readers' feedback on cards (the design's Gate 5): useful, wrong, stale or wrong-target marks, and
proposed edits and merges. Each is a ``packet_quality`` event through the one writer; a correction
opens (or joins) the card's one open review of its kind, which a reviewer decides
(``intelligence.services.reviews``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F

from accounts.actors import Actor
from config.exceptions import ApplicationError
from feedback.models import EventFamily, FeedbackEvent, Signal
from feedback.services.events import EventInput, event_record
from intelligence.models import (
    CardStatus,
    InsightCard,
    InsightCardEvidence,
    IntelligenceReview,
    IntelligenceTarget,
    ReviewKind,
    ReviewStatus,
)

# What a reader may say about a card, and the stream's signal for it.
FEEDBACK_SIGNALS: dict[str, str] = {
    "useful": Signal.POSITIVE,
    "wrong": Signal.NEGATIVE,
    "stale": Signal.STALE,
    "wrong_target": Signal.CORRECTED,
}
# The marks that ask a reviewer for a correction, and the review kind each opens.
REVIEW_KINDS: dict[str, str] = {
    "wrong": ReviewKind.WRONG,
    "stale": ReviewKind.STALE,
    "wrong_target": ReviewKind.WRONG_TARGET,
}
# A card out of every packet: a correction of it has nothing left to change.
CLOSED_STATUSES = (CardStatus.DISMISSED, CardStatus.CONTRADICTED)
SURFACE = "project_intelligence"
MAX_NOTE = 10_000


@dataclass(frozen=True)
class CardFeedback:
    event: FeedbackEvent
    review: IntelligenceReview | None
    created: bool  # False: a repeated idempotency key, nothing done again


def _card_event(
    *,
    actor: Actor,
    card: InsightCard,
    event_type: str,
    signal: str,
    reason: str,
    note: str,
    metadata: dict[str, Any],
    idempotency_key: str | None = None,
) -> tuple[FeedbackEvent, bool]:
    write = event_record(
        actor=actor,
        data=EventInput(
            event_type=event_type,
            event_family=EventFamily.PACKET_QUALITY,
            signal=signal,
            project_slug=card.project.slug,
            target_id=str(card.target_id),
            surface=SURFACE,
            subject_type="insight_card",
            subject_id=str(card.pk),
            source_table=InsightCard._meta.db_table,
            source_record_id=str(card.pk),
            reason_category=reason,
            free_text=note,
            metadata={"card_type": card.card_type, "target_id": card.target_id, **metadata},
            idempotency_key=idempotency_key,
        ),
    )
    return write.event, write.created


def _review_join(
    *, actor: Actor, card: InsightCard, kind: str, proposed: dict[str, Any], note: str, event: FeedbackEvent
) -> IntelligenceReview:
    """Open the card's review of this kind, or add this reporter to the open one (one per card and
    kind; a user counts once however often they report)."""
    review = (
        IntelligenceReview.objects.select_for_update().filter(card=card, kind=kind, status=ReviewStatus.OPEN).first()
    )
    if review is None:
        try:
            with transaction.atomic():
                return IntelligenceReview.objects.create(
                    card=card,
                    project_id=card.project_id,
                    kind=kind,
                    proposed=proposed,
                    reason=note,
                    requested_by=actor.user,
                    source_event_ids=[str(event.pk)],
                )
        except IntegrityError:  # opened concurrently by another reporter
            review = IntelligenceReview.objects.select_for_update().get(card=card, kind=kind, status=ReviewStatus.OPEN)
    # A reporter is a user (however they call: a session, a key, a service acting for them), or a
    # service key acting as itself.
    reports = FeedbackEvent.objects.filter(pk__in=review.source_event_ids)
    reported_before = (
        reports.filter(user__isnull=True, writer=event.writer)
        if event.user_id is None
        else reports.filter(user_id=event.user_id)
    ).exists()
    if not reported_before:
        review.source_event_ids = [*review.source_event_ids, str(event.pk)]
        review.reports = F("reports") + 1
        fields = ["source_event_ids", "reports"]
        if note and not review.reason:
            review.reason = note
            fields.append("reason")
        review.save(update_fields=fields)
        review.refresh_from_db(fields=["reports"])
    return review


def _require_open(card: InsightCard) -> None:
    if card.status in CLOSED_STATUSES:
        raise ApplicationError(f"This card is already {card.status}: there is nothing to correct.", field="card")


def _target_of_project(*, card: InsightCard, slug: str) -> IntelligenceTarget:
    target = IntelligenceTarget.objects.filter(project_id=card.project_id, slug=slug, active=True).first()
    if target is None:
        raise ApplicationError(f"No target {slug!r} in this project.", field="target")
    if target.pk == card.target_id:
        raise ApplicationError("The card is already attributed to this target.", field="target")
    return target


def card_feedback_record(
    *,
    actor: Actor,
    card: InsightCard,
    signal: str,
    note: str = "",
    target_slug: str | None = None,
    evidence_id: int | None = None,
    idempotency_key: str | None = None,
) -> CardFeedback:
    """Record a reader's mark on a card: a ``packet_quality`` event; useful counts on the evidence;
    a correction opens or joins the card's review of that kind."""
    if signal not in FEEDBACK_SIGNALS:
        raise ApplicationError(
            f"Unknown signal {signal!r}; expected one of {', '.join(FEEDBACK_SIGNALS)}.", field="signal"
        )
    if len(note) > MAX_NOTE:
        raise ApplicationError(f"note is at most {MAX_NOTE} characters.", field="note")
    if signal in REVIEW_KINDS and card.status in CLOSED_STATUSES:
        raise ApplicationError(f"This card is already {card.status}: there is nothing to correct.", field="signal")
    metadata: dict[str, Any] = {}
    proposed: dict[str, Any] = {}
    if signal == "wrong_target":
        if not target_slug:
            raise ApplicationError("Name the target the card belongs to.", field="target")
        target = _target_of_project(card=card, slug=target_slug)
        proposed = {"target": target.slug, "target_id": target.pk, "from_target_id": card.target_id}
        metadata["corrected_target_id"] = target.pk
    elif target_slug:
        raise ApplicationError("A target is named only with the wrong_target signal.", field="target")
    evidence = InsightCardEvidence.objects.filter(card=card)
    if evidence_id is not None:
        evidence = evidence.filter(pk=evidence_id)
        if not evidence.exists():
            raise ApplicationError(f"No evidence {evidence_id} on this card.", field="evidence_id")
        metadata["evidence_id"] = evidence_id
    with transaction.atomic():
        event, created = _card_event(
            actor=actor,
            card=card,
            event_type="card_feedback",
            signal=FEEDBACK_SIGNALS[signal],
            reason=signal,
            note=note,
            metadata=metadata,
            idempotency_key=idempotency_key,
        )
        if not created:
            kind = REVIEW_KINDS.get(signal)
            reviews = IntelligenceReview.objects.filter(card=card, kind=kind) if kind else []
            review = next((r for r in reviews if str(event.pk) in r.source_event_ids), None)
            return CardFeedback(event=event, review=review, created=False)
        if signal == "useful":
            evidence.update(useful_count=F("useful_count") + 1)
        elif signal == "wrong":
            evidence.update(not_useful_count=F("not_useful_count") + 1)
        review = None
        if signal in REVIEW_KINDS:
            review = _review_join(
                actor=actor, card=card, kind=REVIEW_KINDS[signal], proposed=proposed, note=note, event=event
            )
    return CardFeedback(event=event, review=review, created=True)


def card_edit_propose(
    *, actor: Actor, card: InsightCard, title: str | None = None, summary: str | None = None, note: str = ""
) -> CardFeedback:
    """Propose a new title and/or summary for a card: an event and the card's open edit review."""
    _require_open(card)
    proposed: dict[str, Any] = {}
    if title is not None:
        if not title.strip():
            raise ApplicationError("A title may not be empty.", field="title")
        if len(title) > InsightCard._meta.get_field("title").max_length:  # type: ignore[operator]
            raise ApplicationError("title is at most 300 characters.", field="title")
        proposed["title"] = title.strip()
    if summary is not None:
        if len(summary) > MAX_NOTE:
            raise ApplicationError(f"summary is at most {MAX_NOTE} characters.", field="summary")
        proposed["summary"] = summary.strip()
    if not proposed:
        raise ApplicationError("Propose a title or a summary.", field="title")
    if all(getattr(card, name) == value for name, value in proposed.items()):
        raise ApplicationError("The card already says this.", field="title" if "title" in proposed else "summary")
    with transaction.atomic():
        event, _ = _card_event(
            actor=actor,
            card=card,
            event_type="card_edit_proposed",
            signal=Signal.CORRECTED,
            reason="edit",
            note=note,
            metadata={"proposed": proposed},
        )
        review = _review_join(actor=actor, card=card, kind=ReviewKind.EDIT, proposed=proposed, note=note, event=event)
    return CardFeedback(event=event, review=review, created=True)


def card_merge_propose(*, actor: Actor, card: InsightCard, into_id: str, note: str = "") -> CardFeedback:
    """Propose merging a card into another card of its project (they say the same thing)."""
    _require_open(card)
    into = (
        InsightCard.objects.filter(project_id=card.project_id, pk=into_id).exclude(status__in=CLOSED_STATUSES).first()
    )
    if into is None:
        raise ApplicationError("No such card in this project to merge into.", field="into")
    if into.pk == card.pk:
        raise ApplicationError("A card cannot be merged into itself.", field="into")
    with transaction.atomic():
        event, _ = _card_event(
            actor=actor,
            card=card,
            event_type="card_merge_proposed",
            signal=Signal.CORRECTED,
            reason="merge",
            note=note,
            metadata={"merge_into": str(into.pk)},
        )
        review = _review_join(
            actor=actor, card=card, kind=ReviewKind.MERGE, proposed={"merge_into": str(into.pk)}, note=note, event=event
        )
    return CardFeedback(event=event, review=review, created=True)
