"""A user a service names for the first time exists only once a write for them succeeded.

``X-On-Behalf-Of`` names users by the assistant's own id, and authentication creates the
user it names. For a name not seen before, this middleware runs the request in one
transaction and rolls it back (the new user with it) unless the request was a write that
succeeded: a read, a refused or a failed request leaves no user behind. Requests for
known users (all but the first) run as before, outside any transaction.
"""

from __future__ import annotations

from django.db import transaction
from rest_framework.permissions import SAFE_METHODS

from accounts.selectors import auth_cache_forget_user, user_exists_by_external_id
from accounts.services import validate_external_id
from config.exceptions import ApplicationError

ON_BEHALF_OF_HEADER = "HTTP_X_ON_BEHALF_OF"


class FirstWriteCreatesUserMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        raw = request.META.get(ON_BEHALF_OF_HEADER)
        if raw is None or not request.path.startswith("/api/"):
            return self.get_response(request)
        try:
            external_id = validate_external_id(raw)
        except ApplicationError:
            return self.get_response(request)  # authentication refuses it with the envelope
        if user_exists_by_external_id(external_id=external_id):
            return self.get_response(request)
        keep = False
        with transaction.atomic():
            response = self.get_response(request)
            keep = request.method not in SAFE_METHODS and response.status_code < 400
            if not keep:
                transaction.set_rollback(True)
        if not keep:
            auth_cache_forget_user(external_id=external_id)
        return response
