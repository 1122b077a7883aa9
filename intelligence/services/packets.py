"""Packets: a target's active cards, ordered into sections, as one new version per build.

Order: sections in SECTIONS order as changed by the applied packet rules; within a section, by
recency of evidence, then evidence count and confidence. A card with no evidence within the
staleness window (INTELLIGENCE_STALE_DAYS, or a rule's shorter window for its type) drops to the
stale section, below the active blockers and every fresh card. Each entry says whether its statement
comes from sources or from memory, and why it is where it is. ``source_coverage`` says which source
systems fed the packet, which are stale, which are missing (they fed this target before, or the
project's documents come from them, and nothing came within the window) and which had documents
within the window that fed no card (``unused``).

Packet rules (``intelligence_packet_rules``, created only by applied promotions; paused or
superseded ones are ignored), by ``rule_type``:

- ``section_order`` {"order": [section keys]}: those sections appear in this relative order, at the
  place of the first of them ("financial" before "schedule" in owner updates).
- ``card_type_rank`` {"card_type": t, "direction": "up"|"down"}: the type's section moves up to just
  after the blockers, or down to the end of the fresh sections.
- ``stale_after_days`` {"card_type": t, "days": n}: a shorter staleness window for that type.
- ``confirming_source`` {"card_type": t, "source_systems": [...], "confidence_cap": c}: a card of
  that type whose evidence comes only from those systems is not high confidence: it is shown with its
  confidence capped and after the confirmed cards of its section.
- ``coverage_watch`` {"source_system": s}: a source that must feed this packet; when it fed no card
  within the window it is listed as missing, even if it never fed one before.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Max, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from intelligence.conf import intelligence_settings
from intelligence.models import (
    CardOrigin,
    CardStatus,
    CardType,
    InsightCard,
    InsightCardEvidence,
    IntelligencePacket,
    IntelligencePacketCard,
    IntelligenceTarget,
    PacketRule,
    ReviewState,
    RuleStatus,
)
from retrieval.models import Document

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
SECTION_OF_TYPE = {card_type: key for key, _, types in SECTIONS for card_type in types}
RULE_TYPES = ("section_order", "card_type_rank", "stale_after_days", "confirming_source", "coverage_watch")


def packet_rules_for(*, target: IntelligenceTarget) -> list[PacketRule]:
    """The active packet rules that apply to a target: its project's and the global ones, oldest first."""
    return list(
        PacketRule.objects.filter(Q(project_id=target.project_id) | Q(project__isnull=True), status=RuleStatus.ACTIVE)
        .filter(rule_type__in=RULE_TYPES)
        .order_by("created_at", "pk")
    )


@dataclass
class _Plan:
    """What the rules change: section order, stale windows per type, source caps, watched sources."""

    order: list[str]
    stale_days: dict[str, int]
    caps: dict[str, tuple[set[str], float, str]]  # card type -> (systems, cap, rule description)
    watched: set[str]
    notes: dict[str, str]  # section key -> the rule that moved it


def _plan(rules: list[PacketRule]) -> _Plan:
    order = [key for key, _, _ in SECTIONS]
    plan = _Plan(order=order, stale_days={}, caps={}, watched=set(), notes={})
    for rule in rules:
        p = rule.parameters if isinstance(rule.parameters, dict) else {}
        if rule.rule_type == "section_order":
            wanted = [k for k in p.get("order", []) if k in order]
            if len(wanted) >= 2:
                slots = sorted(order.index(k) for k in wanted)
                for slot, key in zip(slots, wanted, strict=True):
                    order[slot] = key
                    plan.notes[key] = rule.description
        elif rule.rule_type == "card_type_rank" and p.get("card_type") in SECTION_OF_TYPE:
            key = SECTION_OF_TYPE[p["card_type"]]
            if key == "blockers":
                continue  # blockers stay first
            order.remove(key)
            order.insert(1 if p.get("direction") == "up" else len(order), key)
            plan.notes[key] = rule.description
        elif rule.rule_type == "stale_after_days" and p.get("card_type") in SECTION_OF_TYPE:
            days = p.get("days")
            if isinstance(days, int) and days >= 1:
                plan.stale_days[p["card_type"]] = min(days, plan.stale_days.get(p["card_type"], days))
        elif rule.rule_type == "confirming_source" and p.get("card_type") in SECTION_OF_TYPE:
            systems = {str(s) for s in p.get("source_systems", []) if s}
            cap = p.get("confidence_cap", 0.5)
            if systems and isinstance(cap, int | float):
                plan.caps[p["card_type"]] = (systems, float(cap), rule.description)
        elif rule.rule_type == "coverage_watch" and p.get("source_system"):
            plan.watched.add(str(p["source_system"]))
    return plan


