"""The attribution queue in a real browser: from the promotions console, read a candidate's
evidence, correct one candidate and reject another, each with notes."""

from __future__ import annotations

import pytest

from feedback.models import FeedbackEvent
from intelligence.models import AttributionStatus, DocumentAttributionCandidate
from intelligence.services.attribution import document_attribute
from retrieval.models import Document
from tests import factories

pytestmark = pytest.mark.django_db(transaction=True)


def test_correct_and_reject_from_the_queue(logged_in_page):
    admin = factories.UserFactory(username="reviewer", is_staff=True, is_superuser=True)
    factories.IntelligenceTargetFactory(
        project=factories.ProjectFactory(slug="harbour", name="Harbour Tower"),
        name="Harbour Tower",
        aliases=["Harbour Tower"],
    )
    depot = factories.IntelligenceTargetFactory(
        project=factories.ProjectFactory(slug="depot", name="Granite Depot"), name="Granite Depot"
    )
    factories.DocumentFactory(id="mail-1", title="Harbour Tower crane", raw_text="The dig needs the crane Monday.")
    factories.DocumentFactory(id="mail-2", title="Harbour Tower webinar", raw_text="Join our webinar on cranes.")
    for document_id in ("mail-1", "mail-2"):
        assert document_attribute(document_id=document_id)["outcome"] == "candidate"
    first, second = DocumentAttributionCandidate.objects.order_by("document_id")

    page = logged_in_page(admin, "/console/promotions/")
    page.get_by_role("link", name="Attribution queue").click()
    card = page.locator(f'[data-candidate="{first.pk}"]')
    assert "alias: harbour tower (title)" in card.locator('[data-role="evidence"]').inner_text()
    assert card.locator('[data-role="proposed"]').inner_text() == "harbour/harbour"
    card.get_by_label(f"Right target for {first.pk}").select_option(label="depot/depot")
    card.get_by_label(f"Notes for correcting {first.pk}").fill("the dig is the depot job")
    card.get_by_role("button", name="Correct").click()
    page.get_by_text(f"Candidate {first.pk} corrected.").wait_for()

    other = page.locator(f'[data-candidate="{second.pk}"]')
    other.get_by_label(f"Notes for rejecting {second.pk}").fill("a vendor newsletter")
    other.get_by_role("button", name="Reject").click()
    page.get_by_text(f"Candidate {second.pk} rejected.").wait_for()
    assert page.get_by_text("No attributions are waiting.").is_visible()

    page.get_by_role("link", name="rejected").click()
    assert "a vendor newsletter" in page.locator(f'[data-candidate="{second.pk}"]').inner_text()
    assert Document.objects.get(pk="mail-1").project == depot.project
    assert Document.objects.get(pk="mail-2").project is None
    assert DocumentAttributionCandidate.objects.get(pk=second.pk).status == AttributionStatus.REJECTED
    signals = list(
        FeedbackEvent.objects.filter(event_type="attribution_review")
        .order_by("created_at")
        .values_list("signal", "free_text", "user__username")
    )
    assert signals == [
        ("corrected", "the dig is the depot job", "reviewer"),
        ("negative", "a vendor newsletter", "reviewer"),
    ]
