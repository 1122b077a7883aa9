"""Observing a chat message: stored, queued for analysis, answered with the context for this call
and with what the message taught (once analysed); a retry with the same client id is a replay."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.actors import Actor
from config.api import ChoiceField, StrictCharField, StrictInputSerializer
from config.exceptions import ApplicationError
from config.schema import error_example
from learning import selectors
from learning.apis.common import UserDataApi, project_of_user, subject_user
from learning.apis.context import CONTEXT_EXAMPLE, ContextOutputSerializer
from learning.conf import learning_settings
from learning.models import ChatMessage
from learning.services import messages

IDEMPOTENCY_HEADER = "Idempotency-Key"


class MessageInputSerializer(StrictInputSerializer):
    session_id = StrictCharField(max_length=255)
    content = StrictCharField(max_length=learning_settings.MESSAGE_MAX_CHARS, trim_whitespace=False)
    role = ChoiceField(choices=ChatMessage.Role.choices, default=ChatMessage.Role.USER)
    project = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=100)
    client_message_id = StrictCharField(required=False, max_length=255)


class LearnedOutputSerializer(serializers.Serializer):
    kind = ChoiceField(choices=["preference", "memory", "workflow", "correction", "pain_point"])
    id = serializers.CharField()
    text = serializers.CharField()


class MessageOutputSerializer(serializers.Serializer):
    message_id = serializers.UUIDField()
    context = ContextOutputSerializer()  # type: ignore[assignment]  # the metaclass pops declared fields
    analysis = ChoiceField(choices=["done", "pending"])
    learned = LearnedOutputSerializer(many=True)


class MessageDetailOutputSerializer(serializers.Serializer):
    message_id = serializers.UUIDField(source="pk")
    session_id = serializers.CharField()
    role = serializers.CharField()
    content = serializers.CharField()
    client_message_id = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    analysis = ChoiceField(choices=["done", "pending"], source="analysis_state")
    learned = LearnedOutputSerializer(many=True)


def _client_message_id(request: Request, body_id: str | None) -> str | None:
    header = request.headers.get(IDEMPOTENCY_HEADER)
    if header is not None and body_id is not None and header != body_id:
        raise ApplicationError(
            f"client_message_id and the {IDEMPOTENCY_HEADER} header differ; send one.", field="client_message_id"
        )
    if header is not None and not (0 < len(header.strip()) <= 255):
        raise ApplicationError(f"{IDEMPOTENCY_HEADER} must be 1 to 255 characters.", field=IDEMPOTENCY_HEADER)
    return body_id if body_id is not None else header


MESSAGE_OUTPUT_EXAMPLE = {
    "message_id": "6d71739b-0122-4169-8a9f-f548bfcc9f07",
    "context": CONTEXT_EXAMPLE,
    "analysis": "done",
    "learned": [{"kind": "preference", "id": "3", "text": "Answer in British English."}],
}


class MessageCreateApi(UserDataApi):
    idempotency_field = "client_message_id"

    @extend_schema(
        request=MessageInputSerializer,
        responses={
            201: OpenApiResponse(MessageOutputSerializer, description="The message, stored and queued for analysis."),
            200: OpenApiResponse(
                MessageOutputSerializer,
                description="A repeated client_message_id: the original message, the context it was answered "
                "with and what it taught; nothing is learned again.",
            ),
        },
        summary="Observe a chat message; returns the context to inject into this call and what it taught",
        description="Call it for every message of a conversation as it arrives (the user's and the "
        "assistant's, with `role`), before the LLM call that answers it. The message is stored and its "
        "analysis queued after the request commits; the answer carries `context.text`, the block to put "
        "into this very call's system prompt, and `learned`, what this message taught (`[]` when nothing; "
        '`analysis: "pending"` while a worker has not analysed it yet: read it later with `GET '
        '/messages/{message_id}`), so the assistant can say "Noted: answers in British English". Send a '
        "`client_message_id` (or the Idempotency-Key header) to make a retry safe.",
        examples=[
            OpenApiExample(
                "A user message",
                value={
                    "session_id": "chat-42",
                    "content": "Please always answer in British English.",
                    "role": "user",
                    "project": "demo",
                    "client_message_id": "msg-0001",
                },
                request_only=True,
            ),
            OpenApiExample("Stored", value=MESSAGE_OUTPUT_EXAMPLE, response_only=True, status_codes=["201"]),
            OpenApiExample("Replayed", value=MESSAGE_OUTPUT_EXAMPLE, response_only=True, status_codes=["200"]),
            error_example(
                409,
                "conflict",
                "This client_message_id was already used for a different message.",
                field="client_message_id",
                name="key_reused",
            ),
        ],
    )
    def post(self, request: Request) -> Response:
        serializer = MessageInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        client_id = _client_message_id(request, data.get("client_message_id"))
        user = subject_user(request)
        fields = {
            "user": user,
            "session_id": data["session_id"],
            "content": data["content"],
            "role": data["role"],
            "project": project_of_user(user, data.get("project"), actor=Actor.from_request(request)),
        }
        if client_id is None:
            message, built = messages.message_observe(**fields)
            observed = messages.Observed(message=message, context=built.as_dict())
        else:
            observed = messages.message_observe_once(**fields, client_message_id=client_id)
        message = observed.message
        if message.role == ChatMessage.Role.USER and not observed.replayed and messages.analysis_in_process():
            # In-process tasks (local, tests) have analysed it by now. With a worker it was pending when
            # stored (a replay was read just now): no query to ask again.
            message.refresh_from_db(fields=["analyzed_at", "learned"])
        body = {
            "message_id": message.pk,
            "context": observed.context,
            "analysis": message.analysis_state,
            "learned": message.learned,
        }
        if observed.replayed:
            return Response(MessageOutputSerializer(body).data, headers={"Idempotent-Replayed": "true"})
        return Response(MessageOutputSerializer(body).data, status=status.HTTP_201_CREATED)


class MessageDetailApi(UserDataApi):
    @extend_schema(
        responses=MessageDetailOutputSerializer,
        summary="One of your messages and what it taught",
        description="Poll this after observing a message while its `analysis` is `pending` (a worker "
        "analyses it): once `done`, `learned` lists the preferences, memories, workflows, corrections and "
        "pain points it produced. Another user's message is a 404.",
        examples=[
            OpenApiExample(
                "Analysed",
                value={
                    "message_id": "e8cabbcf-a01f-4f3c-b3c3-18c15e167199",
                    "session_id": "chat-42",
                    "role": "user",
                    "content": "Please always answer in British English.",
                    "client_message_id": "msg-0001",
                    "created_at": "2026-12-01T21:31:12.104388Z",
                    "analysis": "done",
                    "learned": [{"kind": "preference", "id": "3", "text": "Answer in British English."}],
                },
                response_only=True,
            )
        ],
    )
    def get(self, request: Request, message_id: str) -> Response:
        message = selectors.message_get_own(user=subject_user(request), message_id=message_id)
        if message is None:
            raise NotFound("No such message.")
        return Response(MessageDetailOutputSerializer(message).data)