def _cards_of(target: IntelligenceTarget) -> list[InsightCard]:
    linked = Q(target_links__target=target, target_links__status=ReviewState.APPROVED)
    return list(
        InsightCard.objects.filter(Q(target=target) | linked, status__in=[CardStatus.ACTIVE, CardStatus.STALE])
        .distinct()
        .order_by("-last_evidence_at", "-evidence_count", "-confidence", "pk")
    )


def _evidence_systems(cards: list[InsightCard]) -> dict[Any, dict[str, datetime | None]]:
    """Per card: each source system of its evidence and the newest observation from it."""
    out: dict[Any, dict[str, datetime | None]] = {card.pk: {} for card in cards}
    rows = (
        InsightCardEvidence.objects.filter(card_id__in=list(out))
        .values("card_id", "source_system")
        .annotate(last=Max("observed_at"))
    )
    for row in rows:
        out[row["card_id"]][row["source_system"] or "unknown"] = row["last"]
    return out


def _coverage(
    *,
    target: IntelligenceTarget,
    cards: list[InsightCard],
    systems: dict[Any, dict[str, datetime | None]],
    window_start: datetime,
    watched: set[str],
) -> dict[str, Any]:
    fed: dict[str, datetime | None] = {}
    counts: dict[str, int] = {}
    for card in cards:
        if card.origin == CardOrigin.MEMORY:
            continue
        for system, last in systems[card.pk].items():
            counts[system] = counts.get(system, 0) + 1
            if last is not None and (fed.get(system) is None or last > fed[system]):  # type: ignore[operator]
                fed[system] = last
            else:
                fed.setdefault(system, last)
    stale = sorted(s for s, last in fed.items() if last is None or last < window_start)
    history = set(
        InsightCardEvidence.objects.filter(card__target=target)
        .exclude(source_system__in=["", "memory"])
        .values_list("source_system", flat=True)
        .distinct()
    )
    documents = Document.objects.filter(project_id=target.project_id).exclude(source_system="")
    known = set(documents.values_list("source_system", flat=True).distinct())
    # A document's own time (updated, else created), else when it was imported.
    recent_documents = set(
        documents.annotate(seen=Coalesce("source_updated_at", "source_created_at", "imported_at"))
        .filter(seen__gte=window_start)
        .values_list("source_system", flat=True)
        .distinct()
    )
    fresh_fed = {s for s, last in fed.items() if last is not None and last >= window_start}
    missing = sorted((history | known) - fresh_fed - recent_documents)
    unused = sorted(recent_documents - fresh_fed)
    watched_missing = sorted(watched - fresh_fed)
    return {
        "window_days": (timezone.now() - window_start).days,
        "fed": sorted(fed),
        "fed_detail": [{"source_system": s, "cards": counts[s], "last_evidence_at": _iso(fed[s])} for s in sorted(fed)],
        "stale": stale,
        "missing": sorted(set(missing) | set(watched_missing)),
        "unused": [s for s in unused if s not in watched_missing],
        "watched": sorted(watched),
    }


