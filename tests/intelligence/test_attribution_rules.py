"""Attribution rules: the scanner proposes them from recurring corrections, the writer applies,
pauses, resumes and retires them, and an applied rule attributes new documents."""

from __future__ import annotations

import pytest
from django.test import override_settings

from intelligence.models import AttributionRule, RuleStatus
from intelligence.services.attribution import document_attribute
from intelligence.services.attribution_reviews import attribution_candidate_decide
from promotions.models import LearningPromotion, PromotionStatus
from promotions.scanners import SCANNERS
from promotions.scanners.attribution import attribution_scan
from promotions.services import promotion_transition
from retrieval.models import Document
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def targets():
    made = {}
    for slug, name in (("harbour", "Harbour Tower"), ("depot", "Granite Depot"), ("oak", "Oak Lofts")):
        made[slug] = factories.IntelligenceTargetFactory(
            project=factories.ProjectFactory(slug=slug, name=name), name=name, aliases=[name]
        )
    # What each project's own documents say (the competing support of a phrase).
    for index in range(6):
        factories.DocumentFactory(
            id=f"h-{index}",
            project=made["harbour"].project,
            raw_text=f"Concrete pour on level {index}. Crane booked.",
            metadata={"path": f"/shares/jobs/harbour/rfi/{index}.pdf"},
        )
        factories.DocumentFactory(id=f"d-{index}", project=made["depot"].project, raw_text="Steel delivery.")
    return made


def corrected(world, targets, number, text, *, to="depot", proposed="harbour", participants=()):
    """A document the scorer put at ``proposed`` and a reviewer corrected to ``to``."""
    document = factories.DocumentFactory(
        id=f"c-{to}-{number}", title=f"Message {number}", raw_text=text, participants=list(participants)
    )
    candidate = factories.DocumentAttributionCandidateFactory(document=document, target=targets[proposed])
    if to == proposed:
        attribution_candidate_decide(actor=world.actor("admin"), candidate_id=candidate.pk, decision="approve")
    else:
        attribution_candidate_decide(
            actor=world.actor("admin"), candidate_id=candidate.pk, decision="correct", target_id=targets[to].pk
        )
    return document


def test_the_scanner_is_registered():
    assert SCANNERS["attribution"] is attribution_scan


@override_settings(ATTRIBUTION_SCAN_MIN_CORRECTIONS=3)
def test_a_recurring_nickname_becomes_a_low_risk_candidate_and_a_generic_phrase_does_not(world, targets):
    texts = (
        "The dig flooded again overnight. Concrete pour postponed.",
        "Pump failure at the dig; the concrete pour moves to Friday.",
        "Crane lift at the dig is on Tuesday, concrete pour after it.",
    )
    for number, text in enumerate(texts):
        corrected(world, targets, number, text)
    report = attribution_scan(actor=world.actor("admin"))
    promotions = {p.subject_id: p for p in LearningPromotion.objects.filter(promotion_type="attribution_rule")}
    assert "alias:the dig" in promotions
    assert not any("concrete" in subject for subject in promotions)  # harbour's documents say it too
    assert set(promotions) == {"alias:the dig"}
    assert report.competing >= 1
    promotion = promotions["alias:the dig"]
    assert (promotion.risk_level, promotion.project, promotion.target_id) == (
        "low",
        targets["depot"].project,
        targets["depot"].pk,
    )
    assert promotion.proposed_learning["support"]["reviewed"] == 3
    assert len(promotion.source_event_ids) == 3
    assert attribution_scan(actor=world.actor("admin")).proposed == 0  # never twice for one pattern


@override_settings(ATTRIBUTION_SCAN_MIN_CORRECTIONS=3)
def test_too_few_corrections_or_two_projects_propose_nothing(world, targets):
    corrected(world, targets, 0, "The dig flooded again.")
    corrected(world, targets, 1, "The dig flooded again.")
    assert attribution_scan(actor=world.actor("admin")).proposed == 0
    corrected(world, targets, 2, "The dig flooded again.", to="oak")
    corrected(world, targets, 3, "The dig flooded again.", to="oak")
    corrected(world, targets, 4, "The dig flooded again.", to="oak")
    assert not LearningPromotion.objects.filter(subject_id="alias:the dig").exists()
    assert attribution_scan(actor=world.actor("admin")).proposed == 0


