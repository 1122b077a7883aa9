"""Rate limits: DRF throttles per API key, per user and per anonymous client address, and a
per-address budget of failed key authentications.

Every throttle counts in the shared cache (Redis in production), one counter per client and
fixed window of ``THROTTLE_WINDOW_SECONDS``: one cache round trip per throttle and request,
whatever the rate, where DRF's own ``SimpleRateThrottle`` keeps (and rewrites) a list of every
request's timestamp. The price of fixed windows: across a window boundary a client may
briefly reach twice its rate. A throttle that cannot reach the cache lets the request through
and logs it: a cache outage must not take the API down with it.
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


def _count_hit(key: str, window: int) -> int:
    """Add one hit to a window's counter; the count so far (this hit included)."""
    cache = caches["default"]
    if isinstance(cache, RedisCache):
        # One round trip: INCR creates the counter at 1, EXPIRE NX sets its lifetime once.
        full_key = cache.make_and_validate_key(key)
        client = cache._cache.get_client(full_key, write=True)
        pipe = client.pipeline(transaction=False)
        pipe.incr(full_key)
        pipe.expire(full_key, window + 1, nx=True)
        count, _ = pipe.execute()
        return int(count)
    if cache.add(key, 1, window + 1):
        return 1
    try:
        return int(cache.incr(key))
    except ValueError:  # expired between add and incr
        cache.add(key, 1, window + 1)
        return 1


class WindowThrottle(BaseThrottle):
    """A fixed-window request budget per client; subclasses say who the client is and its budget."""

    scope = ""

    def __init__(self) -> None:
        self.retry_after: int | None = None

    def budget(self, request, view) -> tuple[str, int] | None:
        """The client's identity and its requests per window; None: this throttle does not apply."""
        raise NotImplementedError

    def allow_request(self, request, view) -> bool:
        found = self.budget(request, view)
        if found is None:
            return True
        ident, limit = found
        if limit <= 0:  # 0 switches this limit off
            return True
        window = throttle_settings.THROTTLE_WINDOW_SECONDS
        now = time.time()
        index = int(now // window)
        try:
            count = _count_hit(f"throttle:{self.scope}:{ident}:{index}", window)
        except Exception:
            logger.warning("throttle %s could not reach the cache; request let through", self.scope, exc_info=True)
            return True
        if count <= limit:
            return True
        self.retry_after = max(1, int((index + 1) * window - now + 0.999))
        return False

    def wait(self) -> float | None:
        return self.retry_after

    def get_ident(self, request) -> str:
        return client_ip(request)


class ApiKeyRateThrottle(WindowThrottle):
    """Requests per API key: service keys (the assistant's backend) have a larger budget than user keys."""

    scope = "api_key"

    def budget(self, request, view) -> tuple[str, int] | None:
        actor = getattr(request, "auth", None)
        if not isinstance(actor, Actor) or actor.api_key is None:
            return None
        if actor.api_key.is_service:
            return str(actor.api_key.pk), throttle_settings.THROTTLE_SERVICE_KEY_REQUESTS
        return str(actor.api_key.pk), throttle_settings.THROTTLE_USER_KEY_REQUESTS


class UserRateThrottle(WindowThrottle):
    """Requests per user, whatever the credential: a session, a user key, or a service key acting
    for the user with ``X-On-Behalf-Of``. A service key acting as itself has no user here."""

    scope = "user"

    def budget(self, request, view) -> tuple[str, int] | None:
        user = Actor.from_request(request).user
        if user is None:
            return None
        return str(user.pk), throttle_settings.THROTTLE_USER_REQUESTS


class AnonRateThrottle(WindowThrottle):
    """Requests per client address for unauthenticated callers (the schema, the docs)."""

    scope = "anon"

    def budget(self, request, view) -> tuple[str, int] | None:
        if request.user is not None and request.user.is_authenticated:
            return None
        return self.get_ident(request), throttle_settings.THROTTLE_ANON_REQUESTS


class AuthFailureThrottle(WindowThrottle):
    """Failed key authentications per client address (guessing keys); counted by the authenticator."""

    scope = "auth_failure"

    def budget(self, request, view) -> tuple[str, int] | None:
        return self.get_ident(request), throttle_settings.THROTTLE_AUTH_FAILURES


def auth_failure_note(request) -> None:
    """Count a failed authentication from this client's address; over the budget, a 429."""
    throttle = AuthFailureThrottle()
    if not throttle.allow_request(request, None):
        raise exceptions.Throttled(wait=throttle.wait(), detail="Too many failed authentications from this address.")
