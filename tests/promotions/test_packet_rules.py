"""Packet-rule promotions: the scanner reads card feedback, summary edits and coverage; the writer
creates, pauses, resumes and retires the rule, and the next packet build follows it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from config.exceptions import ApplicationError
from feedback.models import FeedbackEvent
from feedback.services.events import EventInput, event_record
from intelligence.models import CardOrigin, CardStatus, CardType, InsightCard, PacketRefreshJob, PacketRule, RuleStatus
from intelligence.services.packets import packet_build
from intelligence.services.targets import target_for_project
from learning.analyzer.base import MemoryFinding
from learning.services import memories
from promotions.models import LearningPromotion, Scanner
from promotions.scanners import SCANNERS
from promotions.scanners.packet_rule import packet_rule_scan
from promotions.services import memory_share_propose, promotion_propose
from tests import factories
from tests.promotions.conftest import promote


@pytest.fixture
def target(world):
    return target_for_project(project=world.project)


def cards(target, card_type, n, *, systems=("email",), days_ago=0):
    out = []
    for _ in range(n):
        when = timezone.now() - timedelta(days=days_ago)
        card = factories.InsightCardFactory(target=target, card_type=card_type, last_evidence_at=when)
        for system in systems:
            factories.InsightCardEvidenceFactory(card=card, source_system=system, observed_at=when)
        out.append(card)
    return out


def mark(world, user, card, signal):
    """A card-feedback event as the card-feedback API writes it."""
    event_record(
        actor=world.actor(user),
        data=EventInput(
            event_type="card_feedback",
            event_family="packet_quality",
            signal=signal,
            project_slug=world.project.slug,
            subject_type="insight_card",
            subject_id=str(card.pk),
            metadata={"card_type": card.card_type, "target_id": card.target_id},
        ),
    )


def proposals():
    return {p.proposed_learning["rule_type"]: p for p in LearningPromotion.objects.filter(promotion_type="packet_rule")}


def test_the_scanner_is_registered():
    assert SCANNERS[Scanner.PACKET_RULE] is packet_rule_scan


def test_risks_marked_wrong_that_rest_only_on_chat_ask_for_a_confirming_source(world, target):
    chat_risks = cards(target, CardType.RISK, 3, systems=("chat",))
    for card, user in zip(chat_risks, ("owner", "member", "owner"), strict=True):
        mark(world, user, card, "negative")
    report = packet_rule_scan()
    assert (report.card_marks, report.proposed) == (3, 1)
    promotion = proposals()["confirming_source"]
    assert promotion.proposed_learning["parameters"] == {
        "card_type": "risk",
        "source_systems": ["chat"],
        "confidence_cap": 0.5,
    }
    assert (promotion.project, promotion.risk_level, len(promotion.source_event_ids)) == (world.project, "medium", 3)
    assert packet_rule_scan().proposed == 0  # its events are behind a promotion now


def test_consistent_marks_raise_or_lower_a_type_and_mixed_ones_teach_nothing(world, target):
    for card in cards(target, CardType.DECISION, 3):
        mark(world, "member", card, "positive")
    updates = cards(target, CardType.UPDATE, 4)
    for card, signal in zip(updates, ("positive", "negative", "positive", "negative"), strict=True):
        mark(world, "owner", card, signal)
    wrong_tasks = cards(target, CardType.TASK, 3, systems=("email",))
    cards_with_two_sources = cards(target, CardType.TASK, 1, systems=("chat", "email"))
    for card in [*wrong_tasks, *cards_with_two_sources]:
        mark(world, "owner", card, "negative")
    packet_rule_scan()
    found = {
        (p.proposed_learning["parameters"].get("card_type"), p.proposed_learning["parameters"].get("direction"))
        for p in LearningPromotion.objects.filter(promotion_type="packet_rule")
    }
    assert found == {("decision", "up"), ("task", "down")}


def test_cards_marked_stale_propose_a_shorter_staleness_window(world, target, settings):
    settings.INTELLIGENCE_STALE_DAYS = 21
    for card in cards(target, CardType.SCHEDULE, 3, days_ago=8):
        mark(world, "member", card, "stale")
    packet_rule_scan()
    assert proposals()["stale_after_days"].proposed_learning["parameters"] == {"card_type": "schedule", "days": 8}


def test_consistent_edits_of_owner_summaries_propose_a_client_facing_rule_at_high_risk(world):
    before = ["blockers", "risks", "schedule", "financial", "updates"]
    after = ["blockers", "risks", "financial", "schedule", "updates"]
    for user in ("owner", "member", "owner"):
        event_record(
            actor=world.actor(user),
            data=EventInput(
                event_type="summary_edited",
                event_family="packet_quality",
                signal="corrected",
                project_slug=world.project.slug,
                subject_type="intelligence_packet",
                subject_id="1",
                metadata={"audience": "owner", "sections_before": before, "sections_after": after},
            ),
        )
    assert packet_rule_scan().summary_edits == 3
    promotion = proposals()["section_order"]
    assert promotion.proposed_learning["parameters"] == {"order": ["financial", "schedule"], "audience": "owner"}
    assert (promotion.risk_level, promotion.proposed_learning["client_facing"]) == ("high", True)


def test_a_source_that_fed_no_card_in_two_packets_in_a_row_is_proposed_for_watching(world, target):
    factories.DocumentFactory(project=world.project, source_system="drawings", source_updated_at=timezone.now())
    packet_build(target=target)
    assert packet_rule_scan().proposed == 0  # once is not a pattern
    packet_build(target=target)
    packet_rule_scan()
    assert proposals()["coverage_watch"].proposed_learning["parameters"] == {"source_system": "drawings"}


def test_an_applied_rule_changes_the_next_packet_until_it_is_paused(world, target, django_capture_on_commit_callbacks):
    money = cards(target, CardType.FINANCIAL, 1)[0]
    schedule = cards(target, CardType.SCHEDULE, 1)[0]
    promotion, _ = promotion_propose(
        actor=world.actor("admin"),
        promotion_type="packet_rule",
        subject_type="packet_rule",
        subject_id=f"{world.project.pk}:section_order:owner:schedule>financial",
        proposed_learning={
            "rule_type": "section_order",
            "parameters": {"order": ["schedule", "financial"]},
            "description": "Schedule before financial exposure.",
        },
        project=world.project,
        risk_level="high",
    )

    def sections():
        return [entry.card_id for entry in packet_build(target=target).entries.all()]

    assert sections() == [money.pk, schedule.pk]
    with django_capture_on_commit_callbacks(execute=False):
        promote(world, promotion, "approve", "apply")
    rule = PacketRule.objects.get(promotion_id=promotion.pk)
    assert (rule.project, rule.status, rule.rule_type) == (world.project, RuleStatus.ACTIVE, "section_order")
    assert PacketRefreshJob.objects.filter(target=target, status="queued").exists()  # the packet follows
    assert sections() == [schedule.pk, money.pk]
    with django_capture_on_commit_callbacks(execute=False):
        promote(world, promotion, "pause")
    assert PacketRule.objects.get(pk=rule.pk).status == RuleStatus.PAUSED
    assert sections() == [money.pk, schedule.pk]
    with django_capture_on_commit_callbacks(execute=False):
        promote(world, promotion, "resume")
    assert sections() == [schedule.pk, money.pk]
    with django_capture_on_commit_callbacks(execute=False):
        promote(world, promotion, "supersede")
    assert PacketRule.objects.get(pk=rule.pk).status == RuleStatus.SUPERSEDED
    assert sections() == [money.pk, schedule.pk]
    actions = FeedbackEvent.objects.filter(subject_type="promotion", subject_id=str(promotion.pk))
    assert actions.count() == 6  # propose, approve, apply, pause, resume, supersede: each audited


@pytest.mark.parametrize(
    "learning",
    [
        {"rule_type": "teleport", "parameters": {}, "description": "x"},
        {"rule_type": "section_order", "parameters": {"order": ["financial"]}, "description": "x"},
        {"rule_type": "card_type_rank", "parameters": {"card_type": "gossip", "direction": "up"}, "description": "x"},
        {"rule_type": "stale_after_days", "parameters": {"card_type": "risk", "days": 0}, "description": "x"},
        {"rule_type": "coverage_watch", "parameters": {"source_system": "chat"}, "description": ""},
    ],
)
def test_a_malformed_rule_is_refused_and_nothing_written(world, learning):
    with pytest.raises(ApplicationError) as error:
        promotion_propose(
            actor=world.actor("admin"),
            promotion_type="packet_rule",
            subject_type="packet_rule",
            subject_id="p:x",
            proposed_learning=learning,
        )
    assert "proposed_learning" in error.value.fields
    assert not LearningPromotion.objects.exists()


def test_an_applied_project_memory_is_a_card_from_memory_until_paused(world, django_capture_on_commit_callbacks):
    memory = memories.memory_remember(
        owner=world.owner,
        finding=MemoryFinding(
            kind="fact", content="The client wants the atrium finished before the opening gala.", confidence=0.9
        ),
        source_message=None,
    )
    promotion, _ = memory_share_propose(
        actor=world.actor("owner"),
        subject_type="memory",
        subject_id=str(memory.pk),
        visibility="project",
        project=world.project,
    )
    with django_capture_on_commit_callbacks(execute=False):
        promote(world, promotion, "approve", "apply")
    card = InsightCard.objects.get(origin=CardOrigin.MEMORY)
    assert card.target == target_for_project(project=world.project)
    assert card.evidence.get().excerpt == "The client wants the atrium finished before the opening gala."
    with django_capture_on_commit_callbacks(execute=False):
        promote(world, promotion, "pause")
    card.refresh_from_db()
    assert card.status == CardStatus.DISMISSED
    with django_capture_on_commit_callbacks(execute=False):
        promote(world, promotion, "resume")
    card.refresh_from_db()
    assert card.status == CardStatus.ACTIVE


def test_a_scan_of_packet_rules_is_reported_in_the_scan_api(world, target, django_capture_on_commit_callbacks):
    for card in cards(target, CardType.DECISION, 3):
        mark(world, "member", card, "positive")
    with django_capture_on_commit_callbacks(execute=True):
        response = world.client("admin").post("/api/v1/promotions/scan", {"scanner": "packet_rule"}, format="json")
    assert response.status_code == 202, response.content
    run = world.client("admin").get(f"/api/v1/promotions/scans/{response.json()['id']}").json()
    assert run["report"]["packet_rule"] == {"card_marks": 3, "summary_edits": 0, "groups": 1, "proposed": 1}
