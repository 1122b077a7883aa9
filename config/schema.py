"""The OpenAPI schema (``/api/schema/``, rendered at ``/api/docs/``): rules every operation follows, so
that an endpoint added later is documented the same way without saying so.

- **One mount.** Only ``/api/v1/`` is documented; the source design's alias ``/api/pdb/v1/reggie/``
  (the same views, config/urls.py) is left out (``exclude_alias_paths``) and described in the API's
  description.
- **Tags per resource**, from the path (``TAG_RULES``), each described in ``TAGS``; a path no rule
  names is tagged by its first segment, without a description, which tests/config/test_schema.py
  refuses, so a new resource gets its tag written down.
- **Summary and description** from ``@extend_schema``; a view serving several actions from one class
  (``as_view(action_name=...)``) gives them with a ``schema_texts()`` method.
- **Headers.** ``X-On-Behalf-Of`` on every operation a service key may use for a user (a view's
  ``on_behalf_of``, ``config.api.OnBehalfOf``), ``Idempotency-Key`` where the view reads it (its
  ``idempotency_field`` names the body field it stands for), ``X-Request-ID`` on every request and every
  response, ``Idempotent-Replayed`` on the 200 of a replayed create.
- **Errors.** Each operation documents the 4xx answers it can give, in the one error shape
  (``config.exceptions.error_body``), each with examples: the view's own (an ``OpenApiExample`` for
  that status, in ``@extend_schema(examples=...)`` or the view's ``error_examples``), else one derived
  from the operation, e.g. the 400 of its first choice field as the field itself refuses "meh":

  - 400 (bad query parameters, a bad ``X-On-Behalf-Of``, a bad body), 401, 403, 414 (a request line
    over gunicorn's limit, answered by its worker in this shape: config/gunicorn_worker.py) and 429
    (throttled, with ``Retry-After``) on every operation;
  - 404 where the path or the body names a resource;
  - 409 on writes (an idempotency key reused for something else, a state-machine conflict);
  - 413 and 415 where the operation takes a body.

  405 is not listed per operation: OpenAPI documents the methods a path has, not the ones it lacks.
- **No ``additionalProp1``.** A free-form object (a ``DictField``/``JSONField``) carries an example
  (``OBJECT_EXAMPLES`` by field name, else ``{}``), so Swagger never invents keys for it.
- **Input as accepted.** Input serializers that refuse unknown fields (``StrictInputSerializer``) say
  so with ``additionalProperties: false``, input lists and dicts that refuse to be empty with
  ``minItems`` or ``minProperties``, and input integers carry the parser's 64-bit bounds, so that the
  schema promises only what the server accepts.
"""

from __future__ import annotations

import copy
import re
from typing import Any, Literal

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import ResolvedComponent, force_instance, is_serializer
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter
from rest_framework import serializers

from config.api import OnBehalfOf, StrictInputSerializer, invalid_choice_message
from config.gunicorn_worker import REQUEST_LINE_LIMIT, uri_too_long_error
from config.handlers import ALIAS_PREFIX, API_V1_PREFIX, not_found_message, validation_error_body
from config.parsers import MAX_JSON_INT
from config.request_id import HEADER as REQUEST_ID_HEADER
from config.request_id import MAX_LENGTH as REQUEST_ID_MAX_LENGTH

ERROR_COMPONENT = "Error"
EXAMPLE_REQUEST_ID = "4f9c2b7e8a1d4e3fb6c05d9a7e21c3b8"
ON_BEHALF_OF = "X-On-Behalf-Of"
IDEMPOTENCY_KEY = "Idempotency-Key"
REPLAYED = "Idempotent-Replayed"

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
                    "description": "Each offending input (field, parameter, header, `path` or `body`) and its "
                    "messages. A value outside an enumeration is refused with the accepted values.",
                },
                "request_id": {
                    "type": "string",
                    "description": f"The request's id, as in its `{REQUEST_ID_HEADER}` header: quote it to support.",
                },
                "items": {
                    "type": "array",
                    "items": {"type": "object", "additionalProperties": True},
                    "description": "A bulk request: the invalid items, each with its `index` and `fields`.",
                },
                "did_you_mean": {
                    "type": "string",
                    "description": "A 404 for a path a slash away from a route: the route, without the slash.",
                },
            },
            "required": ["code", "message", "fields", "request_id"],
            "additionalProperties": True,
        }
    },
    "required": ["error"],
}


