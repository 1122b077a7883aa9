"""API key authentication: ``Authorization: Bearer <key>``, plus ``X-On-Behalf-Of`` for service keys.

Each authenticated request notes its key's use here; the stamp itself is written by
``accounts.tasks``, which calls ``accounts.services`` (so the enqueueing lives on this side of the
task, and neither module imports the other in a cycle).
"""

from __future__ import annotations

import logging
import time

from django.db import transaction
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header

from accounts.actors import Actor
from accounts.conf import accounts_settings
from accounts.models import ApiKey
from accounts.selectors import api_key_get_for_raw, api_key_project_ids
from accounts.services import user_get_or_create_external
from accounts.tasks import api_key_mark_used_task
from accounts.throttling import auth_failure_note
from config.exceptions import AccessDenied

ON_BEHALF_OF_HEADER = "HTTP_X_ON_BEHALF_OF"

logger = logging.getLogger(__name__)

# Per-process memo of when each key's use was last reported, so a busy key costs one
# task per resolution window instead of one per request.
_last_reported: dict[str, float] = {}


def api_key_note_use(*, api_key: ApiKey) -> None:
    """Record a key's use off the request path, at most once per resolution window."""
    resolution = accounts_settings.API_KEY_LAST_USED_RESOLUTION
    now = timezone.now()
    if api_key.last_used_at and (now - api_key.last_used_at).total_seconds() < resolution:
        return
    key_id = str(api_key.pk)
    mono = time.monotonic()
    if mono - _last_reported.get(key_id, -1e18) < resolution:
        return
    _last_reported[key_id] = mono

    def enqueue() -> None:
        try:
            api_key_mark_used_task.delay(key_id, now.isoformat())
        except Exception:
            _last_reported.pop(key_id, None)
            logger.warning("could not enqueue the usage stamp of api key %s", key_id, exc_info=True)

    transaction.on_commit(enqueue)


class ApiKeyAuthentication(BaseAuthentication):
    """Resolves a bearer key to an :class:`Actor` (``request.auth``) and its user."""

    keyword = b"bearer"

    def authenticate(self, request):
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != self.keyword:
            return None
        if len(parts) != 2:
            auth_failure_note(request)
            raise exceptions.AuthenticationFailed("Malformed Authorization header: use 'Bearer <api key>'.")
        try:
            raw_key = parts[1].decode("ascii")
        except UnicodeDecodeError as exc:
            auth_failure_note(request)
            raise exceptions.AuthenticationFailed("Invalid API key.") from exc
        api_key = api_key_get_for_raw(raw_key=raw_key)
        if api_key is None or not api_key.owner.is_active:
            # Guessing keys costs the guesser: past the address's budget of failures, a 429.
            auth_failure_note(request)
            raise exceptions.AuthenticationFailed("Invalid or revoked API key.")

        on_behalf_of = request.META.get(ON_BEHALF_OF_HEADER)
        if on_behalf_of is not None:
            if not api_key.is_service:
                raise AccessDenied(
                    "Only service keys may act on behalf of another user.",
                    field="X-On-Behalf-Of",
                )
            # A user seen for the first time exists only once a write for them succeeds: the
            # creation is rolled back otherwise (accounts.middleware.FirstWriteCreatesUserMiddleware).
            user = user_get_or_create_external(external_id=on_behalf_of)
            if not user.is_active:
                raise AccessDenied("The user named by X-On-Behalf-Of is deactivated.", field="X-On-Behalf-Of")
            actor = Actor(user=user, api_key=api_key, project_ids=api_key_project_ids(api_key=api_key))
        elif api_key.is_service:
            user = api_key.owner  # authenticates the request; the actor itself names no user
            actor = Actor(user=None, api_key=api_key, project_ids=api_key_project_ids(api_key=api_key))
        else:
            user = api_key.owner
            actor = Actor(user=user, api_key=api_key)
        api_key_note_use(api_key=api_key)
        return user, actor

    def authenticate_header(self, request) -> str:
        return 'Bearer realm="api"'