def packet_build(*, target: IntelligenceTarget, reason: str = "") -> IntelligencePacket:
    """Build the target's next packet version and make it the current one."""
    now = timezone.now()
    default_days = intelligence_settings.INTELLIGENCE_STALE_DAYS
    window_start = now - timedelta(days=default_days)
    plan = _plan(packet_rules_for(target=target))
    cards = _cards_of(target)[: intelligence_settings.INTELLIGENCE_PACKET_MAX_CARDS]
    systems = _evidence_systems(cards)

    def is_stale(card: InsightCard) -> bool:
        days = plan.stale_days.get(card.card_type, default_days)
        return card.status == CardStatus.STALE or (
            card.last_evidence_at is not None and card.last_evidence_at < now - timedelta(days=days)
        )

    def unconfirmed(card: InsightCard) -> str:
        cap = plan.caps.get(card.card_type)
        if cap is None or card.origin == CardOrigin.MEMORY:
            return ""
        own = set(systems[card.pk])
        return cap[2] if own and own <= cap[0] else ""

    stale = [card for card in cards if is_stale(card)]
    fresh = [card for card in cards if card not in stale]
    titles = {key: title for key, title, _ in SECTIONS}
    placed: list[tuple[str, InsightCard, str, float]] = []
    sections = []
    for key in plan.order:
        members = [card for card in fresh if SECTION_OF_TYPE.get(card.card_type) == key]
        if not members:
            continue
        # Within a section: confirmed before unconfirmed, then recency, evidence and confidence.
        members.sort(key=lambda card: bool(unconfirmed(card)))
        entries = []
        for card in members:
            why = [_origin_text(card), f"{card.card_type} in {titles[key].lower()}"]
            if key in plan.notes:
                why.append(f"section placed by rule: {plan.notes[key]}")
            why.append(_evidence_text(card))
            confidence = card.confidence
            rule = unconfirmed(card)
            if rule:
                confidence = min(confidence, plan.caps[card.card_type][1])
                why.append(f"not confirmed by another source ({rule}); confidence shown {confidence:.2f}")
            placed.append((key, card, "; ".join(why), confidence))
            entries.append(_entry(card, "; ".join(why), confidence))
        sections.append({"key": key, "title": titles[key], "cards": [str(c.pk) for c in members], "entries": entries})
    if stale:
        entries = []
        for card in stale:
            days = plan.stale_days.get(card.card_type, default_days)
            stale_why = "; ".join(
                [
                    _origin_text(card),
                    f"stale: no evidence within {days} days, so below the active blockers",
                    _evidence_text(card),
                ]
            )
            placed.append((STALE_SECTION[0], card, stale_why, card.confidence))
            entries.append(_entry(card, stale_why, card.confidence))
        sections.append(
            {
                "key": STALE_SECTION[0],
                "title": STALE_SECTION[1],
                "cards": [str(c.pk) for c in stale],
                "entries": entries,
            }
        )
    coverage = _coverage(target=target, cards=cards, systems=systems, window_start=window_start, watched=plan.watched)
    with transaction.atomic():
        IntelligenceTarget.objects.select_for_update().filter(pk=target.pk).first()
        version = (IntelligencePacket.objects.filter(target=target).aggregate(v=Max("version"))["v"] or 0) + 1
        IntelligencePacket.objects.filter(target=target, current=True).update(current=False)
        packet = IntelligencePacket.objects.create(
            target=target, version=version, sections=sections, source_coverage=coverage, reason=reason[:200]
        )
        IntelligencePacketCard.objects.bulk_create(
            IntelligencePacketCard(packet=packet, card=card, section=section, position=position, why=why[:2000])
            for position, (section, card, why, _) in enumerate(placed)
        )
    return packet


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _origin_text(card: InsightCard) -> str:
    return "from memory" if card.origin == CardOrigin.MEMORY else "from sources"


def _evidence_text(card: InsightCard) -> str:
    if card.last_evidence_at is None:
        return f"{card.evidence_count} evidence"
    return f"{card.evidence_count} evidence, last {card.last_evidence_at:%Y-%m-%d}"


def _entry(card: InsightCard, why: str, confidence: float) -> dict[str, Any]:
    return {"card": str(card.pk), "origin": card.origin, "confidence": round(confidence, 3), "why": why}
