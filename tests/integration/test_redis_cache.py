"""The shared cache on a real Redis: throttle counters in one round trip, key lookups and their
revocation, and the backend that reuses its Redis clients."""

from __future__ import annotations

import uuid

import pytest
from django.core.cache import caches

from accounts.services import api_key_create, api_key_revoke
from tests.conftest import bearer_client

pytestmark = [pytest.mark.services]

ME = "/api/v1/me"


@pytest.fixture
def redis_cache(broker_url, settings):
    settings.CACHES = {
        "default": {"BACKEND": "core.cache.RedisCache", "LOCATION": broker_url, "KEY_PREFIX": uuid.uuid4().hex}
    }
    yield caches["default"]
    caches["default"].clear()


def test_the_backend_reuses_its_redis_client(redis_cache):
    client = redis_cache._cache.get_client(write=True)
    assert redis_cache._cache.get_client(write=True) is client
    redis_cache.set("k", {"a": 1}, 30)
    assert redis_cache.get("k") == {"a": 1}
    assert redis_cache.add("k", 2, 30) is False
    assert redis_cache.add("n", 1, 30) is True
    assert redis_cache.incr("n") == 2


def test_throttles_count_in_redis_with_expiring_counters(world, settings, redis_cache):
    settings.THROTTLE_SERVICE_KEY_REQUESTS = 3
    settings.THROTTLE_USER_REQUESTS = 1000
    client = world.client("service", on_behalf_of="ext-owner")
    statuses = [client.get(ME).status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    assert 1 <= int(client.get(ME)["Retry-After"]) <= 60
    redis = redis_cache._cache.get_client(write=True)
    keys = redis.keys(f"*throttle:*:{world.service_key.pk}:*")
    assert len(keys) == 1
    assert int(redis.get(keys[0])) == 5
    assert 0 < redis.ttl(keys[0]) <= 61
    assert len(redis.keys(f"*throttle:user:{world.owner.pk}:*")) == 1  # the user's budget, same round trip


def test_a_revocation_holds_at_once_through_redis(world, redis_cache):
    key, raw = api_key_create(owner=world.owner, name="laptop")
    client = bearer_client(raw)
    assert client.get(ME).status_code == 200
    assert redis_cache.get(f"apikey:{key.hashed_key}") is not None  # what every worker reads
    api_key_revoke(api_key=key)
    assert client.get(ME).status_code == 401
