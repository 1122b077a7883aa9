"""Shared fixtures: the roles of the access rules, each with an authenticated client, and the
embedding model loaded once."""

from __future__ import annotations

import os
from dataclasses import dataclass

import pytest
from django.core.cache import cache
from django.db.backends.signals import connection_created
from django.test import Client
from rest_framework.test import APIClient

from accounts import authentication
from accounts.actors import Actor
from accounts.models import ApiKey, Project, User
from accounts.selectors import auth_cache_clear
from accounts.services import api_key_create
from core.embeddings import LocalEmbedder, OpenAIEmbedder, get_embedder
from learning.services.messages import analysis_publish_breaker_reset
from tests.factories import MembershipFactory, ProjectFactory, UserFactory


def _allow_the_test_runners_flush(sender, connection, **kwargs) -> None:
    """On PostgreSQL the events table refuses TRUNCATE unless its owner asks for it explicitly
    (feedback migration 0003): the test runner, connected as the owner, resets tables so."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET ai_feedback_events.allow_truncate = 'on'")


connection_created.connect(_allow_the_test_runners_flush, dispatch_uid="tests_allow_flush")


def pytest_collection_modifyitems(config, items) -> None:
    """``TEST_SKIP_ONE_BACKEND=1``: leave out the slow tests that give the same answer on every database
    (marked ``one_backend``); scripts/test sets it for its PostgreSQL run, the SQLite run beside it runs them."""
    if os.environ.get("TEST_SKIP_ONE_BACKEND") != "1":
        return
    skipped = [item for item in items if item.get_closest_marker("one_backend")]
    if skipped:
        config.hook.pytest_deselected(items=skipped)
        items[:] = [item for item in items if not item.get_closest_marker("one_backend")]


def bearer_client(raw_key: str, *, on_behalf_of: str | None = None) -> APIClient:
    """An API client sending ``Authorization: Bearer <raw_key>`` (and ``X-On-Behalf-Of``, if given)."""
    client = APIClient()
    headers = {"HTTP_AUTHORIZATION": f"Bearer {raw_key}"}
    if on_behalf_of is not None:
        headers["HTTP_X_ON_BEHALF_OF"] = on_behalf_of
    client.credentials(**headers)
    return client


@dataclass
class World:
    """One project with an owner and a member, an outsider, a staff admin and a service key."""

    project: Project
    owner: User  # the user whose data a test is about; a member of the project
    member: User  # another member of the same project
    other: User  # a user outside the project
    admin: User
    service_key: ApiKey
    service_raw: str
    keys: dict[str, str]

    def client(self, role: str, *, on_behalf_of: str | None = None) -> APIClient:
        """An API client authenticated as ``anonymous``, ``owner``, ``member``, ``other``, ``admin`` or ``service``."""
        if role == "anonymous":
            return APIClient()
        return bearer_client(self.service_raw if role == "service" else self.keys[role], on_behalf_of=on_behalf_of)

    def session_client(self, role: str) -> Client:
        """A browser-like client signed in as the role's user (the console and the admin pages)."""
        client = Client()
        client.force_login(getattr(self, role))
        return client

    def actor(self, role: str) -> Actor:
        if role == "service":
            return Actor(user=None, api_key=self.service_key)
        return Actor(user=getattr(self, role))


@pytest.fixture
def world(db) -> World:
    project = ProjectFactory(slug="apollo")
    owner = UserFactory(username="owner", external_id="ext-owner")
    member = UserFactory(username="member", external_id="ext-member")
    other = UserFactory(username="other", external_id="ext-other")
    admin = UserFactory(username="admin", is_staff=True, is_superuser=True)
    MembershipFactory(project=project, user=owner)
    MembershipFactory(project=project, user=member)
    keys = {}
    for user in (owner, member, other, admin):
        _, raw = api_key_create(owner=user, name="test")
        keys[user.username] = raw
    service_key, service_raw = api_key_create(owner=admin, name="backend", kind=ApiKey.Kind.SERVICE)
    return World(project, owner, member, other, admin, service_key, service_raw, keys)


@pytest.fixture(scope="session")
def embedder() -> LocalEmbedder | OpenAIEmbedder:
    """The embedding model, loaded once per session before any test's clock starts."""
    return get_embedder()


@pytest.fixture(autouse=True)
def _fresh_process_state():
    """Per-process memos (key usage stamps, the auth cache) must not leak between tests."""
    authentication._last_reported.clear()
    auth_cache_clear()
    cache.clear()
    analysis_publish_breaker_reset()
    yield
    authentication._last_reported.clear()
    auth_cache_clear()


# Nothing listens on port 1: the real Redis cache backend fails at once with redis's ConnectionError.
DOWN_REDIS = "redis://127.0.0.1:1/0"


@pytest.fixture
def broken_cache(settings):
    """The production cache backend (Redis) with its server down: every cache call raises."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": DOWN_REDIS,
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
        }
    }
    return DOWN_REDIS
