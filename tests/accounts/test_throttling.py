"""Rate limits: per API key, per user, per anonymous address and per address for failed
authentications; 429 in the error envelope with Retry-After; fixed windows; fail open."""

from __future__ import annotations

import json

import pytest
from django.core import checks
from django.core.cache import cache
from rest_framework.test import APIClient

from accounts import throttling
from accounts.services import api_key_create
from tests.conftest import bearer_client

ME = "/api/v1/me"
SCHEMA = "/api/schema/?format=json"
WINDOW = 60


def assert_throttled(response) -> None:
    assert response.status_code == 429
    body = json.loads(response.content)  # the schema's error responses are JSON under its own media type
    assert body["error"]["code"] == "throttled"
    assert body["error"]["message"]
    retry_after = int(response["Retry-After"])
    assert 1 <= retry_after <= WINDOW


@pytest.fixture
def frozen_clock(monkeypatch):
    """The throttles' clock, set by the test: the start of a window, then wherever it moves it."""
    now = {"t": 1_000_000 * WINDOW + 0.5}
    monkeypatch.setattr(throttling.time, "time", lambda: now["t"])
    return now


def test_a_service_key_over_its_budget_gets_429_with_retry_after(world, settings, frozen_clock):
    settings.THROTTLE_SERVICE_KEY_REQUESTS = 3
    client = world.client("service")
    assert [client.get(ME).status_code for _ in range(3)] == [200, 200, 200]
    assert_throttled(client.get(ME))
    assert int(client.get(ME)["Retry-After"]) == WINDOW  # half a second into the window: 59.5 s, rounded up


def test_the_budget_comes_back_with_the_next_window(world, settings, frozen_clock):
    settings.THROTTLE_SERVICE_KEY_REQUESTS = 2
    client = world.client("service")
    client.get(ME), client.get(ME)
    assert client.get(ME).status_code == 429
    frozen_clock["t"] += WINDOW
    assert client.get(ME).status_code == 200


def test_user_keys_have_their_own_budget_per_key(world, settings, frozen_clock):
    settings.THROTTLE_USER_KEY_REQUESTS = 2
    owner = world.client("owner")
    assert [owner.get(ME).status_code for _ in range(3)] == [200, 200, 429]
    assert world.client("member").get(ME).status_code == 200  # another key, another budget
    assert world.client("service").get(ME).status_code == 200  # service keys have their own


def test_a_user_is_limited_across_keys_and_sessions(world, settings, frozen_clock):
    settings.THROTTLE_USER_REQUESTS = 3
    _, second_raw = api_key_create(owner=world.owner, name="second")
    first, second, session = world.client("owner"), bearer_client(second_raw), world.session_client("owner")
    assert first.get(ME).status_code == 200
    assert second.get(ME).status_code == 200
    assert session.get(ME).status_code == 200
    assert_throttled(first.get(ME))
    assert_throttled(session.get(ME))
    assert world.client("member").get(ME).status_code == 200


def test_a_service_acting_for_a_user_spends_that_users_budget(world, settings, frozen_clock):
    settings.THROTTLE_USER_REQUESTS = 2
    for_owner = world.client("service", on_behalf_of="ext-owner")
    assert [for_owner.get(ME).status_code for _ in range(3)] == [200, 200, 429]
    assert world.client("service", on_behalf_of="ext-member").get(ME).status_code == 200
    assert world.client("service").get(ME).status_code == 200  # acting as itself: no user budget
    assert world.client("owner").get(ME).status_code == 429  # the owner's own key shares it


def test_anonymous_callers_are_limited_per_address(db, settings, frozen_clock):
    settings.THROTTLE_ANON_REQUESTS = 2
    client = APIClient(REMOTE_ADDR="203.0.113.7")
    assert [client.get(SCHEMA).status_code for _ in range(2)] == [200, 200]
    assert_throttled(client.get(SCHEMA))
    # A forged X-Forwarded-For does not buy a new budget when no proxy is trusted.
    assert client.get(SCHEMA, HTTP_X_FORWARDED_FOR="198.51.100.1").status_code == 429
    assert APIClient(REMOTE_ADDR="203.0.113.8").get(SCHEMA).status_code == 200


