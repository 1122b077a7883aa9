"""The review console in a real browser: generate, approve, preview, apply, pause, resume."""

from __future__ import annotations

import pytest

from accounts.actors import Actor
from promotions.models import LearningPromotion, ScanRun
from retrieval.models import RetrievalWeight
from retrieval.services import DocumentInput, ResultFeedback, documents_import, retrieval_feedback_record, search
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


def test_generate_approve_preview_apply_pause_resume(logged_in_page):
    admin = UserFactory(username="reviewer", is_staff=True, is_superuser=True)
    reader = Actor(user=UserFactory(username="reader"))
    documents_import(
        actor=Actor.for_system(),
        items=[
            DocumentInput(
                id="flutter", raw_text="Flutter of aircraft wings: aeroelastic coupling of bending and torsion."
            ),
            DocumentInput(id="tunnel", raw_text="Wind tunnel tests of wing flutter with control surfaces."),
            DocumentInput(id="shells", raw_text="Buckling of thin cylindrical shells under axial compression."),
        ],
    )
    for _ in range(3):
        result = search(actor=reader, query="hypersonic wing flutter theory", k=3)
        stale = result.hits[0].chunk.chunk_id
        retrieval_feedback_record(
            actor=reader, trace_id=result.trace_id, items=[ResultFeedback(stale, outcome="stale")]
        )

    page = logged_in_page(admin, "/console/promotions/")
    page.get_by_role("button", name="Generate").click()
    page.get_by_text("Scan queued.").wait_for()
    # No broker here: the task ran when the request committed, so the list shows the finished scan.
    page.locator('[data-role="scan-status"]', has_text="succeeded").wait_for()
    page.get_by_text("Retrieval: 0 boosts and 1 penalties proposed").wait_for()
    assert ScanRun.objects.get().requested_by == admin
    page.locator('[data-role="row-link"]', has_text="Rank passage").click()
    page.get_by_label("Notes for approve").fill("stale since the 2025 revision")
    page.get_by_role("button", name="Approve").click()
    page.get_by_text("Promotion approved.").wait_for()
    # The impact preview is on the page; Apply asks for confirmation in a dialog first.
    assert "recent searches this weight would reach" in page.locator('[data-role="preview-summary"]').inner_text()
    page.get_by_role("button", name="Apply…").click()
    page.locator('[data-role="confirm-apply"]').get_by_role("button", name="Apply", exact=True).click()
    page.locator('[data-role="status"]', has_text="applied").wait_for()
    for action, status in (("Pause", "paused"), ("Resume", "applied")):
        page.get_by_role("button", name=action).click()
        page.locator('[data-role="status"]', has_text=status).wait_for()

    # ... and through the API.
    promotion = LearningPromotion.objects.get()
    body = page.request.get(f"/api/v1/promotions/{promotion.pk}").json()
    assert (body["status"], body["reviewed_by"], body["review_notes"]) == (
        "applied",
        "reviewer",
        "stale since the 2025 revision",
    )
    assert RetrievalWeight.objects.get().status == "active"
