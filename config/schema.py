"""The OpenAPI schema's view of errors: every operation documents the error answers it can give.

Every error of the API has one shape (``config.exceptions.error_body``); this schema class
adds it, with an example, for each 4xx status an operation can answer:

- 400 (bad query parameters, a bad ``X-On-Behalf-Of``, a bad body), 401 (a missing or bad key),
  403 (not allowed), 414 (a request line over gunicorn's limit, answered by its worker in this shape:
  config/gunicorn_worker.py) and 429 (throttled, with ``Retry-After``) on every operation;
- 404 where the path or the body names a resource;
- 409 on writes (an idempotency key reused for something else, a state-machine conflict);
- 413 and 415 where the operation takes a body.

Input serializers that refuse unknown fields (``StrictInputSerializer``) say so with
``additionalProperties: false``, input lists and dicts that refuse to be empty with ``minItems`` or
``minProperties``, and input integers carry the parser's 64-bit bounds, so that the schema promises only
what the server accepts.

405 is not listed per operation: OpenAPI documents the methods a path has, not the ones it lacks.
"""

from __future__ import annotations

from typing import Any, Literal

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import ResolvedComponent, force_instance
from rest_framework import serializers

from config.api import StrictInputSerializer
from config.gunicorn_worker import REQUEST_LINE_LIMIT, uri_too_long_error
from config.parsers import MAX_JSON_INT

ERROR_COMPONENT = "Error"

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "The one error shape of the API.",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "A stable machine-readable code, e.g. `invalid`."},
                "message": {"type": "string", "description": "What went wrong, safe to show to a person."},
                "fields": {
                    "type": "object",
                    "additionalProperties": True,
                    "description": "Each offending input (field, parameter, header or `body`) and its messages.",
                },
            },
            "required": ["code", "message", "fields"],
            "additionalProperties": True,
        }
    },
    "required": ["error"],
}


def _example(code: str, message: str, fields: dict[str, list[str]] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "fields": fields or {}}}


# status: (description, example body, response headers)
ERRORS: dict[int, tuple[str, dict[str, Any], dict[str, Any]]] = {
    400: (
        "Invalid input: the fields name each offending field, parameter or header.",
        _example("invalid", 'signal: "meh" is not a valid choice.', {"signal": ['"meh" is not a valid choice.']}),
        {},
    ),
    401: (
        "No credentials, or an unknown or revoked API key.",
        _example("not_authenticated", "Authentication credentials were not provided."),
        {"WWW-Authenticate": {"schema": {"type": "string"}, "description": '`Bearer realm="api"`.'}},
    ),
    403: (
        "Authenticated, but not allowed to do this.",
        _example("permission_denied", "You do not have permission to perform this action."),
        {},
    ),
    404: (
        "No such resource, or one you may not see.",
        _example("not_found", "Not found."),
        {},
    ),
    409: (
        "Conflicts with what is stored (e.g. an idempotency key already used for something else).",
        _example(
            "conflict",
            "idempotency_key was already used for another event.",
            {"idempotency_key": ["idempotency_key was already used for another event."]},
        ),
        {},
    ),
    413: (
        "The request body is over the size limit.",
        _example(
            "payload_too_large",
            "The request body is over the limit of 16777216 bytes.",
            {"body": ["The request body is over the limit of 16777216 bytes."]},
        ),
        {},
    ),
    414: (
        f"The request line (method, path and query string) is over {REQUEST_LINE_LIMIT} bytes: the server "
        "refuses it before reading the request (`limit_request_line`, config/gunicorn.conf.py). Send long text "
        "in a body, e.g. `POST /api/v1/context` rather than `GET` with `?message=`.",
        uri_too_long_error(REQUEST_LINE_LIMIT),
        {},
    ),
    415: (
        "The body is not `application/json`.",
        _example("unsupported_media_type", 'Unsupported media type "text/plain" in request.'),
        {},
    ),
    429: (
        "Too many requests: retry after the number of seconds in `Retry-After`.",
        _example("throttled", "Request was throttled. Expected available in 12 seconds."),
        {"Retry-After": {"schema": {"type": "integer"}, "description": "Seconds to wait before retrying."}},
    ),
}

WRITE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
BODY_METHODS = {"POST", "PUT", "PATCH"}


class ApiAutoSchema(AutoSchema):
    """drf-spectacular's schema, plus the error answers of each operation (see the module docstring)."""

    def error_statuses(self) -> list[int]:
        statuses = [400, 401, 403, 414, 429]
        takes_body = self.method in BODY_METHODS and self.get_request_serializer() is not None
        if "{" in self.path or takes_body:
            statuses.append(404)
        if self.method in WRITE_METHODS:
            statuses.append(409)
        if takes_body:
            statuses += [413, 415]
        return sorted(statuses)

    def get_operation_id(self) -> str:
        """``..._list`` also for a GET whose body is one named list (``{"memories": [...]}``), so that it
        does not collide with the GET of one item."""
        operation_id = super().get_operation_id()
        serializer = force_instance(self.get_response_serializers())
        fields = getattr(serializer, "fields", None) if self.method == "GET" else None
        if fields and len(fields) == 1 and isinstance(next(iter(fields.values())), serializers.ListSerializer):
            operation_id = operation_id.removesuffix("_retrieve") + "_list"
        return operation_id

    def _map_basic_serializer(self, serializer: Any, direction: str) -> dict[str, Any]:
        schema = super()._map_basic_serializer(serializer, direction)
        if direction == "request" and isinstance(force_instance(serializer), StrictInputSerializer):
            schema["additionalProperties"] = False
        return schema

    def _map_serializer_field(self, field: Any, direction: str, bypass_extensions: bool = False) -> dict[str, Any]:
        """Also ``minItems``/``minProperties: 1`` for a list or dict input that refuses to be empty, and the
        64-bit bounds the JSON parser holds integers to (``config.parsers``), which drf-spectacular leaves out."""
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        if direction == "request" and schema.get("type") == "integer":
            schema.setdefault("minimum", -MAX_JSON_INT)
            schema.setdefault("maximum", MAX_JSON_INT)
        if direction == "request" and not getattr(field, "allow_empty", True):
            if schema.get("type") == "array":
                schema.setdefault("minItems", 1)
            elif schema.get("type") == "object":
                schema.setdefault("minProperties", 1)
        return schema

    def _get_response_bodies(self, direction: Literal["request", "response"] = "response") -> dict[str, Any]:
        responses = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        component = ResolvedComponent(
            name=ERROR_COMPONENT, type=ResolvedComponent.SCHEMA, schema=ERROR_SCHEMA, object=ERROR_COMPONENT
        )
        self.registry.register_on_missing(component)
        for status in self.error_statuses():
            description, example, headers = ERRORS[status]
            response: dict[str, Any] = {
                "description": description,
                "content": {
                    "application/json": {
                        "schema": component.ref,
                        "examples": {example["error"]["code"]: {"value": example}},
                    }
                },
            }
            if headers:
                response["headers"] = headers
            responses.setdefault(str(status), response)
        return responses
