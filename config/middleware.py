"""Middleware of the project's own."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.middleware.common import CommonMiddleware as DjangoCommonMiddleware

from config.exceptions import error_body
from config.handlers import is_api_request


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
    POST loses its body, and under DEBUG it is a 500; the API's JSON 404 names the route a slash away
    instead), and a NUL character anywhere in its URL is a 400."""

    def process_view(
        self, request: HttpRequest, view_func: Any, view_args: Any, view_kwargs: Any
    ) -> HttpResponse | None:
        # After routing: a path with a NUL that matches no route is already the JSON 404.
        return _nul_in_url(request) if is_api_request(request) else None

    def should_redirect_with_slash(self, request: HttpRequest) -> bool:
        if is_api_request(request):
            return False
        return super().should_redirect_with_slash(request)
