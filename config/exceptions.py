"""Domain errors and the API's one error shape.

Every error response of the API is ``{"error": {"code", "message", "fields"}}``, where
``fields`` maps each offending input field to its messages, so a client always learns
which field was wrong.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpResponse, JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response


class ApplicationError(Exception):
    """A domain rule refused the request; the message is safe to show to the caller."""

    status_code: int = status.HTTP_400_BAD_REQUEST
    code: str = "invalid"

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        code: str | None = None,
        fields: dict[str, list[str]] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.extra = dict(extra or {})
        self.fields = dict(fields or {})
        if field:
            self.fields.setdefault(field, []).append(message)
        if code:
            self.code = code


class AccessDenied(ApplicationError):
    """The caller is known but may not do this."""

    status_code = status.HTTP_403_FORBIDDEN
    code = "permission_denied"


class NotFoundError(ApplicationError):
    """The thing named does not exist, or the caller may not know that it does."""

    status_code = status.HTTP_404_NOT_FOUND
    code = "not_found"


class Conflict(ApplicationError):
    """The request conflicts with what is already stored."""

    status_code = status.HTTP_409_CONFLICT
    code = "conflict"


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is too large."
    default_code = "payload_too_large"


def error_body(code: str, message: str, fields: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "fields": fields or {}, **extra}}


def flatten_errors(detail: Any) -> Any:
    """DRF ErrorDetail trees to plain strings, keeping the field structure."""
    if isinstance(detail, dict):
        return {str(k): flatten_errors(v) for k, v in detail.items()}
    if isinstance(detail, list):
        return [flatten_errors(v) for v in detail]
    return str(detail)


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
    # Imported here: rest_framework.views imports the authentication classes, which
    # import the services that raise these errors.
    from rest_framework.views import exception_handler

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
    from django.views.defaults import page_not_found

    return page_not_found(request, exception)
