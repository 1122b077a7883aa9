"""The preferences modal in a real browser: every change applies at once and its undo toast puts the
previous state back through the API; memories are edited and deleted (and undone); typing that was
not saved is guarded when the dialog closes; errors show next to their item; states read truthfully.
"Noted:" under a chat message, and the change seen through the API."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from core.embeddings import get_embedder
from learning.analyzer.base import Analysis, PreferenceFinding
from learning.models import LearnedWorkflow, Memory, Preference
from learning.services import messages, preferences
from tests.factories import MemoryFactory, PreferenceFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def user():
    user = UserFactory(username="pat")
    preferences.preference_add_manual(user=user, category="length", description="Keep responses short")
    preferences.preference_add_manual(user=user, category="format", description="Use bullet points")
    LearnedWorkflow.objects.create(
        user=user,
        workflow_name="Weekly sales summary",
        trigger_pattern="Summarize sales",
        times_detected=4,
        confidence=0.7,
    )
    return user


@pytest.fixture
def open_modal(logged_in_page):
    """The chat page with the preferences modal open and its lists loaded; page errors collected."""

    def run(user):
        page = logged_in_page(user, "/chat/")
        page.errors = []
        page.on("pageerror", lambda error: page.errors.append(error))
        page.get_by_role("button", name="Preferences").click()
        # Opening reads the lists again: wait until that read is rendered (the panel is busy meanwhile).
        # A load state would not do: "networkidle" was reached once on mount, so waiting for it returns at
        # once, and a row changed right after could be read by the opening's request or not.
        modal = page.locator("#preferences-modal")
        modal.locator('[aria-busy="true"]').wait_for(state="detached")
        return page, modal

    return run


def toast(modal):
    return modal.locator('[data-role="toast"]')


def context_preferences(page) -> list[str]:
    return [p["description"] for p in page.request.get("/api/v1/context").json()["preferences"]]


def test_a_switch_applies_at_once_and_undo_switches_it_back(open_modal, user):
    page, modal = open_modal(user)
    row = Preference.objects.get(user=user, description="Keep responses short")
    assert modal.get_by_role("button", name="Save Changes").count() == 0  # nothing is batched any more

    modal.get_by_role("checkbox", name="Apply Keep responses short").uncheck()

    toast(modal).get_by_text("switched off").wait_for()
    assert Preference.objects.get(pk=row.pk).active is False
    assert context_preferences(page) == ["Use bullet points"]
    item = modal.locator(f'li[data-kind="preference"][data-id="{row.pk}"]')
    assert item.locator('[data-role="state"]').inner_text() == "Off"
    assert "Switched off by you." in item.inner_text()
    toast(modal).get_by_role("button", name="Undo").click()
    toast(modal).get_by_text("switched on again").wait_for()
    restored = Preference.objects.get(pk=row.pk)
    assert (restored.active, restored.inactive_reason, restored.last_reinforced_at) == (
        True,
        "",
        row.last_reinforced_at,
    )
    assert modal.get_by_role("checkbox", name="Apply Keep responses short").is_checked()
    assert sorted(context_preferences(page)) == ["Keep responses short", "Use bullet points"]
    assert page.errors == []


def test_a_deleted_preference_comes_back_with_undo_from_the_keyboard(open_modal, user):
    page, modal = open_modal(user)
    row = Preference.objects.get(user=user, description="Use bullet points")
    Preference.objects.filter(pk=row.pk).update(times_reinforced=3)

    modal.get_by_role("button", name="Delete Use bullet points").click()

    toast(modal).get_by_text("Preference deleted").wait_for()
    modal.screenshot(path="/tmp/prefs-modal-toast.png")
    assert not Preference.objects.filter(pk=row.pk).exists()
    assert modal.get_by_text("Use bullet points", exact=True).count() == 0
    # The deleted row's button is gone: focus is on Undo, so Enter undoes.
    assert page.evaluate("document.activeElement.dataset.role") == "undo"
    assert toast(modal).get_attribute("aria-live") == "polite"
    page.keyboard.press("Enter")
    toast(modal).get_by_text("Preference restored").wait_for()
    restored = Preference.objects.get(pk=row.pk)  # the same row: its id, counts and dates
    assert (restored.times_reinforced, restored.created_at, restored.source) == (3, row.created_at, "manual")
    assert modal.locator(f'li[data-kind="preference"][data-id="{row.pk}"]').is_visible()
    assert page.evaluate("document.activeElement.getAttribute('aria-label')") == "Apply Use bullet points"
    assert page.errors == []


def test_ctrl_z_undoes_the_last_change(open_modal, user):
    page, modal = open_modal(user)
    workflow = LearnedWorkflow.objects.get(user=user)
    modal.get_by_role("checkbox", name="Apply Weekly sales summary").uncheck()
    toast(modal).get_by_text("Workflow").wait_for()
    assert LearnedWorkflow.objects.get(pk=workflow.pk).active is False
    page.keyboard.press("Control+z")
    toast(modal).get_by_text("Workflow switched on again").wait_for()
    assert LearnedWorkflow.objects.get(pk=workflow.pk).active is True


def test_adding_a_preference_applies_at_once_and_can_be_undone(open_modal, user):
    page, modal = open_modal(user)
    modal.get_by_role("button", name="+ Add custom preference").click()
    modal.get_by_label("Preference", exact=True).fill("Write formally")
    modal.get_by_label("Category").select_option("tone")
    modal.get_by_label("Preference", exact=True).press("Enter")

    toast(modal).get_by_text("Preference added").wait_for()
    added = Preference.objects.get(user=user, description="Write formally")
    assert (added.category, added.source, added.active) == ("tone", "manual", True)
    assert "Write formally" in context_preferences(page)
    item = modal.locator(f'li[data-kind="preference"][data-id="{added.pk}"]')
    assert "Tone · added by you" in item.inner_text()
    toast(modal).get_by_role("button", name="Undo").click()
    toast(modal).get_by_text("Preference removed again").wait_for()
    assert not Preference.objects.filter(pk=added.pk).exists()
    assert item.count() == 0


def test_memory_edit_and_delete_apply_at_once_and_undo(open_modal, user):
    cats = MemoryFactory(owner=user, content="I have two cats.")
    leeds = MemoryFactory(owner=user, content="I live in Leeds.")
    page, modal = open_modal(user)

    modal.get_by_role("button", name="Edit I have two cats.").click()
    modal.get_by_label("Memory text").fill("I have three cats.")
    modal.get_by_role("button", name="Save memory").click()
    toast(modal).get_by_text("Memory updated").wait_for()
    assert Memory.objects.get(pk=cats.pk).content == "I have three cats."
    assert modal.get_by_label("Memory text").count() == 0  # the editor closed
    toast(modal).get_by_role("button", name="Undo").click()
    toast(modal).get_by_text("Memory edit undone").wait_for()
    assert Memory.objects.get(pk=cats.pk).content == "I have two cats."
    modal.get_by_text("I have two cats.").wait_for()

    modal.get_by_role("button", name="Delete I live in Leeds.").click()
    toast(modal).get_by_text("Memory deleted").wait_for()
    assert not Memory.objects.filter(pk=leeds.pk).exists()
    assert [m["content"] for m in page.request.get("/api/v1/memories").json()["memories"]] == ["I have two cats."]
    toast(modal).get_by_role("button", name="Undo").click()
    toast(modal).get_by_text("Memory restored").wait_for()
    assert Memory.objects.get(pk=leeds.pk).content == "I live in Leeds."
    modal.get_by_text("I live in Leeds.").wait_for()
    assert page.errors == []


def test_closing_with_an_unsaved_edit_asks_first(open_modal, user):
    memory = MemoryFactory(owner=user, content="I have two cats.")
    page, modal = open_modal(user)
    guard = modal.locator('[data-role="discard-guard"]')
    modal.get_by_role("button", name="Edit I have two cats.").click()
    modal.get_by_label("Memory text").fill("I have three")

    page.keyboard.press("Escape")  # Escape goes through the guard
    guard.wait_for()
    assert modal.is_visible()
    assert "your edit of a memory" in guard.inner_text()
    page.screenshot(path="/tmp/prefs-modal-guard.png")
    guard.get_by_role("button", name="Keep editing").click()  # dismiss: the edit stays
    assert guard.is_hidden()
    assert modal.is_visible()
    assert modal.get_by_label("Memory text").input_value() == "I have three"
    assert page.evaluate("document.activeElement.getAttribute('aria-label')") == "Memory text"

    modal.get_by_role("button", name="Close").click()  # the × goes through the guard too
    guard.wait_for()
    page.keyboard.press("Escape")  # Escape on the question keeps editing
    assert guard.is_hidden()
    assert modal.is_visible()
    modal.get_by_role("button", name="Close").click()
    guard.get_by_role("button", name="Discard").click()  # confirm: discarded, closed
    modal.wait_for(state="hidden")
    assert Memory.objects.get(pk=memory.pk).content == "I have two cats."  # nothing was saved

    page.get_by_role("button", name="Preferences").click()
    modal.get_by_text("I have two cats.").wait_for()
    assert modal.get_by_label("Memory text").count() == 0
    page.keyboard.press("Escape")  # nothing unsaved: closes at once
    modal.wait_for(state="hidden")
    assert page.errors == []


def test_a_half_written_preference_is_guarded_too(open_modal, user):
    _, modal = open_modal(user)
    modal.get_by_role("button", name="+ Add custom preference").click()
    modal.get_by_label("Preference", exact=True).fill("Answer in")
    modal.get_by_role("button", name="Close").click()
    guard = modal.locator('[data-role="discard-guard"]')
    guard.get_by_text("the preference you are writing").wait_for()
    guard.get_by_role("button", name="Keep editing").click()
    assert modal.get_by_label("Preference", exact=True).input_value() == "Answer in"


def test_the_panel_is_busy_while_opening_reads_its_lists(logged_in_page, user):
    page = logged_in_page(user, "/chat/")
    panel = page.locator("#preferences-modal .prefs-panel")
    panel.get_by_text("Keep responses short").wait_for(state="attached")  # read on mount (the modal is closed)
    assert panel.get_attribute("aria-busy") is None
    held = []
    page.route("**/api/v1/preferences", lambda route: held.append(route))  # opening's read waits here
    page.get_by_role("button", name="Preferences").click()
    page.wait_for_function("document.querySelector('#preferences-modal .prefs-panel').ariaBusy === 'true'")
    Preference.objects.filter(user=user, description="Keep responses short").delete()
    for _ in range(500):  # the route handler runs while Playwright is waited on: wait for it, at most 10 s
        if held:
            break
        page.wait_for_timeout(20)
    assert held, "opening the modal did not read the preferences"
    held[0].continue_()
    page.locator('#preferences-modal .prefs-panel[aria-busy="true"]').wait_for(state="detached")
    assert panel.get_attribute("aria-busy") is None
    assert panel.get_by_text("Keep responses short").count() == 0  # what was read after the change is shown


def test_an_error_shows_next_to_the_item_which_keeps_its_state(open_modal, user):
    _, modal = open_modal(user)
    row = Preference.objects.get(user=user, description="Keep responses short")
    Preference.objects.filter(pk=row.pk).delete()  # gone behind the page's back: the API answers 404

    modal.get_by_role("checkbox", name="Apply Keep responses short").click()

    item = modal.locator(f'li[data-kind="preference"][data-id="{row.pk}"]')
    alert = item.locator('[role="alert"]')
    alert.wait_for()
    assert "No such preference" in alert.inner_text()
    assert modal.get_by_role("checkbox", name="Apply Keep responses short").is_checked()  # its previous state
    assert toast(modal).inner_text() == ""  # nothing to undo


def test_states_read_truthfully(open_modal, user):
    now = timezone.now()
    newer = PreferenceFactory(
        user=user,
        category="length",
        description="Give detailed answers.",
        axis="length:long",
        confidence=0.82,
        times_reinforced=3,
        last_reinforced_at=now,
    )
    Preference.objects.filter(user=user, description="Keep responses short").update(
        active=False, inactive_reason="contradicted", superseded_by=newer, superseded_at=now - timedelta(days=1)
    )
    PreferenceFactory(user=user, category="tone", description="Be playful.", candidate=True, confidence=0.35)
    PreferenceFactory(user=user, category="format", description="Use tables.", active=False, inactive_reason="decayed")
    page, modal = open_modal(user)

    def item(description):
        pk = Preference.objects.get(user=user, description=description).pk
        return modal.locator(f'li[data-kind="preference"][data-id="{pk}"]')

    assert item("Give detailed answers.").locator('[data-role="state"]').inner_text() == "Applied"
    detail = item("Give detailed answers.").inner_text()
    assert "Length · learned from your messages · confident (82%) · seen 3 times" in detail
    assert "Replaced \u201cKeep responses short\u201d" in detail  # the superseded history
    replaced = item("Keep responses short")
    assert replaced.locator('[data-role="state"]').inner_text() == "Replaced"
    assert "Replaced by \u201cGive detailed answers.\u201d" in replaced.inner_text()
    assert not replaced.get_by_role("checkbox").is_checked()
    assert item("Be playful.").locator('[data-role="state"]').inner_text() == "Tentative"
    assert "unsure (35%)" in item("Be playful.").inner_text()
    assert item("Use tables.").locator('[data-role="state"]').inner_text() == "Faded"
    assert re.search(r"Seen 4 times .* when you ask: \u201cSummarize sales\u201d", modal.inner_text())
    page.screenshot(path="/tmp/prefs-modal-states.png", full_page=True)
    modal.screenshot(path="/tmp/prefs-modal-modal.png")

    # Ticking the replaced one uses it instead: the newer one is replaced in turn (never both).
    replaced.get_by_role("checkbox").check()
    toast(modal).get_by_text("switched on").wait_for()
    newer.refresh_from_db()
    assert (newer.active, newer.inactive_reason) == (False, "contradicted")
    assert item("Give detailed answers.").locator('[data-role="state"]').inner_text() == "Replaced"
    toast(modal).get_by_role("button", name="Undo").click()
    toast(modal).get_by_text("switched off again").wait_for()
    newer.refresh_from_db()
    assert newer.active
    assert page.errors == []


def test_memories_on_the_full_page(logged_in_page, user):
    MemoryFactory(owner=user, content="I am vegetarian.")
    page = logged_in_page(user, "/preferences/")
    page.wait_for_load_state("networkidle")
    page.get_by_role("button", name="Delete I am vegetarian.").click()
    page.get_by_text("Nothing remembered yet.").wait_for()
    assert not Memory.objects.filter(owner=user).exists()
    page.get_by_role("button", name="Undo").click()
    page.get_by_text("I am vegetarian.", exact=True).wait_for()
    assert Memory.objects.filter(owner=user, content="I am vegetarian.").exists()


def test_the_full_page_asks_before_leaving_with_an_unsaved_edit(logged_in_page, user):
    MemoryFactory(owner=user, content="I am vegetarian.")
    page = logged_in_page(user, "/preferences/")
    page.wait_for_load_state("networkidle")
    page.get_by_role("button", name="Edit I am vegetarian.").click()
    page.get_by_label("Memory text").fill("I am vegan.")
    asked = []

    def answer(dialog):
        asked.append(dialog.type)
        dialog.dismiss()  # stay on the page

    page.on("dialog", answer)
    page.get_by_role("link", name="Back to the assistant").click()
    page.wait_for_timeout(500)
    assert asked == ["beforeunload"]
    assert "/preferences/" in page.url
    assert page.get_by_label("Memory text").input_value() == "I am vegan."


class SpanishAnalyzer:
    name = "fixed"

    def analyze(self, data):
        finding = PreferenceFinding("output", "", "Answer in Spanish.", 0.9)
        return Analysis(detected="preference", preference=finding, analyzer=self.name)

    def analyze_many(self, items):
        return [self.analyze(item) for item in items]


def test_chat_says_what_a_message_taught(logged_in_page, user, monkeypatch):
    get_embedder().embed(["warm up"])
    monkeypatch.setattr(messages, "get_analyzer", SpanishAnalyzer)  # the live server runs in this process
    page = logged_in_page(user, "/chat/")
    page.get_by_label("Message").fill("From now on answer me in Spanish.")
    page.get_by_role("button", name="Send").click()
    page.locator(".msg.user .noted").wait_for()
    assert page.locator(".msg.user .noted").inner_text() == "Noted: Answer in Spanish."


def test_chat_message_shows_the_injected_context(logged_in_page, user):
    # Without a broker the analysis runs in-process after the message commits, inside the request;
    # the first one loads the embedding model, which on a busy machine outlasts the browser's wait.
    get_embedder().embed(["warm up"])
    page = logged_in_page(user, "/chat/")
    page.get_by_label("Message").fill("How do I reverse a list in Python?")
    page.get_by_role("button", name="Send").click()
    page.locator(".msg.assistant pre").wait_for()
    assert "Keep responses short" in page.locator(".msg.assistant pre").inner_text()


def test_full_page_workflow_switch_applies_at_once(logged_in_page, user):
    page = logged_in_page(user, "/preferences/")
    page.get_by_role("checkbox", name="Apply Weekly sales summary").uncheck()
    page.get_by_text("Workflow \u201cWeekly sales summary\u201d switched off").wait_for()
    assert LearnedWorkflow.objects.get(user=user).active is False


def test_pages_need_a_login(live_server, browser):
    page = browser.new_page()
    page.goto(live_server.url + "/chat/")
    assert "/login/" in page.url
    assert page.get_by_role("button", name="Sign in").is_visible()
    page.close()
