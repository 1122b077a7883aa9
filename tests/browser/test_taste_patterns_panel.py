"""Taste patterns in the preferences modal and page: each state said truthfully from the pattern's
fields ("On trial", "Applied", "Stopped" and why), "Stop applying" and "Resume" applied at once
through the API with an undo toast, and learned text shown as text, never markup."""

from __future__ import annotations

import re

import pytest

from accounts.actors import Actor
from feedback.models import FeedbackEvent
from learning.models import TastePattern
from learning.services import taste
from tests.factories import TastePatternFactory, UserFactory

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


def row(panel, pattern):
    return panel.locator(f'li[data-kind="taste"][data-id="{pattern.pk}"]')


def command_context(page) -> list[int]:
    body = page.request.get("/api/v1/context?plugin=email&command=draft&surface=command").json()
    return [p["id"] for p in body["taste_patterns"]]


def test_a_pattern_on_trial_says_so_and_stopping_it_can_be_undone(logged_in_page, user):
    pattern = shorten_three_times(user)
    assert (pattern.status, pattern.confidence) == ("candidate", 0.0)
    page = logged_in_page(user, "/chat/")
    page.get_by_role("button", name="Preferences").click()
    modal = page.locator("#preferences-modal")
    modal.get_by_text(pattern.instruction).wait_for()
    item = row(modal, pattern)
    assert item.locator('[data-role="state"]').inner_text() == "On trial"
    text = item.inner_text()
    assert "Applied on trial to email draft runs, with a notice · not confirmed yet" in text
    assert "candidate" not in text  # never "candidate · 0%"
    assert "0%" not in text
    assert pattern.description in text  # the evidence, in words

    modal.get_by_role("button", name=f"Stop applying {pattern.instruction}").click()

    modal.locator(f'li[data-kind="taste"][data-id="{pattern.pk}"][data-status="rejected"]').wait_for()
    assert item.locator('[data-role="state"]').inner_text() == "Stopped"
    assert "Stopped by you · was applied to email draft runs" in item.inner_text()
    assert item.get_by_role("button", name=f"Resume {pattern.instruction}").is_visible()
    assert command_context(page) == []  # no longer applied, as the assistant's backend sees it

    modal.locator('[data-role="toast"]').get_by_role("button", name="Undo").click()
    modal.locator(f'li[data-kind="taste"][data-id="{pattern.pk}"][data-status="candidate"]').wait_for()
    assert TastePattern.objects.get(pk=pattern.pk).status == "candidate"
    assert command_context(page) == [pattern.pk]
    assert list(
        FeedbackEvent.objects.filter(subject_type="taste_pattern", subject_id=str(pattern.pk))
        .order_by("created_at")
        .values_list("event_type", "reason_category")
    ) == [("taste_pattern_stopped", "user_request"), ("taste_pattern_resumed", "undo")]


def test_a_stopped_pattern_is_resumed(logged_in_page, user):
    applied = TastePatternFactory(
        user=user,
        instruction="Use a formal tone in email drafts.",
        correction_type="tone",
        direction="formal",
        status="active",
        confirmations=2,
    )
    stopped = TastePatternFactory(
        user=user,
        instruction="Keep email drafts under 120 words.",
        status="rejected",
        rejected_reason="overridden",
        confirmations=1,
        rejections=3,
        consecutive_rejections=3,
    )
    page = logged_in_page(user, "/preferences/")
    page.get_by_text(stopped.instruction).wait_for()
    assert row(page, applied).locator('[data-role="state"]').inner_text() == "Applied"
    assert "Applied to email draft runs · confirmed twice" in row(page, applied).inner_text()
    assert "Stopped: you overrode it 3 times in a row" in row(page, stopped).inner_text()
    page.screenshot(path="/tmp/prefs-modal-taste.png", full_page=True)

    page.get_by_role("button", name=f"Resume {stopped.instruction}").click()

    page.locator(f'li[data-kind="taste"][data-id="{stopped.pk}"][data-status="candidate"]').wait_for()
    resumed = TastePattern.objects.get(pk=stopped.pk)
    assert (resumed.status, resumed.rejected_reason, resumed.consecutive_rejections) == ("candidate", "", 0)
    assert row(page, stopped).locator('[data-role="state"]').inner_text() == "On trial"
    assert "confirmed once · overridden 3 times" in row(page, stopped).inner_text()
    assert sorted(command_context(page)) == sorted([applied.pk, stopped.pk])
    assert FeedbackEvent.objects.filter(event_type="taste_pattern_resumed", subject_id=str(stopped.pk)).exists()
    page.get_by_text("Applying it again").wait_for()


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
    # The patterns applied offer "Stop applying", the stopped one "Resume".
    buttons = page.get_by_role("button", name=re.compile("^Stop applying"))
    assert buttons.count() == 1
    stopped_row = row(page, stopped)
    assert stopped_row.get_attribute("data-status") == "rejected"
    assert [b.inner_text() for b in stopped_row.get_by_role("button").all()] == ["Resume"]

    buttons.click()
    page.locator(f'li[data-kind="taste"][data-id="{pattern.pk}"][data-status="rejected"]').wait_for()
    assert TastePattern.objects.get(pk=pattern.pk).status == "rejected"
    assert page.locator(".prefs-panel img").count() == 0  # the toast quotes it as text too
    assert page.evaluate("window.pwned") is None


def test_empty_state(logged_in_page, user):
    page = logged_in_page(user, "/preferences/")
    page.get_by_text("Nothing learned from your edits yet.").wait_for()
