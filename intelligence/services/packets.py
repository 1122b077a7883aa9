"""Packets: a target's active cards, ordered into sections, as one new version per build."""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone

from intelligence.conf import intelligence_settings
from intelligence.models import (
    CardStatus,
    CardType,
    InsightCard,
    IntelligencePacket,
    IntelligencePacketCard,
    IntelligenceTarget,
    ReviewState,
)

# Sections in packet order, and the card types each holds. Stale cards of any type go last.
SECTIONS: list[tuple[str, str, tuple[str, ...]]] = [
    ("blockers", "Active blockers", (CardType.BLOCKER,)),
    ("risks", "Risks", (CardType.RISK,)),
    ("financial", "Financial exposure", (CardType.FINANCIAL,)),
    ("schedule", "Schedule", (CardType.SCHEDULE,)),
    ("decisions", "Decisions", (CardType.DECISION,)),
    ("commitments", "Commitments", (CardType.COMMITMENT,)),
    ("tasks", "Tasks", (CardType.TASK,)),
    ("open_questions", "Open questions", (CardType.OPEN_QUESTION,)),
    ("updates", "Updates", (CardType.UPDATE,)),
]
STALE_SECTION = ("stale", "Stale: no new evidence")


def _cards_of(target: IntelligenceTarget) -> list[InsightCard]:
    linked = Q(target_links__target=target, target_links__status=ReviewState.APPROVED)
    return list(
        InsightCard.objects.filter(Q(target=target) | linked, status__in=[CardStatus.ACTIVE, CardStatus.STALE])
        .distinct()
        .order_by("-last_evidence_at", "-confidence", "pk")
    )


def packet_build(*, target: IntelligenceTarget, reason: str = "") -> IntelligencePacket:
    """Build the target's next packet version and make it the current one."""
    stale_before = timezone.now() - timedelta(days=intelligence_settings.INTELLIGENCE_STALE_DAYS)
    cards = _cards_of(target)[: intelligence_settings.INTELLIGENCE_PACKET_MAX_CARDS]
    placed: list[tuple[str, InsightCard, str]] = []
    stale: list[InsightCard] = []
    for card in cards:
        if card.status == CardStatus.STALE or (card.last_evidence_at and card.last_evidence_at < stale_before):
            stale.append(card)
    fresh = [card for card in cards if card not in stale]
    sections = []
    for key, title, types in SECTIONS:
        members = [card for card in fresh if card.card_type in types]
        if members:
            sections.append({"key": key, "title": title, "cards": [str(card.pk) for card in members]})
            placed.extend(
                (
                    key,
                    card,
                    f"{card.evidence_count} evidence, last {card.last_evidence_at:%Y-%m-%d}"
                    if card.last_evidence_at
                    else "",
                )
                for card in members
            )
    if stale:
        sections.append({"key": STALE_SECTION[0], "title": STALE_SECTION[1], "cards": [str(card.pk) for card in stale]})
        placed.extend((STALE_SECTION[0], card, "no evidence within the staleness window") for card in stale)
    systems = sorted(
        {system for card in cards for system in card.evidence.values_list("source_system", flat=True) if system}
    )
    with transaction.atomic():
        IntelligenceTarget.objects.select_for_update().filter(pk=target.pk).first()
        version = (IntelligencePacket.objects.filter(target=target).aggregate(v=Max("version"))["v"] or 0) + 1
        IntelligencePacket.objects.filter(target=target, current=True).update(current=False)
        packet = IntelligencePacket.objects.create(
            target=target, version=version, sections=sections, source_coverage={"fed": systems}, reason=reason[:200]
        )
        IntelligencePacketCard.objects.bulk_create(
            IntelligencePacketCard(packet=packet, card=card, section=section, position=position, why=why)
            for position, (section, card, why) in enumerate(placed)
        )
    return packet
