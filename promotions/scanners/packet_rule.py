"""The packet-rule scanner: how people use packets becomes candidate packet rules (``packet_rule``
promotions; intelligence/services/packets.py says what each rule does).

Three sources of evidence, all read from the event stream or the packets themselves:

- Card feedback (``packet_quality`` events of subject_type ``insight_card``, signal positive (useful),
  negative (wrong) or stale; metadata ``card_type``): when the marks on one card type in one project,
  within PACKET_RULE_SCAN_DAYS, are consistent (at least PACKET_RULE_SCAN_MIN_SUPPORT marks of one
  signal on PACKET_RULE_SCAN_MIN_CARDS distinct cards, and that signal at least PACKET_RULE_SCAN_MIN_SHARE
  of the type's marks), it proposes: useful -> raise the type (``card_type_rank`` up); stale -> a
  shorter staleness window for it (``stale_after_days``, the typical age of the cards marked stale);
  wrong -> when every card marked wrong rests on one source system only, a confirming source is
  required (``confirming_source``: "a risk seen only in chat is not high confidence"), else the type
  is lowered (``card_type_rank`` down). Mixed marks propose nothing.
- Edits of owner-facing summaries (``packet_quality`` events of event_type ``summary_edited``, with
  metadata ``audience`` and the section keys ``sections_before`` / ``sections_after``): the same section
  moved above another in enough edits, never the reverse, proposes ``section_order`` ("financial
  exposure before schedule commentary"). Rules about what owners and clients see are risk high.
- Coverage: a source system with documents in the window that fed no card of a target's current
  packet nor of its previous version (``unused`` in both) proposes ``coverage_watch`` for it.

Events already behind a packet-rule promotion are not counted again, and a rule already active for
the same project is not proposed twice."""

from __future__ import annotations

import statistics
import uuid
from collections import defaultdict
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db.models import Q
from django.utils import timezone

from accounts.actors import Actor
from accounts.models import Project
from core.ids import parse_uuid
from feedback.models import EventFamily, FeedbackEvent, Signal
from intelligence.conf import intelligence_settings
from intelligence.models import CardType, InsightCard, InsightCardEvidence, IntelligencePacket, PacketRule, RuleStatus
from intelligence.services.packets import SECTION_OF_TYPE
from promotions.conf import promotions_settings
from promotions.models import LearningPromotion
from promotions.services import Proposal, promotions_propose_bulk

CLIENT_FACING = {"owner", "client", "customer"}
CARD_SIGNALS = (Signal.POSITIVE, Signal.NEGATIVE, Signal.STALE)


@dataclass
class PacketRuleScanReport:
    card_marks: int = 0
    summary_edits: int = 0
    groups: int = 0
    proposed: int = 0


def _metadata(event: FeedbackEvent) -> dict[str, Any]:
    return event.metadata if isinstance(event.metadata, dict) else {}


def packet_rule_scan(*, actor: Actor | None = None) -> PacketRuleScanReport:
    """Propose packet rules from consistent card feedback, summary edits and coverage (see the module)."""
    actor = actor or Actor.for_system()
    conf = promotions_settings
    since = timezone.now() - timedelta(days=conf.PACKET_RULE_SCAN_DAYS)
    used = {
        str(event_id)
        for ids in LearningPromotion.objects.filter(promotion_type="packet_rule", created_at__gte=since).values_list(
            "source_event_ids", flat=True
        )
        for event_id in ids or []
    }
    events = [
        event
        for event in FeedbackEvent.objects.filter(event_family=EventFamily.PACKET_QUALITY, created_at__gte=since)
        .filter(Q(subject_type="insight_card", signal__in=CARD_SIGNALS) | Q(event_type="summary_edited"))
        .order_by("created_at")[: conf.PACKET_RULE_SCAN_MAX_EVENTS]
        if str(event.pk) not in used
    ]
    marks = [e for e in events if e.subject_type == "insight_card" and e.event_type != "summary_edited"]
    edits = [e for e in events if e.event_type == "summary_edited"]
    report = PacketRuleScanReport(card_marks=len(marks), summary_edits=len(edits))
    active = {
        (rule.project_id, rule.rule_type, _key(rule.parameters))
        for rule in PacketRule.objects.filter(status=RuleStatus.ACTIVE)
    }
    projects = {p.pk: p for p in Project.objects.filter(pk__in={e.project_id for e in events if e.project_id})}
    proposals = [*_from_marks(marks, projects), *_from_edits(edits, projects), *_from_coverage()]
    fresh = []
    for proposal in proposals:
        learning = proposal.proposed_learning
        project_id = proposal.project.pk if proposal.project else None
        if (project_id, learning["rule_type"], _key(learning["parameters"])) in active:
            continue
        fresh.append(proposal)
    report.groups = len(fresh)
    opened = promotions_propose_bulk(
        actor=actor, promotion_type="packet_rule", subject_type="packet_rule", proposals=fresh
    )
    report.proposed = len(opened)
    return report


