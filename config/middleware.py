"""Middleware of the project's own."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.middleware.common import CommonMiddleware as DjangoCommonMiddleware
from django.utils.encoding import escape_uri_path

from config import request_id
from config.exceptions import error_body
from config.handlers import ALIAS_PREFIX, API_V1_PREFIX, is_api_request


class RequestIdMiddleware:
    """First in ``MIDDLEWARE``: gives each request its id (the client's ``X-Request-ID`` if it is sane,
    else a new one; see ``config.request_id``), makes it current while the request is served (error
    bodies and log records carry it), and returns it in the ``X-Request-ID`` header of every response."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        rid = request_id.request_id_from(request.META.get(request_id.META_KEY))
        request.request_id = rid  # type: ignore[attr-defined]
        token = request_id.bind(rid)
        try:
            response = self.get_response(request)
        finally:
            request_id.unbind(token)
        response[request_id.HEADER] = rid
        return response


class ApiAliasMiddleware:
    """The source design's mount, ``/api/pdb/v1/reggie/``, serves the same views as ``/api/v1/`` for
    existing clients; its answers say it is an alias (``Deprecation: true``) and name the documented
    path (``Link: </api/v1/...>; rel="successor-version"``). It is left out of the schema."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if request.path.startswith(ALIAS_PREFIX):
            # Percent-encoded as a URI: the path is the client's, and a header holds no CR, LF or ">".
            successor = escape_uri_path(API_V1_PREFIX + request.path[len(ALIAS_PREFIX) :])
            response["Deprecation"] = "true"
            response["Link"] = f'<{successor}>; rel="successor-version"'
        return response


def _nul_in_url(request: HttpRequest) -> JsonResponse | None:
    """A 400 naming the path or query parameter that holds a NUL character (PostgreSQL cannot compare
    text with one, so it would fail as a 500 deep in a query)."""
    field = None
    if "\x00" in request.path:
        field = "path"
    else:
        for name, values in request.GET.lists():
            if "\x00" in name or any("\x00" in value for value in values):
                field = name.encode("unicode_escape").decode("ascii")[:40]
                break
    if field is None:
        return None
    message = "The URL contains a NUL character (%00), which no parameter may hold."
    return JsonResponse(error_body("invalid", message, {field: [message]}), status=400)


class CommonMiddleware(DjangoCommonMiddleware):
    """Django's, plus two rules for the API: its paths are never redirected to add a slash (a redirected
    POST loses its body, and under DEBUG it is a 500; the API's JSON 404 says "Did you mean" with the
    route a slash away instead), and a NUL character anywhere in its URL is a 400."""

    def process_view(
        self, request: HttpRequest, view_func: Any, view_args: Any, view_kwargs: Any
    ) -> HttpResponse | None:
        # After routing: a path with a NUL that matches no route is already the JSON 404.
        return _nul_in_url(request) if is_api_request(request) else None

    def should_redirect_with_slash(self, request: HttpRequest) -> bool:
        if is_api_request(request):
            return False
        return super().should_redirect_with_slash(request)