def test_behind_a_trusted_proxy_the_forwarded_address_counts(db, settings, frozen_clock):
    settings.THROTTLE_ANON_REQUESTS = 1
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    proxy = APIClient(REMOTE_ADDR="10.0.0.1")
    assert proxy.get(SCHEMA, HTTP_X_FORWARDED_FOR="forged, 198.51.100.1").status_code == 200
    assert proxy.get(SCHEMA, HTTP_X_FORWARDED_FOR="198.51.100.1").status_code == 429
    assert proxy.get(SCHEMA, HTTP_X_FORWARDED_FOR="198.51.100.2").status_code == 200


def test_guessing_keys_gets_429_after_the_failure_budget(world, settings, frozen_clock):
    settings.THROTTLE_AUTH_FAILURES = 5
    guesses = [
        APIClient(REMOTE_ADDR="203.0.113.9").get(ME, HTTP_AUTHORIZATION=f"Bearer llk_guess_{i}") for i in range(7)
    ]
    assert [r.status_code for r in guesses] == [401] * 5 + [429] * 2
    assert_throttled(guesses[-1])
    # Malformed headers count as failures too.
    assert APIClient(REMOTE_ADDR="203.0.113.9").get(ME, HTTP_AUTHORIZATION="Bearer a b").status_code == 429
    # A valid key from the same address still works; another address still gets its 401.
    assert bearer_client(world.keys["owner"]).get(ME, REMOTE_ADDR="203.0.113.9").status_code == 200
    assert APIClient(REMOTE_ADDR="203.0.113.10").get(ME, HTTP_AUTHORIZATION="Bearer llk_x").status_code == 401


def test_a_revoked_key_counts_as_a_failed_authentication(world, settings, frozen_clock):
    settings.THROTTLE_AUTH_FAILURES = 1
    world.service_key.revoked_at = "2026-01-01T00:00:00Z"
    world.service_key.save(update_fields=["revoked_at"])
    client = world.client("service")
    assert client.get(ME).status_code == 401
    assert client.get(ME).status_code == 429


def test_a_budget_of_zero_switches_that_limit_off(world, settings, frozen_clock):
    settings.THROTTLE_USER_KEY_REQUESTS = 0
    settings.THROTTLE_USER_REQUESTS = 0
    client = world.client("owner")
    assert {client.get(ME).status_code for _ in range(5)} == {200}


def test_counters_live_in_the_cache(world, settings, frozen_clock):
    settings.THROTTLE_SERVICE_KEY_REQUESTS = 100
    world.client("service").get(ME)
    world.client("service").get(ME)
    index = int(frozen_clock["t"] // WINDOW)
    assert cache.get(f"throttle:api_key:{world.service_key.pk}:{index}") == 2


def test_throttles_let_requests_through_when_the_cache_is_down(world, settings, monkeypatch):
    settings.THROTTLE_SERVICE_KEY_REQUESTS = 1

    def down(*args, **kwargs):
        raise ConnectionError("cache down")

    monkeypatch.setattr(throttling, "_count_hits", down)
    client = world.client("service")
    assert {client.get(ME).status_code for _ in range(3)} == {200}


@pytest.mark.parametrize(
    ("name", "value"),
    [("THROTTLE_ANON_REQUESTS", -1), ("THROTTLE_WINDOW_SECONDS", 0), ("THROTTLE_USER_REQUESTS", "many")],
)
def test_bad_budgets_are_refused_at_start(settings, name, value):
    setattr(settings, name, value)
    errors = [e for e in checks.run_checks() if e.id == "core.E001"]
    assert any(name in e.msg for e in errors)
