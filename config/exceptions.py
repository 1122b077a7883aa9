"""Domain errors and the API's one error shape.

Every error response of the API is ``{"error": {"code", "message", "fields", "request_id"}}``,
where ``fields`` maps each offending input field to its messages, so a client always learns
which field was wrong, and ``request_id`` is the id of the request (also its ``X-Request-ID``
header; ``config.request_id``) that support finds it by in the logs. The handlers that render
them are in ``config.handlers``.
"""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions, status

from config.request_id import current_request_id, new_request_id


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
    """The one error shape, with the id of the request being served (a new one outside a request)."""
    request_id = current_request_id() or new_request_id()
    return {"error": {"code": code, "message": message, "fields": fields or {}, **extra, "request_id": request_id}}


def flatten_errors(detail: Any) -> Any:
    """DRF ErrorDetail trees to plain strings, keeping the field structure."""
    if isinstance(detail, dict):
        return {str(k): flatten_errors(v) for k, v in detail.items()}
    if isinstance(detail, list):
        return [flatten_errors(v) for v in detail]
    return str(detail)