# --- tags ------------------------------------------------------------------------------------------

# In the order the docs list them: an assistant backend's calls first, then management and review.
TAGS: list[tuple[str, str]] = [
    (
        "Messages",
        "Observe each chat message as it arrives: it is stored, analysed (preferences, corrections, pain "
        "points, workflows, memories) and answered with the context to inject into this very LLM call.",
    ),
    (
        "Context",
        "What to inject into the user's next LLM call on any surface (chat, command, task generation, "
        "search, agent): preferences, workflows, taste patterns, agent learnings, memories, task examples. "
        "`POST` records each injection against a response id, so feedback on that response judges them.",
    ),
    (
        "Response feedback",
        "Thumbs up or down on an assistant response: the evidence behind agent learnings, which also marks "
        "the learnings injected into that response as helped or hurt.",
    ),
    (
        "Retrieval search",
        "Semantic search over the documents the caller may read, ranked with the retrieval weights admins "
        "applied. Every search is traced: keep its `trace_id` to report what the answer used.",
    ),
    (
        "Retrieval feedback",
        "Which traced results were cited, used or referenced, their outcome, and the answer's rating: the "
        "evidence the retrieval scan turns into ranking weights.",
    ),
    (
        "Events",
        "The unified, append-only feedback event stream every surface writes to: one event, or up to 1,000 "
        "at once (all or nothing); filtered, cursor-paginated reads under the access rules.",
    ),
    (
        "Task ratings",
        "Good or bad ratings of generated tasks (mirrored into the event stream); completed good tasks can "
        "become task examples through the promotion ledger.",
    ),
    (
        "Tool runs",
        "A tool's run (`post_command`) and what the user did with its output (`decision_point`): the input "
        "of taste learning. A run's answer lists the taste patterns applied to it, with their notices.",
    ),
    (
        "Taste patterns",
        "What taste learning concluded from the user's edits, rejections and re-runs of a tool's output, "
        "and 'stop applying this'.",
    ),
    (
        "Preferences",
        "The user's response-style preferences, in their own words: list, add, switch on or off, forget, "
        "check in on faded ones, or ask to share one with a team or project (a promotion candidate).",
    ),
    (
        "Memories",
        "What the assistant remembers about the user (facts, commitments, lessons...): list, read, edit, "
        "forget, or ask to share one with a team or project (a promotion candidate).",
    ),
    (
        "Workflows",
        "Tasks the user asks for again and again, learned from three or more similar requests: list, switch "
        "on or off, forget, or ask to share one with a project.",
    ),
    (
        "Retrieval documents",
        "Import the organisation's documents for search: chunked by paragraph, embedded once; a re-import "
        "keeps every unchanged passage with its weights and traces.",
    ),
    ("Retrieval settings", "A project's own share of explored searches (controlled exploration)."),
    (
        "Promotions",
        "The promotion ledger (staff admins): candidates built from repeated or reviewed evidence, reviewed, "
        "previewed, applied, paused, resumed or superseded; every action is audited in the event stream.",
    ),
    ("Scans", "Queue the scanners that turn evidence into promotion candidates, and follow their runs."),
    ("Intelligence targets", "The projects and named scopes learning is anchored to, with their profiles."),
    ("Intelligence attribution", "The review queue of documents attributed to targets (staff admins)."),
    ("Intelligence packets", "A target's current packet: its insight cards by section, and source coverage."),
    (
        "Intelligence cards",
        "An insight card with its evidence, and readers' feedback on it: useful, wrong, stale, wrong target, "
        "proposed edits and merges.",
    ),
    ("Intelligence reviews", "The card-review queue (staff admins): approve or reject proposed changes."),
    ("Identity", "Who a request acts as: the key's user, or the user a service key names."),
    ("Projects", "The projects the caller can see."),
    ("API keys", "Create, list, limit and revoke API keys (people only: a service key cannot)."),
    ("Users", "Erase a user and everything that names them (staff admins)."),
]

