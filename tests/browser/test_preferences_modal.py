"""The preferences modal in a real browser: toggle, remove, add, memories edited and deleted, "Noted:"
under a chat message, and the change seen through the API."""

from __future__ import annotations

import pytest

from core.embeddings import get_embedder
from learning.analyzer.base import Analysis, PreferenceFinding
from learning.models import LearnedWorkflow, Memory, Preference
from learning.services import messages, preferences
from tests.factories import MemoryFactory, UserFactory

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


def test_modal_toggle_remove_add_and_save(logged_in_page, user):
    page = logged_in_page(user, "/chat/")
    page.get_by_role("button", name="Preferences").click()
    modal = page.locator("#preferences-modal")
    modal.get_by_text("Keep responses short").wait_for()
    assert modal.get_by_text("used 4x").is_visible()

    modal.get_by_role("checkbox", name="Apply Keep responses short").uncheck()
    modal.get_by_role("button", name="Remove Use bullet points").click()
    modal.get_by_role("button", name="+ Add custom preference").click()
    modal.get_by_label("Preference").fill("Write formally")
    modal.get_by_label("Category").select_option("tone")
    modal.get_by_role("button", name="Add", exact=True).click()
    assert modal.get_by_text("3 unsaved changes").is_visible()
    modal.get_by_role("button", name="Save Changes").click()
    modal.get_by_text("Saved").wait_for()

    rows = {p.description: p for p in Preference.objects.filter(user=user)}
    assert set(rows) == {"Keep responses short", "Write formally"}
    assert rows["Keep responses short"].active is False
    assert (rows["Write formally"].category, rows["Write formally"].source) == ("tone", "manual")
    # ... and through the API, as the assistant's backend sees it.
    context = page.request.get("/api/v1/context").json()
    assert [p["description"] for p in context["preferences"]] == ["Write formally"]


def test_memories_are_edited_and_deleted_in_the_modal(logged_in_page, user):
    cats = MemoryFactory(owner=user, content="I have two cats.")
    MemoryFactory(owner=user, content="I live in Leeds.")
    page = logged_in_page(user, "/chat/")
    page.get_by_role("button", name="Preferences").click()
    page.wait_for_load_state("networkidle")  # the lists loaded (on mount, and again on opening)
    modal = page.locator("#preferences-modal")
    modal.get_by_role("button", name="Edit I have two cats.").click()
    modal.get_by_label("Memory text").fill("I have three cats.")
    modal.get_by_role("button", name="Save memory").click()
    modal.get_by_text("I have three cats.").wait_for()
    modal.get_by_role("button", name="Delete I live in Leeds.").click()
    modal.get_by_text("I live in Leeds.").wait_for(state="detached")
    assert list(Memory.objects.filter(owner=user).values_list("pk", "content")) == [(cats.pk, "I have three cats.")]
    memories = page.request.get("/api/v1/memories").json()["memories"]
    assert [m["content"] for m in memories] == ["I have three cats."]


def test_memories_on_the_full_page(logged_in_page, user):
    MemoryFactory(owner=user, content="I am vegetarian.")
    page = logged_in_page(user, "/preferences/")
    page.wait_for_load_state("networkidle")
    page.get_by_role("button", name="Delete I am vegetarian.").click()
    page.get_by_text("Nothing remembered yet.").wait_for()
    assert not Memory.objects.filter(owner=user).exists()


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


def test_full_page_workflow_toggle(logged_in_page, user):
    page = logged_in_page(user, "/preferences/")
    page.get_by_role("checkbox", name="Apply Weekly sales summary").uncheck()
    page.get_by_role("button", name="Save Changes").click()
    page.get_by_text("Saved").wait_for()
    assert LearnedWorkflow.objects.get(user=user).active is False


def test_pages_need_a_login(live_server, browser):
    page = browser.new_page()
    page.goto(live_server.url + "/chat/")
    assert "/login/" in page.url
    assert page.get_by_role("button", name="Sign in").is_visible()
    page.close()
