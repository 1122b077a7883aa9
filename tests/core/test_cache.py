"""The Redis cache backend's breaker: a server that hangs or refuses is asked once, then left alone
for ``breaker_seconds`` (every operation fails at once and its caller degrades), then asked again."""

from __future__ import annotations

import socket
import time

import pytest
import redis
from django.core.cache import caches

from tests.conftest import DOWN_REDIS

ME = "/api/v1/me"


@pytest.fixture
def hung_redis():
    """A server that accepts connections (the kernel's backlog does) and never answers, as a
    stopped Redis or a partitioned network does."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    yield f"redis://127.0.0.1:{server.getsockname()[1]}/0"
    server.close()


@pytest.fixture
def connects(monkeypatch):
    """Counts the sockets redis-py opens."""
    opened = []
    real = redis.connection.Connection._connect

    def counting(self):
        opened.append((self.host, self.port))
        return real(self)

    monkeypatch.setattr(redis.connection.Connection, "_connect", counting)
    return opened


def _use(settings, url: str, breaker_seconds: float):
    settings.CACHES = {
        "default": {
            "BACKEND": "core.cache.RedisCache",
            "LOCATION": url,
            "OPTIONS": {"socket_connect_timeout": 0.2, "socket_timeout": 0.2, "breaker_seconds": breaker_seconds},
        }
    }
    return caches["default"]


@pytest.mark.parametrize("down", ["hung", "refusing"])
def test_a_failed_server_is_not_asked_again_until_the_breaker_closes(settings, hung_redis, connects, down):
    url = hung_redis if down == "hung" else DOWN_REDIS
    cache = _use(settings, url, breaker_seconds=0.3)
    with pytest.raises((redis.TimeoutError, redis.ConnectionError)):
        cache.get("k")
    assert len(connects) == 1
    for call in (lambda: cache.get("k"), lambda: cache.set("k", 1), lambda: cache.add("k", 1)):
        with pytest.raises(redis.ConnectionError, match="marked down"):
            call()
    pipe = cache._cache.get_client(write=True).pipeline(transaction=False)  # as the throttles count
    pipe.incr("throttle")
    with pytest.raises(redis.ConnectionError, match="marked down"):
        pipe.execute()
    assert len(connects) == 1  # nothing went to the server
    time.sleep(0.4)  # the breaker closes: the server is asked again
    with pytest.raises((redis.TimeoutError, redis.ConnectionError)) as again:
        cache.get("k")
    assert "marked down" not in str(again.value)
    assert len(connects) == 2


def test_api_requests_during_a_hung_cache_ask_it_once(world, settings, hung_redis, connects):
    _use(settings, hung_redis, breaker_seconds=60)
    client = world.client("service", on_behalf_of="ext-owner")
    # The key lookup reads the database, the throttle lets the request through, each at once.
    assert [client.get(ME).status_code for _ in range(3)] == [200, 200, 200]
    assert len(connects) == 1