def _key(parameters: Any) -> str:
    if not isinstance(parameters, dict):
        return ""
    return repr(
        sorted(
            (k, v)
            for k, v in parameters.items()
            if k in ("order", "card_type", "direction", "source_system", "source_systems")
        )
    )


def _confidence(support: int, share: float) -> float:
    minimum = promotions_settings.PACKET_RULE_SCAN_MIN_SUPPORT
    return round(share * (1 - 1 / (1 + support / minimum)), 3)


def _from_marks(marks: list[FeedbackEvent], projects: dict[int, Project]) -> list[Proposal]:
    conf = promotions_settings
    groups: dict[tuple[int | None, str], list[FeedbackEvent]] = defaultdict(list)
    for event in marks:
        card_type = str(_metadata(event).get("card_type") or "")
        if card_type in CardType.values:
            groups[(event.project_id, card_type)].append(event)
    proposals = []
    for (project_id, card_type), members in groups.items():
        by_signal: dict[str, list[FeedbackEvent]] = defaultdict(list)
        for event in members:
            by_signal[event.signal].append(event)
        signal, chosen = max(by_signal.items(), key=lambda item: len(item[1]))
        share = len(chosen) / len(members)
        cards = {e.subject_id for e in chosen}
        if len(chosen) < conf.PACKET_RULE_SCAN_MIN_SUPPORT or len(cards) < conf.PACKET_RULE_SCAN_MIN_CARDS:
            continue
        if share < conf.PACKET_RULE_SCAN_MIN_SHARE:
            continue  # people disagree about this type: nothing to learn
        learning = _rule_for(signal=signal, card_type=card_type, events=chosen, card_ids=cards)
        if learning is None:
            continue
        proposals.append(
            Proposal(
                subject_id=f"{project_id or 'global'}:{learning['rule_type']}:{card_type}",
                proposed_learning=learning,
                confidence=_confidence(len(chosen), share),
                risk_level="medium",
                project=projects.get(project_id) if project_id else None,
                source_event_ids=[str(e.pk) for e in chosen],
            )
        )
    return proposals


def _rule_for(*, signal: str, card_type: str, events: list[FeedbackEvent], card_ids: set[str]) -> dict[str, Any] | None:
    section = SECTION_OF_TYPE[card_type]
    evidence = {"marks": len(events), "cards": sorted(card_ids)[:20], "signal": signal}
    if signal == Signal.POSITIVE:
        return {
            "rule_type": "card_type_rank",
            "parameters": {"card_type": card_type, "direction": "up"},
            "description": f"Raise {section} in the packet: users marked {len(events)} {card_type} cards useful.",
            "evidence": evidence,
        }
    if signal == Signal.STALE:
        cards = {str(c.pk): c for c in InsightCard.objects.filter(pk__in=_uuids(card_ids))}
        ages = []
        for event in events:
            card = cards.get(event.subject_id)
            if card is not None and card.last_evidence_at is not None:
                ages.append((event.created_at - card.last_evidence_at).days)
        if not ages:
            return None
        days = max(1, int(statistics.median(ages)))
        if days >= intelligence_settings.INTELLIGENCE_STALE_DAYS:
            return None  # the default window already makes them stale: no rule would change anything
        return {
            "rule_type": "stale_after_days",
            "parameters": {"card_type": card_type, "days": days},
            "description": f"{card_type} cards are stale after {days} days without new evidence "
            f"({len(events)} marked stale at a median age of {days} days).",
            "evidence": evidence,
        }
    # Wrong: a single source behind every wrong card asks for confirmation; otherwise lower the type.
    systems_per_card: dict[str, set[str]] = defaultdict(set)
    for card_id, system in InsightCardEvidence.objects.filter(card_id__in=_uuids(card_ids)).values_list(
        "card_id", "source_system"
    ):
        systems_per_card[str(card_id)].add(system or "unknown")
    systems = set().union(*systems_per_card.values()) if systems_per_card else set()
    single = len(systems) == 1 and all(len(s) == 1 for s in systems_per_card.values())
    if single and len(systems_per_card) == len(card_ids) and "unknown" not in systems and "memory" not in systems:
        system = next(iter(systems))
        return {
            "rule_type": "confirming_source",
            "parameters": {"card_type": card_type, "source_systems": [system], "confidence_cap": 0.5},
            "description": f"A {card_type} seen only in {system} is not high confidence without a confirming "
            f"source ({len(events)} such cards marked wrong).",
            "evidence": evidence,
        }
    return {
        "rule_type": "card_type_rank",
        "parameters": {"card_type": card_type, "direction": "down"},
        "description": f"Lower {section} in the packet: users marked {len(events)} {card_type} cards wrong.",
        "evidence": evidence,
    }


