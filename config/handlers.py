"""The API's error handlers: domain and DRF errors rendered in the one error shape.

Apart from ``config.exceptions`` because ``rest_framework.views`` loads the authentication
classes, which import the services that raise those errors: the errors must not import it.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpResponse, JsonResponse
from django.views.defaults import page_not_found
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler

from config.exceptions import ApplicationError, PayloadTooLarge, error_body, flatten_errors


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
        exc = PayloadTooLarge(f"The request body is over the limit of {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes.")
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()

    response = exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        fields = flatten_errors(exc.detail)
        if isinstance(fields, list):
            fields = {"non_field_errors": fields}
        message = _first_message(fields) or "Invalid input."
        response.data = error_body("invalid", message, fields)
    elif isinstance(exc, exceptions.ParseError):
        message = str(exc.detail)
        response.data = error_body("parse_error", message, {"body": [message]})
    elif isinstance(exc, PayloadTooLarge):
        message = str(exc.detail)
        response.data = error_body("payload_too_large", message, {"body": [message]})
    elif isinstance(exc, exceptions.APIException):
        detail = exc.detail
        code = exc.get_codes() if isinstance(exc.get_codes(), str) else exc.default_code
        response.data = error_body(str(code), str(detail))
    return response


def json_not_found(request, exception=None) -> HttpResponse:
    """404 for paths that match no route: JSON under /api/, a plain page elsewhere."""
    if request.path.startswith("/api/"):
        return JsonResponse(error_body("not_found", "No such endpoint."), status=404)
    return page_not_found(request, exception)