# (pattern matched at the start of the path under /api/v1/, tag); the first match wins.
TAG_RULES: list[tuple[str, str]] = [
    (r"me$", "Identity"),
    (r"projects$", "Projects"),
    (r"api-keys(/|$)", "API keys"),
    (r"users/", "Users"),
    (r"feedback/events(/|$)", "Events"),
    (r"feedback/tasks(/|$)", "Task ratings"),
    (r"messages(/|$)", "Messages"),
    (r"context$", "Context"),
    (r"responses/", "Response feedback"),
    (r"preferences(/|$)", "Preferences"),
    (r"memories(/|$)", "Memories"),
    (r"workflows(/|$)", "Workflows"),
    (r"commands/", "Tool runs"),
    (r"taste-patterns(/|$)", "Taste patterns"),
    (r"promotions/scans?(/|$)", "Scans"),
    (r"promotions(/|$)", "Promotions"),
    (r"retrieval/documents", "Retrieval documents"),
    (r"retrieval/search", "Retrieval search"),
    (r"retrieval/feedback", "Retrieval feedback"),
    (r"retrieval/projects/", "Retrieval settings"),
    (r"intelligence/targets", "Intelligence targets"),
    (r"intelligence/attribution/", "Intelligence attribution"),
    (r"intelligence/projects/[^/]+/packet", "Intelligence packets"),
    (r"intelligence/cards/", "Intelligence cards"),
    (r"intelligence/reviews", "Intelligence reviews"),
]


def tag_for(path: str) -> str:
    """The tag of an operation's path (``/api/v1/...``)."""
    relative = path.removeprefix(API_V1_PREFIX)
    for pattern, tag in TAG_RULES:
        if re.match(pattern, relative):
            return tag
    return relative.split("/", 1)[0]


# --- error examples ------------------------------------------------------------------------------


def error_value(code: str, message: str, fields: dict[str, list[str]] | None = None, **extra: Any) -> dict[str, Any]:
    """An error body as the API writes it, with a fixed example request id."""
    return {
        "error": {"code": code, "message": message, "fields": fields or {}, **extra, "request_id": EXAMPLE_REQUEST_ID}
    }


def error_example(
    status: int, code: str, message: str, *, field: str | None = None, name: str | None = None
) -> OpenApiExample:
    """An operation's own example of one of its errors, for ``@extend_schema(examples=...)`` or a view's
    ``error_examples``; ``field`` is the input named in ``fields``."""
    fields = {field: [message]} if field else {}
    return OpenApiExample(
        name or code,
        value=error_value(code, message, fields),
        status_codes=[str(status)],
        response_only=True,
    )


def _invalid(field: str, message: str) -> dict[str, Any]:
    """A 400 body exactly as the exception handler writes it for ``field``."""
    body = validation_error_body({field: [message]})
    body["error"]["request_id"] = EXAMPLE_REQUEST_ID
    return body