def _uuids(values: set[str]) -> list[uuid.UUID]:
    return [u for u in (parse_uuid(v) for v in values) if u is not None]


def _from_edits(edits: list[FeedbackEvent], projects: dict[int, Project]) -> list[Proposal]:
    """Pairs of sections an edit moved one above the other, grouped; consistent pairs become rules."""
    conf = promotions_settings
    moved: dict[tuple[int | None, str, str, str], list[FeedbackEvent]] = defaultdict(list)
    for event in edits:
        meta = _metadata(event)
        before, after = meta.get("sections_before"), meta.get("sections_after")
        if not isinstance(before, list) or not isinstance(after, list):
            continue
        audience = str(meta.get("audience") or "")[:50]
        for a in after:
            for b in after:
                if a == b or a not in before or b not in before:
                    continue
                if after.index(a) < after.index(b) and before.index(a) > before.index(b):
                    moved[(event.project_id, audience, str(a), str(b))].append(event)
    proposals = []
    for (project_id, audience, a, b), members in moved.items():
        if a not in SECTION_OF_TYPE.values() or b not in SECTION_OF_TYPE.values():
            continue
        reverse = len(moved.get((project_id, audience, b, a), []))
        share = len(members) / (len(members) + reverse)
        if len(members) < conf.PACKET_RULE_SCAN_MIN_SUPPORT or share < conf.PACKET_RULE_SCAN_MIN_SHARE:
            continue
        who = f"{audience} " if audience else ""
        proposals.append(
            Proposal(
                subject_id=f"{project_id or 'global'}:section_order:{audience}:{a}>{b}",
                proposed_learning={
                    "rule_type": "section_order",
                    "parameters": {"order": [a, b], "audience": audience},
                    "description": f"In {who}updates, {a} before {b} ({len(members)} edits moved it so).",
                    "client_facing": audience in CLIENT_FACING,
                    "evidence": {"edits": len(members), "reverse": reverse},
                },
                confidence=_confidence(len(members), share),
                # What owners and clients see always waits for a person.
                risk_level="high" if audience in CLIENT_FACING else "medium",
                project=projects.get(project_id) if project_id else None,
                source_event_ids=[str(e.pk) for e in members],
            )
        )
    return proposals


def _from_coverage() -> list[Proposal]:
    proposals = []
    current = [
        packet
        for packet in IntelligencePacket.objects.filter(current=True)
        .select_related("target__project")
        .order_by("-built_at")[: promotions_settings.PACKET_RULE_SCAN_MAX_PACKETS]
        if (packet.source_coverage or {}).get("unused") and packet.version > 1
    ]
    # Each one's previous version, in one query (versions are consecutive per target).
    wanted = Q(pk__in=[])
    for packet in current:
        wanted |= Q(target_id=packet.target_id, version=packet.version - 1)
    previous_of = {
        target_id: (version, coverage)
        for target_id, version, coverage in IntelligencePacket.objects.filter(wanted).values_list(
            "target_id", "version", "source_coverage"
        )
    }
    for packet in current:
        unused = set(packet.source_coverage.get("unused") or [])
        if packet.target_id not in previous_of:
            continue
        previous_version, previous_coverage = previous_of[packet.target_id]
        unused &= set((previous_coverage or {}).get("unused") or [])
        project = packet.target.project
        for system in sorted(unused):
            proposals.append(
                Proposal(
                    subject_id=f"{project.pk}:coverage_watch:{system}",
                    proposed_learning={
                        "rule_type": "coverage_watch",
                        "parameters": {"source_system": system},
                        "description": f"{system} had documents for {project.slug} but fed no card in two packets "
                        f"in a row: list it as missing coverage until it does.",
                        "evidence": {"target": packet.target_id, "packets": [previous_version, packet.version]},
                    },
                    confidence=0.6,
                    risk_level="medium",
                    project=project,
                )
            )
    return proposals
