"""One staff login for the console and the admin, through either login page; anyone else is
refused clearly, and anonymous visitors are sent to sign in."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from tests.factories import UserFactory

PASSWORD = "pw-for-tests"  # tests/factories.py
CONSOLE = "/console/promotions/"


@pytest.fixture
def staff(db):
    return UserFactory(username="reviewer", is_staff=True)


@pytest.mark.parametrize("login", ["/login/", "/admin/login/"])
def test_staff_sign_in_once_for_console_and_admin(staff, login):
    client = Client()
    response = client.post(f"{login}?next={CONSOLE}", {"username": "reviewer", "password": PASSWORD, "next": CONSOLE})
    assert response.status_code == 302
    assert response["Location"] == CONSOLE
    assert client.get(CONSOLE).status_code == 200
    assert client.get(reverse("admin:index")).status_code == 200  # the same session


def test_a_user_who_is_not_staff_is_refused_clearly_by_the_console(db):
    UserFactory(username="alice")
    client = Client()
    signed_in = client.post(f"/login/?next={CONSOLE}", {"username": "alice", "password": PASSWORD, "next": CONSOLE})
    assert signed_in["Location"] == CONSOLE  # signed in: the chat is theirs
    refused = client.get(CONSOLE, follow=True)
    assert refused.redirect_chain[-1][0].startswith(reverse("admin:login"))
    page = refused.content.decode()
    assert "You are authenticated as alice, but are not authorized to access this page" in page
    assert "Review console" not in page
    assert client.get(reverse("admin:index")).status_code == 302


def test_the_admin_login_refuses_a_user_who_is_not_staff(db):
    UserFactory(username="alice")
    client = Client()
    response = client.post(reverse("admin:login"), {"username": "alice", "password": PASSWORD, "next": CONSOLE})
    assert response.status_code == 200
    assert "Please enter the correct username and password for a staff account" in response.content.decode()
    assert "_auth_user_id" not in client.session


@pytest.mark.parametrize("page", [reverse("admin:index"), "/admin/feedback/feedbackevent/", CONSOLE])
def test_anonymous_visitors_are_sent_to_sign_in(db, page):
    response = Client().get(page)
    assert response.status_code == 302
    assert response["Location"].startswith(f"{reverse('admin:login')}?next=")
