"""API key authentication: ``Authorization: Bearer <key>``, plus ``X-On-Behalf-Of`` for service keys."""

from __future__ import annotations

from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header

from accounts.actors import Actor
from accounts.selectors import api_key_get_for_raw
from accounts.services import api_key_note_use, user_get_or_create_external
from config.exceptions import AccessDenied

ON_BEHALF_OF_HEADER = "HTTP_X_ON_BEHALF_OF"


class ApiKeyAuthentication(BaseAuthentication):
    """Resolves a bearer key to an :class:`Actor` (``request.auth``) and its user."""

    keyword = b"bearer"

    def authenticate(self, request):
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != self.keyword:
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed("Malformed Authorization header: use 'Bearer <api key>'.")
        try:
            raw_key = parts[1].decode("ascii")
        except UnicodeDecodeError as exc:
            raise exceptions.AuthenticationFailed("Invalid API key.") from exc
        api_key = api_key_get_for_raw(raw_key=raw_key)
        if api_key is None or not api_key.owner.is_active:
            raise exceptions.AuthenticationFailed("Invalid or revoked API key.")

        on_behalf_of = request.META.get(ON_BEHALF_OF_HEADER)
        if on_behalf_of is not None:
            if not api_key.is_service:
                raise AccessDenied(
                    "Only service keys may act on behalf of another user.",
                    field="X-On-Behalf-Of",
                )
            user = user_get_or_create_external(external_id=on_behalf_of)
            actor = Actor(user=user, api_key=api_key)
        elif api_key.is_service:
            user = api_key.owner  # authenticates the request; the actor itself names no user
            actor = Actor(user=None, api_key=api_key)
        else:
            user = api_key.owner
            actor = Actor(user=user, api_key=api_key)
        api_key_note_use(api_key=api_key)
        return user, actor

    def authenticate_header(self, request) -> str:
        return 'Bearer realm="api"'
