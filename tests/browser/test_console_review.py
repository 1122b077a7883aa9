"""Reviewing each promotion type in a real browser: read the explanation, approve with notes, confirm
Apply in its dialog (Cancel and Escape change nothing), see the applied state and the audit trail;
reject with confirmation from the keyboard; supersede picking a replacement; and the same
confirmation without JavaScript, as a page."""

from __future__ import annotations

import pytest

from promotions.models import LearningPromotion
from tests.factories import UserFactory
from tests.promotions import cases
from tests.promotions.conftest import promote

pytestmark = pytest.mark.django_db(transaction=True)

# A phrase of each type's explanation the reviewer must be able to read.
READS = {
    "retrieval_weight": "Rank this passage higher",
    "agent_learning_thumbs_down": "[Lessons From Reviewed Feedback]",
    "agent_learning_tool_failure": "only runs of the command invoices/send",
    "agent_learning_task_rating": "Too vague: no date and no list of who attends",
    "agent_learning_eval_failure": "Invoice dates are written as YYYY-MM-DD.",
    "task_example": "[Approved Task Examples]",
    "memory": "[Team Knowledge]",
    "workflow": "[Known Workflow: Weekly site report]",
    "packet_rule": "The Risks section moves up to just after the active blockers.",
    "attribution_rule": "Apollo tower",
}


def detail(promotion: LearningPromotion) -> str:
    return f"/console/promotions/{promotion.pk}/"


@pytest.fixture
def reviewer(db):
    return UserFactory(username="reviewer", is_staff=True, is_superuser=True)


@pytest.mark.parametrize("case", list(cases.CASES))
def test_review_each_type_approve_then_confirm_apply(world, embedder, reviewer, logged_in_page, case):
    promotion = cases.CASES[case](world)
    page = logged_in_page(reviewer, detail(promotion))
    page.get_by_text(READS[case]).first.wait_for()
    assert page.locator('[data-role="apply-effect"]').inner_text().startswith("Once approved, Apply will change this:")
    page.screenshot(path=f"/tmp/review-detail-{case}.png", full_page=True)

    page.get_by_label("Notes for approve").fill("Checked against the evidence")
    page.get_by_role("button", name="Approve").click()
    page.get_by_text("Promotion approved.").wait_for()
    effect = page.locator('[data-role="apply-effect"]').inner_text()
    assert effect.startswith("What Apply will change: Apply ")

    # Apply asks first; Cancel (and Escape) leave it approved.
    page.get_by_role("button", name="Apply…").click()
    dialog = page.locator('[data-role="confirm-apply"]')
    dialog.wait_for(state="visible")
    assert effect.removeprefix("What Apply will change: ") in dialog.inner_text()
    dialog.get_by_role("button", name="Cancel").click()
    dialog.wait_for(state="hidden")
    page.get_by_role("button", name="Apply…").click()
    dialog.wait_for(state="visible")
    page.keyboard.press("Escape")
    dialog.wait_for(state="hidden")
    assert LearningPromotion.objects.get(pk=promotion.pk).status == "approved"

    page.get_by_role("button", name="Apply…").click()
    dialog.get_by_role("button", name="Apply", exact=True).click()
    page.get_by_text("Promotion applied.").wait_for()
    page.locator('[data-role="status"]', has_text="applied").wait_for()
    trail = page.locator('[data-role="audit-trail"]').inner_text()
    assert "Approved by reviewer: “Checked against the evidence”" in trail
    assert "Applied by reviewer" in trail
    # Only what an applied promotion allows is offered now.
    assert page.locator('[data-role^="action-"]').evaluate_all("els => els.map(e => e.dataset.role)") == [
        "action-pause",
        "action-supersede",
    ]
    promotion.refresh_from_db()
    assert (promotion.status, promotion.reviewed_by, promotion.review_notes) == (
        "applied",
        reviewer,
        "Checked against the evidence",
    )
    page.screenshot(path=f"/tmp/review-detail-{case}-applied.png", full_page=True)


def test_reject_with_confirmation_from_the_keyboard(world, reviewer, logged_in_page):
    promotion = cases.memory_share(world)
    page = logged_in_page(reviewer, detail(promotion))
    page.get_by_label("Notes for reject").fill("Private to the owner")
    page.get_by_role("button", name="Reject…").focus()
    page.keyboard.press("Enter")
    dialog = page.locator('[data-role="confirm-reject"]')
    dialog.wait_for(state="visible")
    assert "Reject closes this candidate" in dialog.inner_text()
    # The dialog opens on Cancel (the safe choice); Tab reaches Reject.
    assert page.evaluate("document.activeElement.textContent") == "Cancel"
    page.screenshot(path="/tmp/review-detail-reject-dialog.png")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Reject"
    page.keyboard.press("Enter")
    page.get_by_text("Promotion rejected.").wait_for()
    page.locator('[data-role="status"]', has_text="rejected").wait_for()
    assert page.locator('[data-role="no-actions"]').is_visible()
    promotion.refresh_from_db()
    assert (promotion.status, promotion.review_notes) == ("rejected", "Private to the owner")


def test_supersede_picking_the_replacement(world, reviewer, logged_in_page):
    old = promote(world, cases.task_example(world), "approve", "apply")
    new = promote(world, cases.task_example(world, "Draft the Q4 site report"), "approve")
    page = logged_in_page(reviewer, detail(old))
    page.get_by_role("button", name="Supersede…").click()
    # The replacement is required: the browser asks for it before any dialog.
    assert not page.locator('[data-role="confirm-supersede"]').is_visible()
    page.get_by_label("Replaced by").select_option(str(new.pk))
    page.get_by_role("button", name="Supersede…").click()
    dialog = page.locator('[data-role="confirm-supersede"]')
    dialog.wait_for(state="visible")
    assert "Task example: Draft the Q4 site report" in dialog.locator('[data-role="replacement-label"]').inner_text()
    assert "retires what it made" in dialog.inner_text()
    page.screenshot(path="/tmp/review-detail-supersede-dialog.png")
    dialog.get_by_role("button", name="Supersede", exact=True).click()
    page.get_by_text("Promotion superseded by “Task example: Draft the Q4 site report”.").wait_for()
    page.locator('[data-role="superseded-by"]').get_by_role("link").click()
    page.locator('[data-role="headline"]', has_text="Draft the Q4 site report").wait_for()
    old.refresh_from_db()
    assert (old.status, old.superseded_by_id) == ("superseded", new.pk)


def test_without_javascript_apply_is_confirmed_on_a_page(world, reviewer, browser, live_server, client):
    promotion = promote(world, cases.task_example(world), "approve")
    client.force_login(reviewer)
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}])
    try:
        page = context.new_page()
        page.set_default_timeout(10_000)
        page.goto(live_server.url + detail(promotion))
        page.get_by_role("button", name="Apply…").click()
        page.get_by_role("heading", name="Apply this promotion?").wait_for()
        assert "Apply makes this task an approved example" in page.locator('[data-role="consequence"]').inner_text()
        assert LearningPromotion.objects.get(pk=promotion.pk).status == "approved"
        page.screenshot(path="/tmp/review-detail-confirm-page.png")
        page.get_by_role("button", name="Apply").click()
        page.get_by_text("Promotion applied.").wait_for()
        assert LearningPromotion.objects.get(pk=promotion.pk).status == "applied"
    finally:
        context.close()