@override_settings(ATTRIBUTION_SCAN_MIN_CORRECTIONS=3)
def test_a_sender_domain_becomes_a_candidate(world, targets):
    for number in range(3):
        corrected(world, targets, number, "Invoice attached.", participants=[f"p{number}@orbis-logistics.example"])
    attribution_scan(actor=world.actor("admin"))
    assert LearningPromotion.objects.filter(subject_id="domain:orbis-logistics.example").exists()


def test_the_writer_applies_pauses_resumes_and_retires_the_rule(world, targets):
    admin = world.actor("admin")
    promotion = LearningPromotion.objects.create(
        promotion_type="attribution_rule",
        subject_type="attribution_pattern",
        subject_id="alias:the dig",
        proposed_learning={"match_kind": "alias", "pattern": "The Dig", "target_id": targets["depot"].pk},
        project=targets["depot"].project,
    )
    promotion_transition(actor=admin, promotion_id=str(promotion.pk), action="approve")
    promotion_transition(actor=admin, promotion_id=str(promotion.pk), action="apply")
    rule = AttributionRule.objects.get(promotion_id=promotion.pk)
    assert (rule.match_kind, rule.pattern, rule.status, rule.target) == (
        "alias",
        "the dig",
        RuleStatus.ACTIVE,
        targets["depot"],
    )
    new = factories.DocumentFactory(id="new-1", raw_text="The Dig: the pump failed overnight.")
    assert document_attribute(document_id=new.pk)["outcome"] == "attributed"
    assert Document.objects.get(pk="new-1").project == targets["depot"].project

    promotion_transition(actor=admin, promotion_id=str(promotion.pk), action="pause")
    rule.refresh_from_db()
    assert rule.status == RuleStatus.PAUSED
    paused = factories.DocumentFactory(id="new-2", raw_text="The Dig: the pump failed overnight.")
    assert document_attribute(document_id=paused.pk)["outcome"] == "unattributed"

    promotion_transition(actor=admin, promotion_id=str(promotion.pk), action="resume")
    rule.refresh_from_db()
    assert rule.status == RuleStatus.ACTIVE
    promotion_transition(actor=admin, promotion_id=str(promotion.pk), action="supersede")
    rule.refresh_from_db()
    assert rule.status == RuleStatus.SUPERSEDED
    assert LearningPromotion.objects.get(pk=promotion.pk).status == PromotionStatus.SUPERSEDED
    superseded = factories.DocumentFactory(id="new-3", raw_text="The Dig: the pump failed overnight.")
    assert document_attribute(document_id=superseded.pk)["outcome"] == "unattributed"


@pytest.mark.parametrize(
    "learning",
    [
        {"match_kind": "alias", "pattern": "the dig"},  # no target
        {"match_kind": "colour", "pattern": "red", "target_id": None},
        {"match_kind": "alias", "pattern": "  ", "target_id": None},
        {"match_kind": "domain", "pattern": "not a domain", "target_id": None},
        {"match_kind": "alias", "pattern": "the dig", "target_id": 999_999},
    ],
)
def test_a_proposal_by_hand_is_checked_by_the_writer(world, targets, learning):
    if "target_id" in learning and learning["target_id"] is None:
        learning["target_id"] = targets["depot"].pk
    response = world.client("admin").post(
        "/api/v1/promotions",
        {"promotion_type": "attribution_rule", "subject_id": "alias:x", "proposed_learning": learning},
        format="json",
    )
    assert response.status_code == 400, response.content
    assert not LearningPromotion.objects.exists()


@override_settings(ATTRIBUTION_SCAN_MIN_CORRECTIONS=3)
def test_a_phrase_with_a_number_is_never_learned(world, targets):
    for number in range(3):
        corrected(world, targets, number, f"Payment application 13 attached ({'abc'[number]}).")
    attribution_scan(actor=world.actor("admin"))
    assert not LearningPromotion.objects.filter(subject_id__contains="13").exists()
