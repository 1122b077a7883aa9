"""The API's error handlers: domain, DRF and Django errors rendered in the one error shape.

``api_exception_handler`` renders what DRF views raise; the ``handler400/403/404/500`` views
(named in ``config.urls``) render what Django itself answers, as JSON for every path under
``/api/`` and as the usual pages elsewhere, so an API client never has to parse HTML.

Apart from ``config.exceptions`` because ``rest_framework.views`` loads the authentication
classes, which import the services that raise those errors: the errors must not import it.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.urls import is_valid_path, resolve
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler

from config.exceptions import ApplicationError, PayloadTooLarge, error_body, flatten_errors
from config.parsers import JSONParseError

API_PREFIX = "/api/"
# The one documented mount, and the source design's alias of its learning routes (config/urls.py).
API_V1_PREFIX = "/api/v1/"
ALIAS_PREFIX = "/api/pdb/v1/reggie/"


def _first_message(fields: Any) -> str:
    if isinstance(fields, dict):
        for key, value in fields.items():
            inner = _first_message(value)
            if inner:
                return inner if key == "non_field_errors" else f"{key}: {inner}"
    if isinstance(fields, list):
        for value in fields:
            inner = _first_message(value)
            if inner:
                return inner
    if isinstance(fields, str):
        return fields
    return ""


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Render domain errors and DRF errors in the one error shape."""
    if isinstance(exc, ApplicationError):
        return Response(error_body(exc.code, exc.message, exc.fields, **exc.extra), status=exc.status_code)
    if isinstance(exc, RequestDataTooBig):
        exc = PayloadTooLarge(_too_large_message())
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()

    response = exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        response.data = validation_error_body(exc.detail)
    elif isinstance(exc, exceptions.ParseError):
        message = str(exc.detail)
        field = exc.path if isinstance(exc, JSONParseError) and exc.path else "body"
        response.data = error_body("parse_error", message, {field: [message]})
    elif isinstance(exc, PayloadTooLarge):
        message = str(exc.detail)
        response.data = error_body("payload_too_large", message, {"body": [message]})
    elif isinstance(exc, exceptions.APIException):
        detail = exc.detail
        code = exc.get_codes() if isinstance(exc.get_codes(), str) else exc.default_code
        response.data = error_body(str(code), str(detail))
    return response


def validation_error_body(detail: Any) -> dict[str, Any]:
    """The 400 body of a validation error: each field's messages, the first of them as the message."""
    fields = flatten_errors(detail)
    if isinstance(fields, list):
        fields = {"non_field_errors": fields}
    message = _first_message(fields) or "Invalid input."
    return error_body("invalid", message, fields)


def is_api_request(request: HttpRequest) -> bool:
    return request.path.startswith(API_PREFIX)


def _too_large_message() -> str:
    return f"The request body is over the limit of {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes."


def _other_slash(request: HttpRequest) -> str | None:
    """The same path with its trailing slash added or removed, if that one is a route (other than the
    catch-all JSON 404 of unknown API paths)."""
    path = request.path_info
    other = path[:-1] if path.endswith("/") else f"{path}/"
    urlconf = getattr(request, "urlconf", None)
    if other and is_valid_path(other, urlconf) and resolve(other, urlconf).func is not api_route_not_found:
        return request.path[: len(request.path) - len(path)] + other
    return None


def not_found_message(other: str | None) -> str:
    """The API's 404 for a path that is no route; ``other``: the route a slash away, if there is one."""
    return f"No such endpoint. Did you mean {other}?" if other else "No such endpoint."


def json_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """404 for paths that match no route: JSON under /api/ (naming the route a slash away: every API path
    is written without a trailing slash, and the other form is never redirected), a page elsewhere."""
    if not is_api_request(request):
        return defaults.page_not_found(request, exception)
    other = _other_slash(request)
    message = not_found_message(other)
    if other is None:
        return JsonResponse(error_body("not_found", message), status=404)
    return JsonResponse(error_body("not_found", message, {"path": [message]}, did_you_mean=other), status=404)


@csrf_exempt  # nothing here to protect, and a CSRF refusal would hide the 404 behind an HTML 403
def api_route_not_found(request: HttpRequest) -> HttpResponse:
    """The last route under /api/: unknown API paths answer the JSON 404 even when DEBUG is on."""
    return json_not_found(request)


def json_bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """Django's own 400s (a body over the limit, a disallowed host, too many fields) under /api/ as JSON."""
    if not is_api_request(request):
        return defaults.bad_request(request, exception)
    if isinstance(exception, RequestDataTooBig):
        message = _too_large_message()
        return JsonResponse(error_body("payload_too_large", message, {"body": [message]}), status=413)
    return JsonResponse(error_body("bad_request", "The request is malformed."), status=400)


def json_permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    if not is_api_request(request):
        return defaults.permission_denied(request, exception)
    return JsonResponse(
        error_body("permission_denied", "You do not have permission to perform this action."), status=403
    )


def json_server_error(request: HttpRequest) -> HttpResponse:
    """Django's 500 (the exception is already logged by then) under /api/ as JSON, never a traceback."""
    if not is_api_request(request):
        return defaults.server_error(request)
    message = "The server could not complete the request; the error has been logged."
    return JsonResponse(error_body("server_error", message), status=500)
