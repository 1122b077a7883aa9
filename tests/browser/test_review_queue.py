"""The console's queue in a real browser: filters and pages, bulk approval with notes, and the
keyboard (j/k, x, a with its confirmation, / and ?)."""

from __future__ import annotations

import pytest

from feedback.models import FeedbackEvent
from promotions.models import LearningPromotion
from tests.factories import LearningPromotionFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

SHOTS = "/tmp/review-queue-{}.png"


def admin():
    return UserFactory(username="reviewer", is_staff=True, is_superuser=True)


def tasks(n, *, project=None, prefix="Task"):
    return [
        LearningPromotionFactory(project=project, proposed_learning={"title": f"{prefix} {i:02d}", "description": "x"})
        for i in range(n)
    ]


def summaries(page):
    return page.locator('[data-role="row-link"]').all_inner_texts()


def test_filter_by_type_and_project_then_page_two(logged_in_page):
    apollo = ProjectFactory(slug="apollo", name="Apollo")
    riverside = ProjectFactory(slug="riverside", name="Riverside")
    tasks(25, project=apollo, prefix="Apollo task")
    tasks(3, project=riverside, prefix="Riverside task")
    for i in range(4):
        LearningPromotionFactory(
            promotion_type="memory",
            subject_type="memory",
            project=apollo,
            proposed_learning={"visibility": "project", "project": "apollo", "content": f"Fact {i}"},
        )
    page = logged_in_page(admin(), "/console/promotions/")
    assert page.locator('[data-role="showing"]').inner_text() == "Showing 1–20 of 32"
    assert page.locator('[data-status="candidate"] [data-role="tab-count"]').inner_text() == "32"

    page.locator('[data-role="filter-type"]').select_option("task_example")
    page.locator('[data-role="filter-project"]').select_option("apollo")
    page.locator('[data-role="apply-filters"]').click()
    page.locator('[data-role="showing"]', has_text="Showing 1–20 of 25").wait_for()
    assert page.locator('[data-status="candidate"] [data-role="tab-count"]').inner_text() == "25"
    assert all(line.startswith("Task example: Apollo task") for line in summaries(page))
    page.screenshot(path=SHOTS.format("filtered"), full_page=True)

    page.locator('[data-role="page-next"]').click()
    page.locator('[data-role="showing"]', has_text="Showing 21–25 of 25").wait_for()
    assert sorted(summaries(page)) == [f"Task example: Apollo task {i:02d}" for i in range(5)]  # the oldest five
    # The filters are still set on page 2, and the tabs keep them.
    assert page.locator('[data-role="filter-type"]').input_value() == "task_example"
    assert page.locator('[data-role="filter-project"]').input_value() == "apollo"
    page.locator('[data-status="approved"]').click()
    page.locator('[data-role="empty"]', has_text="No approved promotions match these filters.").wait_for()
    assert "promotion_type=task_example" in page.url
    assert "project=apollo" in page.url
    page.locator('[data-role="clear-filters"]').first.click()
    page.locator('[data-role="empty"]', has_text="No promotions are approved (32 in the other tabs).").wait_for()


