"""Django's Redis cache backend, keeping one Redis client per connection pool, and failing fast
while its server is down.

Django's ``RedisCacheClient.get_client`` builds a new ``redis.Redis`` for every cache operation,
and each one fills a table of about 170 response callbacks: on the single-event ingest path
(an API-key lookup and two throttle counters per request) that was a third of a millisecond of
CPU per request. A ``redis.Redis`` is thread-safe over its pool, so one per pool is kept.
``config/settings`` swaps this backend in for Django's whenever the cache is Redis.

Every caller treats a cache error as a miss (an API-key lookup reads the database, a throttle lets
the request through, context is built uncached), but a Redis that hangs instead of refusing (a
stopped server, a network partition) makes each operation wait out ``socket_timeout``: an API
request makes four or five of them, which at 0.5 s each held a gunicorn thread for over two seconds
and queued the requests behind it (bench/outage.py --how pause: p50 2.7 s while the cache hung).
So a connection that fails or times out marks its server down in this process for the
``breaker_seconds`` option (CACHE_BREAKER_SECONDS, default 5): until then every operation on it
fails at once, without the network; then the next one tries the server again.
"""

from __future__ import annotations

import threading
import time
from typing import Any
from urllib.parse import urlsplit

import redis
from django.core.cache.backends import redis as django_redis

BREAKER_SECONDS = 5.0


class Breaker:
    """Which servers are marked down in this process, and until when (``time.monotonic``)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._down_until: dict[tuple[Any, ...], float] = {}
        self._lock = threading.Lock()

    def is_open(self, server: tuple[Any, ...]) -> bool:
        until = self._down_until.get(server)
        return until is not None and time.monotonic() < until

    def trip(self, server: tuple[Any, ...]) -> None:
        with self._lock:
            self._down_until[server] = time.monotonic() + self.seconds


_FAILURES = (redis.ConnectionError, redis.TimeoutError)


class _BreakerConnection:
    """Mixed into redis-py's connection class of the server's scheme: a failure (refused, reset,
    timed out) trips the breaker; while it is open, nothing is sent."""

    breaker: Breaker

    def _server(self) -> tuple[Any, ...]:
        return (getattr(self, "host", None), getattr(self, "port", None), getattr(self, "path", None))

    def _check(self) -> None:
        if self.breaker.is_open(self._server()):
            raise redis.ConnectionError(
                f"cache server {self._server()} marked down after a failure (for {self.breaker.seconds:g} s)"
            )

    def connect(self, *args: Any, **kwargs: Any) -> Any:
        self._check()
        try:
            return super().connect(*args, **kwargs)  # type: ignore[misc]
        except _FAILURES:
            self.breaker.trip(self._server())
            raise

    def send_packed_command(self, *args: Any, **kwargs: Any) -> Any:
        self._check()
        try:
            return super().send_packed_command(*args, **kwargs)  # type: ignore[misc]
        except _FAILURES:
            self.breaker.trip(self._server())
            raise

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().read_response(*args, **kwargs)  # type: ignore[misc]
        except _FAILURES:
            self.breaker.trip(self._server())
            raise


def _connection_class(url: str, breaker: Breaker) -> type:
    base = {
        "rediss": redis.SSLConnection,
        "unix": redis.UnixDomainSocketConnection,
    }.get(urlsplit(url).scheme, redis.Connection)
    return type(f"Breaker{base.__name__}", (_BreakerConnection, base), {"breaker": breaker})


class ReusedClientRedisCacheClient(django_redis.RedisCacheClient):
    def __init__(self, *args: Any, breaker_seconds: float = BREAKER_SECONDS, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}
        self.breaker = Breaker(breaker_seconds)

    def _get_connection_pool(self, write: bool) -> Any:
        base: Any = self  # Django's private helpers, which its type stubs don't declare
        return self._pool(base._get_connection_pool_index(write))

    def _pool(self, index: int) -> Any:
        base: Any = self
        if index not in base._pools:
            url = base._servers[index]
            options = {**base._pool_options, "connection_class": _connection_class(url, self.breaker)}
            base._pools[index] = base._pool_class.from_url(url, **options)
        return base._pools[index]

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        base: Any = self
        index = base._get_connection_pool_index(write)
        client = self._clients.get(index)
        if client is None:
            client = self._clients.setdefault(index, base._client(connection_pool=self._pool(index)))
        return client


class RedisCache(django_redis.RedisCache):
    """``django.core.cache.backends.redis.RedisCache`` with :class:`ReusedClientRedisCacheClient`."""

    def __init__(self, server: Any, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = ReusedClientRedisCacheClient
