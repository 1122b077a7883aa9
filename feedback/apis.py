"""HTTP API of the event stream and task ratings: thin views over services and selectors."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import fields as dataclass_fields
from typing import Any

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.actors import Actor
from config.api import (
    ChoiceField,
    NewestFirstCursorPagination,
    StrictCharField,
    StrictInputSerializer,
    filterset_parameters,
    idempotency_from_header,
    paginated_list,
)
from config.exceptions import flatten_errors
from config.schema import error_example, error_value
from feedback.conf import feedback_settings
from feedback.filters import FeedbackEventFilter, TaskFeedbackFilter
from feedback.models import EventFamily, FeedbackEvent, Signal, TaskFeedback
from feedback.plain_input import PlainInput
from feedback.selectors import event_get, event_list, task_feedback_get, task_feedback_list
from feedback.services.bulk import BulkWriteError, events_record_bulk
from feedback.services.events import EventInput, event_record
from feedback.services.task_feedback import task_feedback_record

_EVENT_INPUT_FIELDS = {f.name for f in dataclass_fields(EventInput)}


def _text(max_length: int, **kwargs) -> StrictCharField:
    return StrictCharField(required=False, allow_blank=True, max_length=max_length, trim_whitespace=False, **kwargs)


class EventInputSerializer(StrictInputSerializer):
    event_type = StrictCharField(max_length=100)
    event_family = ChoiceField(choices=EventFamily.choices)
    signal = ChoiceField(choices=Signal.choices)
    user_id = serializers.IntegerField(required=False, allow_null=True, min_value=1)
    project = StrictCharField(
        required=False, allow_null=True, allow_blank=True, max_length=100, help_text="Project slug."
    )
    target_id = _text(255)
    session_id = _text(255)
    source_table = _text(100)
    source_record_id = _text(255)
    surface = _text(100)
    subject_type = _text(100)
    subject_id = _text(255)
    reason_category = _text(100)
    free_text = _text(feedback_settings.FEEDBACK_MAX_TEXT_CHARS)
    before_snapshot = serializers.JSONField(required=False, allow_null=True)
    after_snapshot = serializers.JSONField(required=False, allow_null=True)
    source_context = serializers.DictField(required=False)
    metadata = serializers.DictField(required=False)
    private = serializers.BooleanField(required=False, default=False)
    idempotency_key = StrictCharField(
        required=False,
        allow_null=True,
        max_length=255,
        help_text="Client key: a retry with the same key returns the original event.",
    )

    def get_fields(self) -> dict[str, serializers.Field]:
        # DRF deep-copies the declared fields for every instance, which re-runs each field's
        # __init__: a sixth of the single-event POST's CPU (bench/ingest_profile.py). Declared
        # fields keep no per-request state until bound, so a shallow copy of each serves.
        return {name: copy.copy(field) for name, field in self._declared_fields.items()}

    @staticmethod
    def event_input(validated: dict) -> EventInput:
        data = dict(validated)
        data["project_slug"] = data.pop("project", None) or None
        return EventInput(**{k: v for k, v in data.items() if k in _EVENT_INPUT_FIELDS})


# Plain JSON payloads, the common case, are checked without DRF's per-field machinery; anything
# else (and every error) goes through the serializer (feedback/plain_input.py).
_EVENT_PLAIN_INPUT = PlainInput(EventInputSerializer)


def _event_validated(payload: Any) -> dict:
    validated = _EVENT_PLAIN_INPUT.validated(payload)
    if validated is None:
        serializer = EventInputSerializer(data=payload)
        serializer.is_valid(raise_exception=True)
        validated = serializer.validated_data
    return validated


class EventOutputSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    created_at = serializers.DateTimeField()
    user_id = serializers.IntegerField(allow_null=True)
    project = serializers.CharField(source="project.slug", allow_null=True, help_text="Project slug.")
    target_id = serializers.CharField()
    session_id = serializers.CharField()
    source_table = serializers.CharField()
    source_record_id = serializers.CharField()
    event_type = serializers.CharField()
    event_family = serializers.CharField()
    surface = serializers.CharField()
    subject_type = serializers.CharField()
    subject_id = serializers.CharField()
    signal = serializers.CharField()
    reason_category = serializers.CharField()
    free_text = serializers.CharField()
    before_snapshot = serializers.JSONField(allow_null=True)
    after_snapshot = serializers.JSONField(allow_null=True)
    source_context = serializers.JSONField()
    metadata = serializers.JSONField()
    private = serializers.BooleanField()
    idempotency_key = serializers.CharField(allow_null=True)

    # The fields above are the documented contract; rendering builds the dict directly
    # because copying 22 declared fields per response was a quarter of the ingest path's
    # CPU (bench/ingest.py). tests/feedback/test_events_api.py holds the two to each other.
    _plain = (
        "target_id",
        "session_id",
        "source_table",
        "source_record_id",
        "event_type",
        "event_family",
        "surface",
        "subject_type",
        "subject_id",
        "signal",
        "reason_category",
        "free_text",
        "before_snapshot",
        "after_snapshot",
        "source_context",
        "metadata",
        "private",
        "idempotency_key",
    )

    def to_representation(self, event: FeedbackEvent) -> dict:
        data = {
            "id": str(event.id),
            "created_at": _DATETIME.to_representation(event.created_at),
            "user_id": event.user_id,
            "project": event.project.slug if event.project else None,
        }
        for name in self._plain:
            data[name] = getattr(event, name)
        return data


_DATETIME = serializers.DateTimeField()


@extend_schema_field(EventInputSerializer(many=True))
class _EventItemsField(serializers.ListField):
    """Each item is checked by EventInputSerializer in the view (so errors name the item's index);
    the schema says so, instead of promising that any object is accepted."""


class EventBulkInputSerializer(StrictInputSerializer):
    events = _EventItemsField(child=serializers.DictField(), allow_empty=False)


class EventBulkOutputSerializer(serializers.Serializer):
    created = serializers.IntegerField(help_text="Events newly stored.")
    replayed = serializers.IntegerField(help_text="Events already stored under the same idempotency keys.")
    ids = serializers.ListField(child=serializers.UUIDField(), help_text="Event ids, in request order.")


class PlainAcceptNegotiation(DefaultContentNegotiation):
    """DRF's content negotiation, answering the assistant backend's usual request (one renderer, no
    format override, ``Accept`` absent, ``*/*`` or the renderer's own type) without parsing the
    header: DRF's answer in that case, at a fraction of its cost on the ingest path. Anything else
    is negotiated by DRF."""

    def select_renderer(
        self, request: Request, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        listed = list(renderers)
        if len(listed) == 1 and not format_suffix:
            media_type = listed[0].media_type
            accept = request.META.get("HTTP_ACCEPT", "*/*")
            if accept in ("*/*", media_type) and self.settings.URL_FORMAT_OVERRIDE not in request.query_params:
                return listed[0], media_type
        return super().select_renderer(request, listed, format_suffix)


EVENT_EXAMPLE = {
    "event_type": "answer_copied",
    "event_family": "assistant_response",
    "signal": "positive",
    "project": "demo",
    "session_id": "chat-42",
    "subject_type": "response",
    "subject_id": "resp-7f3a",
    "surface": "chat",
    "metadata": {"model": "gpt-4.1-mini"},
    "idempotency_key": "evt-2026-12-01-0001",
}
EVENT_OUTPUT_EXAMPLE = {
    "id": "dd1433b7-ac7b-48da-b71c-04a1fe6d30e5",
    "created_at": "2026-12-01T21:32:59.471845Z",
    "user_id": 2,
    "project": "demo",
    "target_id": "",
    "session_id": "chat-42",
    "source_table": "",
    "source_record_id": "",
    "event_type": "answer_copied",
    "event_family": "assistant_response",
    "surface": "chat",
    "subject_type": "response",
    "subject_id": "resp-7f3a",
    "signal": "positive",
    "reason_category": "",
    "free_text": "",
    "before_snapshot": {},
    "after_snapshot": {},
    "source_context": {},
    "metadata": {"model": "gpt-4.1-mini"},
    "private": False,
    "idempotency_key": "evt-2026-12-01-0001",
}
EVENT_KEY_REUSED = (
    "idempotency_key 'evt-2026-12-01-0001' was already used for a different event (field signal differs)."
)


class FeedbackEventListCreateApi(APIView):
    """The event stream: append one event, or list the events you may read."""

    pagination_class = NewestFirstCursorPagination
    content_negotiation_class = PlainAcceptNegotiation
    idempotency_field = "idempotency_key"

    @extend_schema(
        request=EventInputSerializer,
        responses={
            201: OpenApiResponse(EventOutputSerializer, description="The event, stored."),
            200: OpenApiResponse(
                EventOutputSerializer, description="A repeated idempotency key: the original event, stored before."
            ),
        },
        summary="Append one feedback event",
        description="One signal from any surface (a thumbs, an edit, a copy, a tool outcome...) into the "
        "append-only stream. `event_family` and `signal` are enumerations (the database enforces them); "
        "everything else is free text or JSON. A service key acting as itself may name the event's user with "
        "`user_id`; a user writes only as themself and into their projects. `private: true` (and the "
        "`user_preference` family) keeps the event to its owner and admins.",
        examples=[
            OpenApiExample("A copied answer", value=EVENT_EXAMPLE, request_only=True),
            OpenApiExample("Stored", value=EVENT_OUTPUT_EXAMPLE, response_only=True, status_codes=["201"]),
            OpenApiExample("Replayed", value=EVENT_OUTPUT_EXAMPLE, response_only=True, status_codes=["200"]),
            error_example(409, "conflict", EVENT_KEY_REUSED, field="idempotency_key", name="key_reused"),
        ],
    )
    def post(self, request: Request) -> Response:
        validated = _event_validated(idempotency_from_header(request, request.data))
        write = event_record(actor=Actor.from_request(request), data=EventInputSerializer.event_input(validated))
        return Response(
            EventOutputSerializer(write.event).data,
            status=status.HTTP_201_CREATED if write.created else status.HTTP_200_OK,
            headers={} if write.created else {"Idempotent-Replayed": "true"},
        )

    @extend_schema(
        parameters=filterset_parameters(FeedbackEventFilter),
        responses=EventOutputSerializer(many=True),
        summary="List feedback events you may read",
        description="Newest first, one cursor page at a time (follow `next`). Admins and a service key acting "
        "as itself read everything (within its projects); a user reads their own events and the non-private "
        "events of their projects. Filters combine with AND.",
    )
    def get(self, request: Request) -> Response:
        return paginated_list(
            request=request,
            view=self,
            queryset=event_list(actor=Actor.from_request(request)),
            filterset_class=FeedbackEventFilter,
            output_serializer=EventOutputSerializer,
        )


BULK_INVALID = error_value(
    "invalid",
    "1 of 2 events are invalid; nothing was written.",
    {"events": ["item 1 is invalid"]},
    items=[
        {
            "index": 1,
            "fields": {
                "signal": [
                    '"meh" is not a valid choice. Choose one of: positive, negative, corrected, accepted, ignored, '
                    "completed, failed, needs_review, stale, conflicting."
                ]
            },
        }
    ],
)


class FeedbackEventBulkApi(APIView):
    """Append up to FEEDBACK_BULK_MAX_EVENTS events in one transaction: all or nothing."""

    content_negotiation_class = PlainAcceptNegotiation

    @extend_schema(
        request=EventBulkInputSerializer,
        responses={201: OpenApiResponse(EventBulkOutputSerializer, description="Every event stored (or replayed).")},
        summary="Append many feedback events at once, all or nothing",
        description="Up to 1,000 events in one transaction: all are stored, or none and a 400 whose `items` "
        "lists each invalid event by `index` with its `fields`. Each event is what `POST /feedback/events` "
        "takes; an event whose `idempotency_key` is already stored counts as `replayed` (same payload) or "
        "fails the request with a 409 (different payload).",
        examples=[
            OpenApiExample(
                "Two events",
                value={
                    "events": [
                        {
                            "event_type": "chunk_cited",
                            "event_family": "retrieval",
                            "signal": "positive",
                            "project": "demo",
                            "subject_type": "chunk",
                            "subject_id": "handbook-expenses#0",
                            "idempotency_key": "bulk-1-a",
                        },
                        {
                            "event_type": "draft_edited",
                            "event_family": "tool_action",
                            "signal": "corrected",
                            "project": "demo",
                            "surface": "email_drafts",
                            "free_text": "Shortened the greeting",
                            "idempotency_key": "bulk-1-b",
                        },
                    ]
                },
                request_only=True,
            ),
            OpenApiExample(
                "Stored",
                value={
                    "created": 2,
                    "replayed": 0,
                    "ids": ["7c1e5a2b-4d3f-4e8a-9b6c-1d2e3f4a5b6c", "0a9b8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d"],
                },
                response_only=True,
                status_codes=["201"],
            ),
            OpenApiExample("One invalid event", value=BULK_INVALID, response_only=True, status_codes=["400"]),
        ],
    )
    def post(self, request: Request) -> Response:
        outer = EventBulkInputSerializer(data=request.data)
        outer.is_valid(raise_exception=True)
        raw_items = outer.validated_data["events"]
        limit = feedback_settings.FEEDBACK_BULK_MAX_EVENTS
        if len(raw_items) > limit:
            raise serializers.ValidationError(
                {"events": [f"At most {limit} events per request; got {len(raw_items)}."]}
            )
        plain = [_EVENT_PLAIN_INPUT.validated(item) for item in raw_items]
        validated_items: list = plain
        if any(validated is None for validated in plain):  # the serializer checks them all and reports
            items = EventInputSerializer(data=raw_items, many=True)
            if not items.is_valid():
                errors = items.errors  # {index: errors} in current DRF, a list aligned with the items before
                indexed = errors.items() if isinstance(errors, dict) else enumerate(errors)
                bad = [{"index": int(i), "fields": flatten_errors(errs)} for i, errs in sorted(indexed) if errs]
                raise BulkWriteError(bad, len(raw_items))
            validated_items = items.validated_data
        inputs = [EventInputSerializer.event_input(validated) for validated in validated_items]
        writes = events_record_bulk(actor=Actor.from_request(request), items=inputs)
        created = sum(1 for w in writes if w.created)
        body = {"created": created, "replayed": len(writes) - created, "ids": [w.event.id for w in writes]}
        return Response(EventBulkOutputSerializer(body).data, status=status.HTTP_201_CREATED)


class FeedbackEventDetailApi(APIView):
    @extend_schema(
        responses=EventOutputSerializer,
        summary="One feedback event",
        description="An event you may read, by id; one you may not read is a 404, as if it did not exist.",
    )
    def get(self, request: Request, event_id: str) -> Response:
        event = event_get(actor=Actor.from_request(request), event_id=event_id)
        if event is None:
            raise NotFound("No such event.")
        return Response(EventOutputSerializer(event).data)


class TaskFeedbackInputSerializer(StrictInputSerializer):
    task_snapshot = serializers.DictField(allow_empty=False, help_text="The generated task as the user saw it.")
    rating = ChoiceField(choices=TaskFeedback.Rating.choices)
    reason = _text(feedback_settings.FEEDBACK_MAX_TEXT_CHARS)
    completed = serializers.BooleanField(required=False, default=False)
    project = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=100)
    user_id = serializers.IntegerField(required=False, allow_null=True, min_value=1)
    surface = _text(100)
    idempotency_key = StrictCharField(required=False, allow_null=True, max_length=255)


class TaskFeedbackOutputSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    created_at = serializers.DateTimeField()
    user_id = serializers.IntegerField()
    project = serializers.CharField(source="project.slug", allow_null=True, help_text="Project slug.")
    task_snapshot = serializers.JSONField()
    rating = serializers.CharField()
    reason = serializers.CharField()
    completed = serializers.BooleanField()
    promoted = serializers.BooleanField()


TASK_RATING_EXAMPLE = {
    "task_snapshot": {
        "id": "task-311",
        "title": "Send the Q3 numbers to finance",
        "description": "Export the revenue sheet and email it to finance before Friday.",
    },
    "rating": "good",
    "reason": "Clear owner and deadline",
    "completed": True,
    "project": "demo",
    "idempotency_key": "task-311-rating",
}
TASK_RATING_OUTPUT_EXAMPLE = {
    "id": "19ff93dc-5f2e-4312-ac45-af8357dd7cc3",
    "created_at": "2026-12-01T21:32:59.738376Z",
    "user_id": 2,
    "project": "demo",
    "task_snapshot": {
        "id": "task-311",
        "title": "Send the Q3 numbers to finance",
        "description": "Export the revenue sheet and email it to finance before Friday.",
    },
    "rating": "good",
    "reason": "Clear owner and deadline",
    "completed": True,
    "promoted": False,
}


class TaskFeedbackListCreateApi(APIView):
    """Rate a generated task (good/bad, with a reason); the rating is also appended to the event stream."""

    pagination_class = NewestFirstCursorPagination
    idempotency_field = "idempotency_key"

    @extend_schema(
        request=TaskFeedbackInputSerializer,
        responses={
            201: OpenApiResponse(TaskFeedbackOutputSerializer, description="The rating, stored."),
            200: OpenApiResponse(
                TaskFeedbackOutputSerializer, description="A repeated idempotency key: the original rating."
            ),
        },
        summary="Rate a generated task",
        description="Good or bad, with a reason, on the task as the user saw it (`task_snapshot`); mirrored "
        "into the event stream as a `task_generation` event in the same transaction. A completed task rated "
        "good becomes a task-example candidate at the next scan. A service key names the user with "
        "X-On-Behalf-Of or `user_id`.",
        examples=[
            OpenApiExample("A good task", value=TASK_RATING_EXAMPLE, request_only=True),
            OpenApiExample("Stored", value=TASK_RATING_OUTPUT_EXAMPLE, response_only=True, status_codes=["201"]),
            OpenApiExample("Replayed", value=TASK_RATING_OUTPUT_EXAMPLE, response_only=True, status_codes=["200"]),
            error_example(
                409,
                "conflict",
                "idempotency_key 'task-311-rating' was already used for a different event (field signal differs).",
                field="idempotency_key",
                name="key_reused",
            ),
        ],
    )
    def post(self, request: Request) -> Response:
        serializer = TaskFeedbackInputSerializer(data=idempotency_from_header(request, request.data))
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        feedback, created = task_feedback_record(
            actor=Actor.from_request(request),
            task_snapshot=data["task_snapshot"],
            rating=data["rating"],
            reason=data.get("reason", ""),
            completed=data["completed"],
            project_slug=data.get("project") or None,
            user_id=data.get("user_id"),
            surface=data.get("surface", ""),
            idempotency_key=data.get("idempotency_key"),
        )
        return Response(
            TaskFeedbackOutputSerializer(feedback).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
            headers={} if created else {"Idempotent-Replayed": "true"},
        )

    @extend_schema(
        parameters=filterset_parameters(TaskFeedbackFilter),
        responses=TaskFeedbackOutputSerializer(many=True),
        summary="List task ratings you may read",
        description="Newest first, cursor-paginated, under the same access rules as the events they mirror.",
    )
    def get(self, request: Request) -> Response:
        return paginated_list(
            request=request,
            view=self,
            queryset=task_feedback_list(actor=Actor.from_request(request)),
            filterset_class=TaskFeedbackFilter,
            output_serializer=TaskFeedbackOutputSerializer,
        )


class TaskFeedbackDetailApi(APIView):
    @extend_schema(
        responses=TaskFeedbackOutputSerializer,
        summary="One task rating",
        description="A rating you may read, by id (404 otherwise); `promoted` says whether it became a task example.",
    )
    def get(self, request: Request, feedback_id: str) -> Response:
        feedback = task_feedback_get(actor=Actor.from_request(request), feedback_id=feedback_id)
        if feedback is None:
            raise NotFound("No such task feedback.")
        return Response(TaskFeedbackOutputSerializer(feedback).data)