# status: (description, fallback example body, response headers)
ERRORS: dict[int, tuple[str, dict[str, Any], dict[str, Any]]] = {
    400: (
        "Invalid input: `fields` names each offending field, parameter or header.",
        _invalid("path", "The URL contains a NUL character (%00), which no parameter may hold."),
        {},
    ),
    401: (
        "No credentials, or an unknown or revoked API key.",
        error_value("not_authenticated", "Authentication credentials were not provided."),
        {"WWW-Authenticate": {"schema": {"type": "string"}, "description": '`Bearer realm="api"`.'}},
    ),
    403: (
        "Authenticated, but not allowed to do this.",
        error_value("permission_denied", "You do not have permission to perform this action."),
        {},
    ),
    404: (
        "No such resource, or one you may not see (its existence is not revealed).",
        error_value("not_found", "Not found."),
        {},
    ),
    409: (
        "Conflicts with what is stored (an idempotency key already used for something else, a state that "
        "does not allow this action).",
        error_value("conflict", "The request conflicts with the current state of the resource."),
        {},
    ),
    413: (
        "The request body is over the size limit.",
        error_value(
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
        uri_too_long_error(REQUEST_LINE_LIMIT, EXAMPLE_REQUEST_ID),
        {},
    ),
    415: (
        "The body is not `application/json`.",
        error_value("unsupported_media_type", 'Unsupported media type "text/plain" in request.'),
        {},
    ),
    429: (
        "Too many requests: retry after the number of seconds in `Retry-After`.",
        error_value("throttled", "Request was throttled. Expected available in 12 seconds."),
        {"Retry-After": {"schema": {"type": "integer"}, "description": "Seconds to wait before retrying."}},
    ),
}

SUCCESS_DESCRIPTIONS = {
    "200": "OK.",
    "201": "Created.",
    "202": "Accepted: the work was queued; follow it with the returned id.",
    "204": "Done; no body.",
}

# Values that make each kind of field refuse its input, tried in order: a JSON object, a word, a number.
_PROBES: tuple[Any, ...] = ({"not": "valid"}, "meh", 12345)
CHOICE_PROBE = "meh"


def _first_message(detail: Any) -> str | None:
    if isinstance(detail, dict):
        detail = next(iter(detail.values()), None)
    if isinstance(detail, list):
        return _first_message(detail[0]) if detail else None
    return None if detail is None else str(detail)


def _field_problem(serializer: Any) -> tuple[str, str] | None:
    """A real refusal of one of ``serializer``'s input fields, as the field itself words it: a value
    outside its choices, else a required field left out, else a value of the wrong kind."""
    serializer = force_instance(serializer)
    fields = [(name, field) for name, field in getattr(serializer, "fields", {}).items() if not field.read_only]
    for name, field in fields:
        if isinstance(field, serializers.ChoiceField):
            try:
                field.run_validation(CHOICE_PROBE)
            except serializers.ValidationError as exc:
                message = _first_message(exc.detail)
                if message:
                    return name, message
    for name, field in fields:
        if field.required:
            return name, str(field.error_messages["required"])
    for name, field in fields:
        for probe in _PROBES:
            try:
                field.run_validation(probe)
            except serializers.ValidationError as exc:
                message = _first_message(exc.detail)
                if message:
                    return name, message
            except Exception:  # noqa: BLE001, S112 - a field that needs its parent to validate: try the next
                continue
    return None


# --- free-form objects ---------------------------------------------------------------------------

# Examples of free-form objects by field name; any other free-form object shows as {}.
OBJECT_EXAMPLES: dict[str, Any] = {
    "metadata": {"model": "gpt-4.1-mini"},
    "source_context": {"tool": "kb_search"},
    "task_snapshot": {
        "id": "task-311",
        "title": "Send the Q3 numbers to finance",
        "description": "Export the revenue sheet and email it to finance before Friday.",
    },
    "parameters": {"tone": "formal", "max_words": 150},
    "proposed_learning": {"visibility": "project", "project": "demo"},
    "rows": {"user_llm_preferences": 3, "chat_history": 12, "ai_feedback_events": 7},
    "detail": {"before_words": 220, "after_words": 140, "ratio": 0.64},
}


def _is_free_form_object(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "object" and "properties" not in schema


# --- the schema class ------------------------------------------------------------------------------

WRITE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
BODY_METHODS = {"POST", "PUT", "PATCH"}

REQUEST_ID_PARAMETER = OpenApiParameter(
    REQUEST_ID_HEADER,
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    required=False,
    description=(
        f"Your id for this request (1 to {REQUEST_ID_MAX_LENGTH} letters, digits, `.`, `_`, `:` or `-`): echoed "
        "in the response's header, in `error.request_id` and in the server's log lines. Anything else, or none, "
        "and the server makes one."
    ),
)
REQUEST_ID_RESPONSE_HEADER = {
    "schema": {"type": "string"},
    "required": True,
    "description": "The request's id (yours if you sent a valid one): quote it to find the call in the logs.",
}


def _on_behalf_of_parameter(mode: OnBehalfOf) -> OpenApiParameter:
    rule = (
        "Required with a service key: this operation is about a user's own data (without it, a 400 naming the header)."
        if mode == OnBehalfOf.REQUIRED
        else "Without it a service key acts as itself."
    )
    return OpenApiParameter(
        ON_BEHALF_OF,
        OpenApiTypes.STR,
        OpenApiParameter.HEADER,
        required=False,
        description=(
            "Service keys only: the external id of the user this request acts for (1 to 255 printable "
            f"characters), with exactly that user's rights; a user seen for the first time is created by their "
            f"first successful write. {rule} A user key or a browser session sending it gets a 403. The demo's "
            "user: `demo-alice`."
        ),
    )


def _idempotency_parameter(field: str) -> OpenApiParameter:
    return OpenApiParameter(
        IDEMPOTENCY_KEY,
        OpenApiTypes.STR,
        OpenApiParameter.HEADER,
        required=False,
        description=(
            f"Makes a retry safe (the same as the body's `{field}`; send one, or the same value in both; 1 to "
            f"255 characters): a repeat with the same key returns the original with 200 and `{REPLAYED}: true` "
            "instead of creating it again; the same key with a different payload is a 409."
        ),
    )


class ApiAutoSchema(AutoSchema):
    """drf-spectacular's schema with this API's rules (see the module docstring)."""

    # --- which headers an operation takes --------------------------------------------------------

    def on_behalf_of(self) -> OnBehalfOf:
        return OnBehalfOf(getattr(self.view, "on_behalf_of", OnBehalfOf.OPTIONAL))

    def idempotency_field(self) -> str | None:
        """The body field the ``Idempotency-Key`` header stands for, if this operation reads the header."""
        field = getattr(self.view, "idempotency_field", None)
        return field if field and self.method == "POST" else None

    def get_override_parameters(self) -> list[Any]:
        parameters = list(super().get_override_parameters())
        if self.on_behalf_of() != OnBehalfOf.REFUSED:
            parameters.append(_on_behalf_of_parameter(self.on_behalf_of()))
        if field := self.idempotency_field():
            parameters.append(_idempotency_parameter(field))
        parameters.append(REQUEST_ID_PARAMETER)
        return parameters

    # --- words -----------------------------------------------------------------------------------

    def _schema_texts(self) -> tuple[str, str] | None:
        texts = getattr(self.view, "schema_texts", None)
        return texts() if callable(texts) else None

    def get_summary(self) -> str | None:
        texts = self._schema_texts()
        return texts[0] if texts else super().get_summary()

    def get_description(self) -> str:  # type: ignore[override]
        texts = self._schema_texts()
        return texts[1] if texts else super().get_description()

    def get_tags(self) -> list[str]:
        return [tag_for(self.path)]

    def get_operation_id(self) -> str:
        """``..._list`` also for a GET whose body is one named list (``{"memories": [...]}``), so that it
        does not collide with the GET of one item."""
        operation_id = super().get_operation_id()
        serializer = force_instance(self.get_response_serializers())
        fields = getattr(serializer, "fields", None) if self.method == "GET" else None
        if fields and len(fields) == 1 and isinstance(next(iter(fields.values())), serializers.ListSerializer):
            operation_id = operation_id.removesuffix("_retrieve") + "_list"
        return operation_id

    # --- bodies ----------------------------------------------------------------------------------

    def _map_basic_serializer(self, serializer: Any, direction: str) -> dict[str, Any]:
        schema = super()._map_basic_serializer(serializer, direction)
        if direction == "request" and isinstance(force_instance(serializer), StrictInputSerializer):
            schema["additionalProperties"] = False
        return schema

    def _map_serializer_field(self, field: Any, direction: str, bypass_extensions: bool = False) -> dict[str, Any]:
        """Also ``minItems``/``minProperties: 1`` for a list or dict input that refuses to be empty, the
        64-bit bounds the JSON parser holds integers to (``config.parsers``), which drf-spectacular leaves
        out, and an example for a free-form object (else Swagger shows ``additionalProp1``)."""
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        if direction == "request" and schema.get("type") == "integer":
            schema.setdefault("minimum", -MAX_JSON_INT)
            schema.setdefault("maximum", MAX_JSON_INT)
        if direction == "request" and not getattr(field, "allow_empty", True):
            if schema.get("type") == "array":
                schema.setdefault("minItems", 1)
            elif schema.get("type") == "object":
                schema.setdefault("minProperties", 1)
        if _is_free_form_object(schema) and "example" not in schema:
            schema["example"] = copy.deepcopy(OBJECT_EXAMPLES.get(getattr(field, "field_name", ""), {}))
        return schema

    # --- answers ---------------------------------------------------------------------------------

    def _takes_body(self) -> bool:
        return self.method in BODY_METHODS and self.get_request_serializer() is not None

    def error_statuses(self) -> list[int]:
        statuses = [400, 401, 403, 414, 429]
        if "{" in self.path or self._takes_body():
            statuses.append(404)
        if self.method in WRITE_METHODS:
            statuses.append(409)
        if self._takes_body():
            statuses += [413, 415]
        return sorted(statuses)

    def _declared_error_examples(self, status: int) -> list[OpenApiExample]:
        declared = [*self.get_examples(), *getattr(self.view, "error_examples", ())]
        return [e for e in declared if str(status) in [str(code) for code in (e.status_codes or ())]]

    def _query_parameters(self) -> list[Any]:
        """The operation's own query parameters: serializers, and parameters given with an enumeration."""
        return [
            p
            for p in self.get_override_parameters()
            if is_serializer(p) or (isinstance(p, OpenApiParameter) and p.location == OpenApiParameter.QUERY)
        ]

    def _invalid_input_example(self) -> dict[str, Any] | None:
        """A 400 naming one of this operation's own inputs, worded as the API words it."""
        candidates = [self.get_request_serializer()] if self._takes_body() else []
        candidates += [p for p in self._query_parameters() if is_serializer(p)]
        for serializer in candidates:
            if serializer is not None and (problem := _field_problem(serializer)):
                return _invalid(*problem)
        for parameter in self._query_parameters():
            if isinstance(parameter, OpenApiParameter) and parameter.enum:
                return _invalid(parameter.name, invalid_choice_message(CHOICE_PROBE, parameter.enum))
        if getattr(self.view, "pagination_class", None) is not None and self.method == "GET":
            return _invalid("page_size", "A positive integer is required.")
        return None

    def _derived_error_examples(
        self, status: int
    ) -> tuple[list[tuple[str, dict[str, Any]]], list[tuple[str, dict[str, Any]]]]:
        """(name, body) of the examples of ``status`` this operation gets without declaring any: the primary
        ones stand for its own input or resource (an example the view declares replaces them), the
        secondary ones for what every such operation shares (the headers it takes, a trailing slash)."""
        acting = self.on_behalf_of()
        primary: list[tuple[str, dict[str, Any]]] = []
        secondary: list[tuple[str, dict[str, Any]]] = []
        if status == 400:
            own = self._invalid_input_example()
            named = "A service key must name the user with the X-On-Behalf-Of header."
            empty = "An external user id must not be empty."
            if own:
                primary.append(("invalid", own))
            elif acting == OnBehalfOf.OPTIONAL:
                primary.append(("bad_user_id", error_value("invalid", empty, {ON_BEHALF_OF: [empty]})))
            elif acting == OnBehalfOf.REFUSED:
                primary.append(("nul_in_url", ERRORS[400][1]))
            if acting == OnBehalfOf.REQUIRED:
                secondary.append(("user_not_named", error_value("invalid", named, {ON_BEHALF_OF: [named]})))
            if self._takes_body():
                message = "JSON parse error: Expecting value: line 1 column 1 (char 0)"
                secondary.append(("parse_error", error_value("parse_error", message, {"body": [message]})))
        elif status == 401:
            primary.append(("not_authenticated", ERRORS[401][1]))
            secondary.append(("invalid_key", error_value("authentication_failed", "Invalid or revoked API key.")))
        elif status == 403:
            if acting == OnBehalfOf.REFUSED:
                primary.append(("permission_denied", ERRORS[403][1]))
            else:
                message = "Only service keys may act on behalf of another user."
                body = error_value("permission_denied", message, {ON_BEHALF_OF: [message]})
                secondary.append(("not_a_service_key", body))
        elif status == 404:
            if "{" in self.path:
                primary.append(("not_found", error_value("not_found", f"No such {self._resource_noun()}.")))
            message = not_found_message(self.path)
            body = error_value("not_found", message, {"path": [message]}, did_you_mean=self.path)
            secondary.append(("trailing_slash", body))
        elif status == 409:
            field = self.idempotency_field() or (
                "idempotency_key" if "idempotency_key" in self._request_field_names() else None
            )
            if field:
                message = f"{field} 'retry-7f3a' was already used for a different request."
                primary.append(("key_reused", error_value("conflict", message, {field: [message]})))
            else:
                primary.append(("conflict", ERRORS[409][1]))
        else:
            primary.append((ERRORS[status][1]["error"]["code"], ERRORS[status][1]))
        return primary, secondary

    def _request_field_names(self) -> set[str]:
        serializer = force_instance(self.get_request_serializer()) if self._takes_body() else None
        return set(getattr(serializer, "fields", {}) or {})

    def _resource_noun(self) -> str:
        """What the path's last parameter names ("promotion" in /promotions/{promotion_id}/apply); a view
        whose 404 says more declares its own example."""
        segments = self.path.removeprefix(API_V1_PREFIX).split("/")
        index = max(i for i, segment in enumerate(segments) if segment.startswith("{"))
        collection = segments[index - 1] if index else segments[index].strip("{}")
        return NOUNS.get(collection) or collection.removesuffix("s").replace("-", " ")

    def _error_response(self, status: int, component: ResolvedComponent) -> dict[str, Any]:
        description, _, headers = ERRORS[status]
        examples: dict[str, Any] = {}
        for example in self._declared_error_examples(status):
            examples[re.sub(r"\W+", "_", example.name).strip("_").lower()] = {
                "value": example.value,
                **({"summary": example.summary} if example.summary else {}),
            }
        primary, secondary = self._derived_error_examples(status)
        for name, value in ([] if examples else primary) + secondary:
            examples.setdefault(name, {"value": value})
        return {
            "description": description,
            "headers": {**headers, REQUEST_ID_HEADER: REQUEST_ID_RESPONSE_HEADER},
            "content": {"application/json": {"schema": component.ref, "examples": examples}},
        }

    def _get_response_bodies(self, direction: Literal["request", "response"] = "response") -> dict[str, Any]:
        responses = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        replayable = self.idempotency_field() is not None
        for code, response in responses.items():
            if not response.get("description"):
                response["description"] = SUCCESS_DESCRIPTIONS.get(code, "")
            headers = response.setdefault("headers", {})
            headers[REQUEST_ID_HEADER] = REQUEST_ID_RESPONSE_HEADER
            if replayable and code == "200":
                headers[REPLAYED] = {
                    "schema": {"type": "string", "enum": ["true"]},
                    "description": "This is the original answer of an earlier request with the same key.",
                }
        component = ResolvedComponent(
            name=ERROR_COMPONENT, type=ResolvedComponent.SCHEMA, schema=ERROR_SCHEMA, object=ERROR_COMPONENT
        )
        self.registry.register_on_missing(component)
        for status in self.error_statuses():
            responses.setdefault(str(status), self._error_response(status, component))
        return responses


# The resource a path parameter names, by its collection, where the plain singular would mislead.
NOUNS = {
    "api-keys": "API key",
    "tasks": "task feedback",
    "taste-patterns": "taste pattern",
    "scans": "scan run",
    "candidates": "attribution candidate",
    "memories": "memory",
    "projects": "project",
}


# --- hooks (SPECTACULAR_SETTINGS) ----------------------------------------------------------------


def exclude_alias_paths(endpoints: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Preprocessing hook: the alias mount is served, not documented (its paths are the /api/v1/ ones)."""
    return [endpoint for endpoint in endpoints if not endpoint[0].startswith(ALIAS_PREFIX)]


def describe_tags(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """Postprocessing hook: the tags in use, in ``TAGS`` order, each with its description (a tag no rule
    describes is listed last, without one)."""
    used = {tag for item in result.get("paths", {}).values() for op in item.values() for tag in op.get("tags", ())}
    described = dict(TAGS)
    result["tags"] = [{"name": name, "description": text} for name, text in TAGS if name in used]
    result["tags"] += [{"name": name} for name in sorted(used - set(described))]
    return result
