"""Django's Redis cache backend, keeping one Redis client per connection pool.

Django's ``RedisCacheClient.get_client`` builds a new ``redis.Redis`` for every cache operation,
and each one fills a table of about 170 response callbacks: on the single-event ingest path
(an API-key lookup and two throttle counters per request) that was a third of a millisecond of
CPU per request. A ``redis.Redis`` is thread-safe over its pool, so one per pool is kept.
``config/settings`` swaps this backend in for Django's whenever the cache is Redis.
"""

from __future__ import annotations

from typing import Any

from django.core.cache.backends import redis as django_redis


class ReusedClientRedisCacheClient(django_redis.RedisCacheClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        base: Any = self  # Django's private helpers, which its type stubs don't declare
        index = base._get_connection_pool_index(write)
        client = self._clients.get(index)
        if client is None:
            client = self._clients.setdefault(index, base._client(connection_pool=base._get_connection_pool(write)))
        return client


class RedisCache(django_redis.RedisCache):
    """``django.core.cache.backends.redis.RedisCache`` with :class:`ReusedClientRedisCacheClient`."""

    def __init__(self, server: Any, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = ReusedClientRedisCacheClient
