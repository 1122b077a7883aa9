"""Packets: sections by rules, recency and evidence; stale cards below active blockers; source
coverage (fed, stale, missing, unused); each entry's origin (sources or memory) and why."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from intelligence.models import CardOrigin, CardType, RuleStatus
from intelligence.services.compile import memory_card_record
from intelligence.services.packets import packet_build
from tests import factories

pytestmark = pytest.mark.django_db


def card(target, card_type, *, days_ago=0, systems=("email",), evidence=1, **kwargs):
    when = timezone.now() - timedelta(days=days_ago)
    row = factories.InsightCardFactory(
        target=target, card_type=card_type, last_evidence_at=when, evidence_count=evidence, **kwargs
    )
    for system in systems:
        factories.InsightCardEvidenceFactory(card=row, source_system=system, observed_at=when)
    return row


def order(packet):
    return [(entry.section, entry.card_id) for entry in packet.entries.all()]


@override_settings(INTELLIGENCE_STALE_DAYS=14)
def test_sections_follow_recency_and_evidence_and_stale_cards_drop_below_blockers():
    target = factories.IntelligenceTargetFactory()
    old_blocker = card(target, CardType.BLOCKER, days_ago=30)
    old_risk = card(target, CardType.RISK, days_ago=20)
    blocker = card(target, CardType.BLOCKER, days_ago=1)
    recent_risk = card(target, CardType.RISK, days_ago=0)
    older_risk = card(target, CardType.RISK, days_ago=2, evidence=5)
    schedule = card(target, CardType.SCHEDULE, days_ago=3)
    packet = packet_build(target=target, reason="test")
    assert order(packet) == [
        ("blockers", blocker.pk),
        ("risks", recent_risk.pk),
        ("risks", older_risk.pk),
        ("schedule", schedule.pk),
        ("stale", old_risk.pk),  # stale cards too by recency
        ("stale", old_blocker.pk),
    ]
    stale_entry = packet.entries.get(card=old_blocker)
    assert "stale: no evidence within 14 days, so below the active blockers" in stale_entry.why
    assert [s["key"] for s in packet.sections] == ["blockers", "risks", "schedule", "stale"]


def test_each_entry_says_whether_it_comes_from_sources_or_memory_and_why():
    project = factories.ProjectFactory()
    target = factories.IntelligenceTargetFactory(project=project)
    source = card(target, CardType.DECISION)
    remembered = memory_card_record(
        project=project, memory_id=41, content="The owner wants weekly photo reports.", kind="fact"
    )
    assert memory_card_record(project=project, memory_id=41, content="again", kind="fact") == remembered
    assert (remembered.origin, remembered.evidence.get().excerpt) == (
        CardOrigin.MEMORY,
        "The owner wants weekly photo reports.",
    )
    packet = packet_build(target=target)
    whys = {entry.card_id: entry.why for entry in packet.entries.all()}
    assert whys[source.pk].startswith("from sources; decision in decisions")
    assert whys[remembered.pk].startswith("from memory")
    origins = {e["card"]: e["origin"] for s in packet.sections for e in s["entries"]}
    assert origins == {str(source.pk): "source", str(remembered.pk): "memory"}
    assert "memory" not in packet.source_coverage["fed"]  # a memory is not a source


@override_settings(INTELLIGENCE_STALE_DAYS=14)
def test_coverage_says_which_sources_fed_which_are_stale_and_which_are_missing():
    project = factories.ProjectFactory()
    target = factories.IntelligenceTargetFactory(project=project)
    card(target, CardType.RISK, systems=("email",))
    card(target, CardType.UPDATE, days_ago=30, systems=("meetings",))
    # Chat documents of this project exist, but none within the window and none fed a card.
    old_chat = factories.DocumentFactory(project=project, source_system="chat")
    type(old_chat).objects.filter(pk=old_chat.pk).update(source_updated_at=timezone.now() - timedelta(days=40))
    # Drawings arrived this week but fed no card.
    factories.DocumentFactory(project=project, source_system="drawings", source_updated_at=timezone.now())
    coverage = packet_build(target=target).source_coverage
    assert coverage["fed"] == ["email", "meetings"]
    assert coverage["stale"] == ["meetings"]
    assert coverage["missing"] == ["chat", "meetings"]
    assert coverage["unused"] == ["drawings"]
    assert [row["source_system"] for row in coverage["fed_detail"]] == ["email", "meetings"]


def rule(project, rule_type, parameters, status=RuleStatus.ACTIVE):
    return factories.PacketRuleFactory(
        project=project, rule_type=rule_type, parameters=parameters, description=f"{rule_type} rule", status=status
    )


def test_applied_rules_change_the_next_packet_and_paused_ones_do_not():
    project = factories.ProjectFactory()
    target = factories.IntelligenceTargetFactory(project=project)
    blocker = card(target, CardType.BLOCKER)
    schedule = card(target, CardType.SCHEDULE)
    money = card(target, CardType.FINANCIAL)
    update = card(target, CardType.UPDATE)
    default = [key for key, _ in order(packet_build(target=target))]
    assert default == ["blockers", "financial", "schedule", "updates"]

    order_rule = rule(project, "section_order", {"order": ["schedule", "financial"]})
    rank_rule = rule(project, "card_type_rank", {"card_type": "update", "direction": "up"})
    rule(None, "card_type_rank", {"card_type": "blocker", "direction": "down"})  # blockers stay first
    rule(factories.ProjectFactory(), "section_order", {"order": ["updates", "blockers"]})  # another project's
    ruled = packet_build(target=target)
    assert order(ruled) == [
        ("blockers", blocker.pk),
        ("updates", update.pk),
        ("schedule", schedule.pk),
        ("financial", money.pk),
    ]
    assert "section placed by rule: section_order rule" in ruled.entries.get(card=money).why

    for paused in (order_rule, rank_rule):
        paused.status = RuleStatus.PAUSED
        paused.save(update_fields=["status"])
    assert [key for key, _ in order(packet_build(target=target))] == default


def test_a_card_seen_only_in_chat_is_not_high_confidence_without_a_confirming_source():
    project = factories.ProjectFactory()
    target = factories.IntelligenceTargetFactory(project=project)
    chat_only = card(target, CardType.RISK, systems=("chat",), confidence=0.9)
    confirmed = card(target, CardType.RISK, days_ago=1, systems=("chat", "email"), confidence=0.8)
    assert order(packet_build(target=target)) == [("risks", chat_only.pk), ("risks", confirmed.pk)]
    rule(project, "confirming_source", {"card_type": "risk", "source_systems": ["chat"], "confidence_cap": 0.4})
    packet = packet_build(target=target)
    assert order(packet) == [("risks", confirmed.pk), ("risks", chat_only.pk)]
    entry = next(e for e in packet.sections[0]["entries"] if e["card"] == str(chat_only.pk))
    assert entry["confidence"] == 0.4
    assert "not confirmed by another source" in entry["why"]


def test_stale_and_coverage_rules():
    project = factories.ProjectFactory()
    target = factories.IntelligenceTargetFactory(project=project)
    update = card(target, CardType.UPDATE, days_ago=5)
    risk = card(target, CardType.RISK, days_ago=5)
    assert order(packet_build(target=target)) == [("risks", risk.pk), ("updates", update.pk)]
    rule(project, "stale_after_days", {"card_type": "update", "days": 3})
    rule(project, "coverage_watch", {"source_system": "site_diary"})
    packet = packet_build(target=target)
    assert order(packet) == [("risks", risk.pk), ("stale", update.pk)]
    assert "no evidence within 3 days" in packet.entries.get(card=update).why
    assert packet.source_coverage["missing"] == ["site_diary"]
