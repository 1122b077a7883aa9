"""Rate limits: DRF throttles per API key, per user and per anonymous client address, and a
per-address budget of failed key authentications.

The throttles count in the shared cache (Redis in production), one counter per client and
fixed window of ``THROTTLE_WINDOW_SECONDS``: one cache round trip per request for all the
budgets that apply, whatever the rate, where DRF's own ``SimpleRateThrottle`` reads and rewrites
a list of every request's timestamp, once per throttle. The price of fixed windows: across a
window boundary a client may briefly reach twice its rate. A throttle that cannot reach the
cache lets the request through and logs it: a cache outage must not take the API down with it.
"""

from __future__ import annotations

import logging
import time

from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from rest_framework import exceptions
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle

from accounts.actors import Actor
from accounts.conf import throttle_settings

logger = logging.getLogger(__name__)


def client_ip(request) -> str:
    """The client's address: ``REMOTE_ADDR``, or, behind ``NUM_PROXIES`` trusted proxies, the
    address the outermost of them saw (the same rule as DRF's ``get_ident``, shared with axes).

    With no trusted proxy configured ``X-Forwarded-For`` is ignored: a client could otherwise
    pick a new address per request and escape every per-address limit."""
    meta = getattr(request, "META", {})
    remote_addr = meta.get("REMOTE_ADDR") or ""
    num_proxies = api_settings.NUM_PROXIES or 0
    xff = meta.get("HTTP_X_FORWARDED_FOR")
    if num_proxies <= 0 or not xff:
        return remote_addr
    addrs = [addr.strip() for addr in xff.split(",") if addr.strip()]
    if not addrs:
        return remote_addr
    return addrs[-min(num_proxies, len(addrs))]


def _count_hits(keys: list[str], window: int) -> list[int]:
    """Add one hit to each window counter; the counts so far (this hit included)."""
    cache = caches["default"]
    if isinstance(cache, RedisCache):
        # One round trip for all of them: INCR creates a counter at 1, EXPIRE NX sets its lifetime once.
        full_keys = [cache.make_and_validate_key(key) for key in keys]
        pipe = cache._cache.get_client(full_keys[0], write=True).pipeline(transaction=False)
        for full_key in full_keys:
            pipe.incr(full_key)
            pipe.expire(full_key, window + 1, nx=True)
        return [int(count) for count in pipe.execute()[::2]]
    counts = []
    for key in keys:
        if cache.add(key, 1, window + 1):
            counts.append(1)
            continue
        try:
            counts.append(int(cache.incr(key)))
        except ValueError:  # expired between add and incr
            cache.add(key, 1, window + 1)
            counts.append(1)
    return counts


class WindowThrottle(BaseThrottle):
    """Fixed-window request budgets: every budget that applies to a request is counted at once,
    in one cache round trip; the request passes only if it is within all of them."""

    def __init__(self) -> None:
        self.retry_after: int | None = None

    def budgets(self, request) -> list[tuple[str, str, int]]:
        """(scope, client identity, requests per window) of every budget that applies; 0 is no limit."""
        raise NotImplementedError

    def allow_request(self, request, view) -> bool:
        budgets = [(scope, ident, limit) for scope, ident, limit in self.budgets(request) if limit > 0]
        if not budgets:
            return True
        window = throttle_settings.THROTTLE_WINDOW_SECONDS
        now = time.time()
        index = int(now // window)
        try:
            counts = _count_hits([f"throttle:{scope}:{ident}:{index}" for scope, ident, _ in budgets], window)
        except Exception:
            logger.warning("throttle could not reach the cache; request let through", exc_info=True)
            return True
        if all(count <= limit for count, (_, _, limit) in zip(counts, budgets, strict=True)):
            return True
        self.retry_after = max(1, int((index + 1) * window - now + 0.999))
        return False

    def wait(self) -> float | None:
        return self.retry_after

    def get_ident(self, request) -> str:
        return client_ip(request)


class ApiRateThrottle(WindowThrottle):
    """The API's request budgets (DRF's ``DEFAULT_THROTTLE_CLASSES``):

    - per API key: ``THROTTLE_SERVICE_KEY_REQUESTS`` for service keys (the assistant's backend,
      posting for all its users), ``THROTTLE_USER_KEY_REQUESTS`` for user keys;
    - per user, whatever the credential (a session, a user key, or a service key acting for the
      user with ``X-On-Behalf-Of``; a service key acting as itself has no user): ``THROTTLE_USER_REQUESTS``;
    - per client address for unauthenticated callers (the schema, the docs): ``THROTTLE_ANON_REQUESTS``.
    """

    def budgets(self, request) -> list[tuple[str, str, int]]:
        actor = Actor.from_request(request)
        budgets = []
        if actor.api_key is not None:
            limit = (
                throttle_settings.THROTTLE_SERVICE_KEY_REQUESTS
                if actor.api_key.is_service
                else throttle_settings.THROTTLE_USER_KEY_REQUESTS
            )
            budgets.append(("api_key", str(actor.api_key.pk), limit))
        if actor.user is not None:
            budgets.append(("user", str(actor.user.pk), throttle_settings.THROTTLE_USER_REQUESTS))
        if not (request.user is not None and request.user.is_authenticated):
            budgets.append(("anon", self.get_ident(request), throttle_settings.THROTTLE_ANON_REQUESTS))
        return budgets


class AuthFailureThrottle(WindowThrottle):
    """Failed key authentications per client address (guessing keys); counted by the authenticator."""

    def budgets(self, request) -> list[tuple[str, str, int]]:
        return [("auth_failure", self.get_ident(request), throttle_settings.THROTTLE_AUTH_FAILURES)]


def auth_failure_note(request) -> None:
    """Count a failed authentication from this client's address; over the budget, a 429."""
    throttle = AuthFailureThrottle()
    if not throttle.allow_request(request, None):
        raise exceptions.Throttled(wait=throttle.wait(), detail="Too many failed authentications from this address.")
