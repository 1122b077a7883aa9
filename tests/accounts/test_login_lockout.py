"""Password sign-in locks out after repeated failures (django-axes): the demo login page, the
admin's login and the browsable API's login, per username and address."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.test import Client

from tests.factories import UserFactory

PASSWORD = "correct horse battery staple"
LOGIN_PAGES = ["/login/", "/admin/login/", "/api-auth/login/"]


@pytest.fixture
def staff(db):
    user = UserFactory(username="alice", is_staff=True, is_superuser=True)
    user.set_password(PASSWORD)
    user.save()
    return user


def attempt(client: Client, path: str, password: str, username: str = "alice"):
    return client.post(path, {"username": username, "password": password, "next": "/"})


@pytest.mark.parametrize("path", LOGIN_PAGES)
def test_a_hundred_wrong_passwords_lock_the_account_from_that_address(staff, settings, path):
    client = Client(REMOTE_ADDR="203.0.113.5")
    statuses = [attempt(client, path, f"guess-{i}").status_code for i in range(100)]
    limit = settings.AXES_FAILURE_LIMIT
    assert statuses[: limit - 1] == [200] * (limit - 1)  # the form again, with its error
    assert set(statuses[limit:]) == {429}
    locked = attempt(client, path, PASSWORD)  # even the right password, until the cool-off ends
    assert locked.status_code == 429
    assert b"Too many failed sign-ins" in locked.content
    assert "_auth_user_id" not in client.session


def test_the_lock_is_per_username_and_address(staff, settings):
    UserFactory(username="bob").set_password(PASSWORD)
    locked_out = Client(REMOTE_ADDR="203.0.113.5")
    for i in range(settings.AXES_FAILURE_LIMIT):
        attempt(locked_out, "/login/", f"guess-{i}")
    assert attempt(locked_out, "/login/", PASSWORD).status_code == 429
    # The same user from another address, and another user from this one, are not locked.
    assert attempt(Client(REMOTE_ADDR="198.51.100.4"), "/login/", PASSWORD).status_code == 302
    assert attempt(locked_out, "/login/", "nope", username="bob").status_code == 200


def test_a_success_before_the_limit_resets_the_count(staff, settings):
    client = Client(REMOTE_ADDR="203.0.113.5")
    for i in range(settings.AXES_FAILURE_LIMIT - 1):
        attempt(client, "/login/", f"guess-{i}")
    assert attempt(client, "/login/", PASSWORD).status_code == 302
    fresh = Client(REMOTE_ADDR="203.0.113.5")
    for i in range(settings.AXES_FAILURE_LIMIT - 1):
        assert attempt(fresh, "/login/", f"again-{i}").status_code == 200
    assert attempt(fresh, "/login/", PASSWORD).status_code == 302


def test_a_forged_forwarded_address_does_not_escape_the_lock(staff, settings):
    client = Client(REMOTE_ADDR="203.0.113.5")
    for i in range(settings.AXES_FAILURE_LIMIT):
        client.post("/login/", {"username": "alice", "password": f"g{i}"}, HTTP_X_FORWARDED_FOR=f"10.9.9.{i}")
    assert attempt(client, "/login/", PASSWORD).status_code == 429


def test_an_admin_lifts_a_lock(staff, settings):
    client = Client(REMOTE_ADDR="203.0.113.5")
    for i in range(settings.AXES_FAILURE_LIMIT):
        attempt(client, "/admin/login/", f"guess-{i}")
    assert attempt(client, "/admin/login/", PASSWORD).status_code == 429
    call_command("axes_reset_username", "alice", verbosity=0)
    assert attempt(client, "/admin/login/", PASSWORD).status_code == 302


@pytest.mark.parametrize("body", [{}, {"username": "alice"}, {"password": "x"}, {"username": "", "password": ""}])
def test_incomplete_login_forms_are_refused_without_error(staff, body):
    client = Client(REMOTE_ADDR="203.0.113.5")
    assert client.post("/login/", body).status_code == 200
    assert "_auth_user_id" not in client.session