def test_bulk_approve_with_notes(logged_in_page):
    reviewer = admin()
    tasks(3, prefix="Bulk")
    page = logged_in_page(reviewer, "/console/promotions/")
    page.get_by_label("Select all on this page").check()
    assert page.locator('[data-role="selected-count"]').inner_text() == "3 selected"
    page.get_by_label("Select Task example: Bulk 01").uncheck()
    assert page.locator('[data-role="selected-count"]').inner_text() == "2 selected"
    page.get_by_label("Notes for the selected candidates").fill("checked against the style guide")
    page.locator('[data-role="bulk-approve"]').click()
    dialog = page.locator('[data-role="confirm-dialog"]')
    dialog.wait_for()
    assert dialog.locator('[data-role="confirm-title"]').inner_text() == "Approve these 2 candidates?"
    assert "“Task example: Bulk 02”" in dialog.inner_text()
    assert dialog.locator('[data-role="confirm-notes"]').input_value() == "checked against the style guide"
    page.screenshot(path=SHOTS.format("bulk-confirm"), full_page=True)
    dialog.locator('[data-role="confirm-submit"]').click()
    page.get_by_text("2 promotions approved.").wait_for()

    assert summaries(page) == ["Task example: Bulk 01"]
    assert page.locator('[data-status="approved"] [data-role="tab-count"]').inner_text() == "2"
    page.locator('[data-status="approved"]').click()
    page.locator('[data-role="showing"]', has_text="Showing 1–2 of 2").wait_for()
    assert sorted(summaries(page)) == ["Task example: Bulk 00", "Task example: Bulk 02"]
    feed = page.locator('[data-role="activity"]').inner_text()
    assert "reviewer approved “Task example: Bulk 02”: checked against the style guide" in feed
    page.screenshot(path=SHOTS.format("approved-tab"), full_page=True)
    events = FeedbackEvent.objects.filter(event_type="promotion_approve")
    assert {(e.user, e.free_text) for e in events} == {(reviewer, "checked against the style guide")}
    assert events.count() == 2


def test_keyboard_moves_selects_and_approves_with_a_confirmation(logged_in_page):
    reviewer = admin()
    tasks(4, prefix="Key")  # newest first: Key 03, 02, 01, 00
    page = logged_in_page(reviewer, "/console/promotions/")
    focused = 'document.activeElement.dataset.summary || ""'

    page.keyboard.press("j")
    assert page.evaluate(focused) == "Task example: Key 03"
    page.keyboard.press("j")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("k")
    assert page.evaluate(focused) == "Task example: Key 02"
    page.screenshot(path=SHOTS.format("keyboard-focus"), full_page=True)
    page.keyboard.press("x")
    assert page.get_by_label("Select Task example: Key 02").is_checked()
    assert page.locator('[data-role="selected-count"]').inner_text() == "1 selected"
    page.keyboard.press("x")
    assert not page.get_by_label("Select Task example: Key 02").is_checked()

    # Typing in the search is text, not shortcuts.
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.dataset.role") == "search"
    page.keyboard.type("jkxa")
    assert page.locator('[data-role="search"]').input_value() == "jkxa"
    assert not page.locator('[data-role="confirm-dialog"]').is_visible()
    page.locator('[data-role="search"]').fill("")

    page.locator('[data-role="promotion-row"]').nth(1).focus()
    page.keyboard.press("a")
    dialog = page.locator('[data-role="confirm-dialog"]')
    dialog.wait_for()
    assert dialog.locator('[data-role="confirm-title"]').inner_text() == "Approve this candidate?"
    assert "“Task example: Key 02”" in dialog.inner_text()
    page.keyboard.type("reads well")  # into the notes, which have the focus
    page.screenshot(path=SHOTS.format("keyboard-confirm"), full_page=True)
    page.keyboard.press("Escape")  # a second thought: nothing happens
    assert not dialog.is_visible()
    assert LearningPromotion.objects.filter(status="approved").count() == 0
    assert page.evaluate(focused) == "Task example: Key 02"  # the focus is back on the row

    page.keyboard.press("a")
    dialog.wait_for()
    dialog.locator('[data-role="confirm-notes"]').fill("reads well")
    dialog.locator('[data-role="confirm-submit"]').click()
    page.get_by_text("1 promotion approved: “Task example: Key 02”.").wait_for()
    approved = LearningPromotion.objects.get(status="approved")
    assert (approved.proposed_learning["title"], approved.review_notes) == ("Key 02", "reads well")

    page.keyboard.press("?")
    page.locator('[data-role="shortcuts"]').wait_for()
    assert "Approve the focused candidate" in page.locator('[data-role="shortcuts"]').inner_text()
    page.screenshot(path=SHOTS.format("shortcuts"), full_page=True)
    page.keyboard.press("Escape")

    page.keyboard.press("j")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/console/promotions/{LearningPromotion.objects.get(proposed_learning__title='Key 03').pk}/")
