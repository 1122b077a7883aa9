"""Taste patterns in the preferences modal and page: listed with their figures, "Stop applying"
rejects one through the API, and learned text is shown as text, never markup."""

from __future__ import annotations

import re

import pytest

from accounts.actors import Actor
from learning.models import TastePattern
from learning.services import preferences, taste
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

DRAFT = (
    "Dear Ms Jones,\n\nThank you for your message of last week about the quarterly review. "
    + "I wanted to follow up with a detailed summary of everything we discussed in the meeting. " * 12
    + "\n\nKind regards,\nSam"
)
SHORT = "Dear Ms Jones,\n\nThanks for your message. Summary attached; happy to discuss on Friday.\n\nKind regards,\nSam"


def shorten_three_times(user, plugin="email", command="draft") -> TastePattern:
    """The services the API calls: three runs whose output the user shortened make a candidate."""
    actor = Actor(user=user)
    for i in range(3):
        run = taste.command_run_record(actor=actor, user=user, plugin=plugin, command=command, output=DRAFT)
        taste.command_decision_record(
            actor=actor, user=user, run_id=run.run_id, decision="edited", edited_output=f"{SHORT} ({i})"
        )
    return TastePattern.objects.get(user=user, plugin=plugin, command=command)


@pytest.fixture
def user():
    return UserFactory(username="pat")


def test_modal_lists_a_pattern_and_stops_applying_it(logged_in_page, user):
    preferences.preference_add_manual(user=user, category="tone", description="Write formally")
    pattern = shorten_three_times(user)
    assert pattern.status == "candidate"
    page = logged_in_page(user, "/chat/")
    page.get_by_role("button", name="Preferences").click()
    modal = page.locator("#preferences-modal")
    modal.get_by_text(pattern.instruction).wait_for()
    row = modal.locator(f'li[data-kind="taste"][data-id="{pattern.pk}"]')
    assert row.locator(".tag").inner_text() == "candidate"
    detail = row.locator(".muted").inner_text()
    assert "email / draft" in detail
    assert "confidence 0%" in detail
    assert "3 observations · 0 confirmations · 0 rejections" in detail

    # An unsaved change elsewhere in the panel survives stopping a pattern (which applies at once).
    modal.get_by_role("checkbox", name="Apply Write formally").uncheck()
    modal.get_by_role("button", name=f"Stop applying {pattern.instruction}").click()
    modal.locator(f'li[data-kind="taste"][data-id="{pattern.pk}"][data-status="rejected"]').wait_for()
    assert row.locator(".tag").inner_text() == "rejected"
    assert "stopped by you" in row.locator(".muted").inner_text()
    assert row.get_by_role("button").count() == 0
    assert modal.get_by_text("1 unsaved change · stopped applying it").is_visible()
    assert not modal.get_by_role("checkbox", name="Apply Write formally").is_checked()

    # Through the API, as the assistant's backend sees it: rejected, and no longer injected.
    listed = page.request.get("/api/v1/taste-patterns").json()["taste_patterns"]
    assert [(p["id"], p["status"], p["rejected_reason"]) for p in listed] == [
        (pattern.pk, "rejected", "stopped_by_user")
    ]
    context = page.request.get("/api/v1/context?plugin=email&command=draft&surface=command").json()
    assert context["taste_patterns"] == []
    assert pattern.instruction not in context["text"]


def test_page_renders_learned_text_as_text(logged_in_page, user):
    # A plugin name is the caller's text and ends up in the instruction: it must not become markup.
    plugin = '<img src=x onerror="window.pwned=1">'
    pattern = shorten_three_times(user, plugin=plugin)
    assert plugin in pattern.instruction
    stopped = shorten_three_times(user, command="reply")
    taste.taste_pattern_stop(user=user, pattern_id=stopped.pk)

    page = logged_in_page(user, "/preferences/")
    page.get_by_text(pattern.instruction).wait_for()
    assert page.locator(".prefs-panel img").count() == 0
    assert page.evaluate("window.pwned") is None
    # Only the patterns still applied offer "Stop applying".
    buttons = page.get_by_role("button", name=re.compile("^Stop applying"))
    assert buttons.count() == 1
    stopped_row = page.locator(f'li[data-kind="taste"][data-id="{stopped.pk}"]')
    assert stopped_row.get_attribute("data-status") == "rejected"
    assert stopped_row.get_by_role("button").count() == 0

    buttons.click()
    page.locator(f'li[data-kind="taste"][data-id="{pattern.pk}"][data-status="rejected"]').wait_for()
    assert TastePattern.objects.get(pk=pattern.pk).status == "rejected"


def test_empty_state(logged_in_page, user):
    page = logged_in_page(user, "/preferences/")
    page.get_by_text("Nothing learned from your edits yet.").wait_for()
