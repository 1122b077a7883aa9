"""The chat page in Chromium: progress while a reply is pending, one message in flight at a time,
Enter sends (Shift+Enter is a new line), what a message taught shown with a way to the preferences
modal, errors in words, and signing out."""

from __future__ import annotations

import json

import pytest

from learning.models import ChatMessage, Preference
from learning.warmup import models_warm
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def warm_models():
    """The live server runs in this process: load the models once, as runserver_warm does."""
    models_warm()


@pytest.fixture
def user(warm_models):
    return UserFactory(username="pat")


def held(page, pattern="**/api/v1/messages"):
    """Hold every request to ``pattern`` until the test lets it through (``route.continue_()``)."""
    routes = []
    page.route(pattern, lambda route: routes.append(route))
    return routes


def test_a_pending_reply_shows_progress_and_send_stays_disabled_until_it_arrives(logged_in_page, user):
    page = logged_in_page(user, "/chat/")
    routes = held(page)
    page.get_by_label("Message").fill("How do I reverse a list in Python?")
    page.get_by_role("button", name="Send").click()
    thinking = page.locator('[data-role="thinking"]')
    thinking.wait_for()
    assert thinking.inner_text().startswith("Thinking")
    assert page.get_by_role("button", name="Send").is_disabled()
    assert page.get_by_label("Message").input_value() == ""
    # Another message while the first is in flight is not sent: neither by Enter nor by the button.
    page.get_by_label("Message").fill("And in JavaScript?")
    page.get_by_label("Message").press("Enter")
    page.get_by_role("button", name="Send").click(force=True)
    page.wait_for_timeout(300)
    assert len(routes) == 1
    routes[0].continue_()
    page.locator(".msg.assistant pre").wait_for()
    assert thinking.count() == 0
    assert page.get_by_role("button", name="Send").is_enabled()
    assert page.get_by_label("Message").input_value() == "And in JavaScript?"  # waiting to be sent
    assert list(ChatMessage.objects.filter(user=user, role="user").values_list("content", flat=True)) == [
        "How do I reverse a list in Python?"
    ]


def test_enter_sends_and_shift_enter_starts_a_new_line(logged_in_page, user):
    page = logged_in_page(user, "/chat/")
    box = page.get_by_label("Message")
    box.click()
    box.type("Two lines:")
    box.press("Shift+Enter")
    box.type("the second one")
    assert box.input_value() == "Two lines:\nthe second one"
    assert ChatMessage.objects.count() == 0
    box.press("Enter")
    page.locator(".msg.assistant pre").wait_for()
    assert list(ChatMessage.objects.filter(user=user).values_list("content", flat=True)) == [
        "Two lines:\nthe second one"
    ]


def test_a_message_that_teaches_a_preference_says_so_and_links_to_the_modal(logged_in_page, user):
    page = logged_in_page(user, "/chat/")
    page.get_by_label("Message").fill("From now on, always answer me in Spanish.")
    page.get_by_label("Message").press("Enter")
    notice = page.locator('.msg.user [data-role="learned"]')
    notice.wait_for()
    stored = Preference.objects.get(user=user)
    assert notice.locator(".noted").inner_text() == f"Noted: {stored.description}"
    assert "spanish" in stored.description.lower()
    notice.get_by_role("link", name="Manage what was learned").click()
    modal = page.locator("#preferences-modal")
    modal.get_by_text(stored.description).wait_for()
    assert modal.is_visible()


def test_a_message_that_teaches_nothing_has_no_notice(logged_in_page, user):
    page = logged_in_page(user, "/chat/")
    page.get_by_label("Message").fill("How do I reverse a list in Python?")
    page.get_by_label("Message").press("Enter")
    page.locator(".msg.assistant pre").wait_for()
    assert page.locator('[data-role="learned"]').count() == 0


def test_an_error_is_shown_in_words_and_the_text_is_given_back(logged_in_page, user):
    page = logged_in_page(user, "/chat/")
    body = {"error": {"code": "invalid", "message": "content is at most 32000 characters.", "fields": {}}}
    page.route(
        "**/api/v1/messages",
        lambda route: route.fulfill(status=400, content_type="application/json", body=json.dumps(body)),
    )
    page.get_by_label("Message").fill("Hello")
    page.get_by_role("button", name="Send").click()
    error = page.locator('[data-role="chat-error"]')
    error.wait_for()
    assert error.inner_text() == "Not sent: content is at most 32000 characters."
    assert page.get_by_label("Message").input_value() == "Hello"
    assert page.get_by_role("button", name="Send").is_enabled()


def test_a_lost_connection_is_explained(logged_in_page, user):
    page = logged_in_page(user, "/chat/")
    page.route("**/api/v1/messages", lambda route: route.abort("connectionrefused"))
    page.get_by_label("Message").fill("Hello")
    page.get_by_role("button", name="Send").click()
    page.locator('[data-role="chat-error"]').wait_for()
    assert "Could not reach the server" in page.locator('[data-role="chat-error"]').inner_text()


def test_sign_out_ends_the_session(logged_in_page, user, live_server):
    page = logged_in_page(user, "/chat/")
    page.locator('[data-role="sign-out"]').get_by_role("button", name="Sign out").click()
    page.wait_for_url(live_server.url + "/")
    assert page.get_by_role("link", name="Sign in").is_visible()
    page.goto(live_server.url + "/chat/")
    assert "/login/" in page.url
