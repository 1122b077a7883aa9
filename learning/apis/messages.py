"""Observing a chat message: stored, queued for analysis, answered with the context for this call
and with what the message taught (once analysed); a retry with the same client id is a replay."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.actors import Actor
from config.api import StrictCharField, StrictInputSerializer
from config.exceptions import ApplicationError
from learning import selectors
from learning.apis.common import project_of_user, subject_user
from learning.apis.context import ContextOutputSerializer
from learning.conf import learning_settings
from learning.models import ChatMessage
from learning.services import messages

IDEMPOTENCY_HEADER = "Idempotency-Key"


class MessageInputSerializer(StrictInputSerializer):
    session_id = StrictCharField(max_length=255)
    content = StrictCharField(max_length=learning_settings.MESSAGE_MAX_CHARS, trim_whitespace=False)
    role = serializers.ChoiceField(choices=ChatMessage.Role.choices, default=ChatMessage.Role.USER)
    project = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=100)
    client_message_id = StrictCharField(required=False, max_length=255)


class LearnedOutputSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["preference", "memory", "workflow", "correction", "pain_point"])
    id = serializers.CharField()
    text = serializers.CharField()


class MessageOutputSerializer(serializers.Serializer):
    message_id = serializers.UUIDField()
    context = ContextOutputSerializer()  # type: ignore[assignment]  # the metaclass pops declared fields
    analysis = serializers.ChoiceField(choices=["done", "pending"])
    learned = LearnedOutputSerializer(many=True)


class MessageDetailOutputSerializer(serializers.Serializer):
    message_id = serializers.UUIDField(source="pk")
    session_id = serializers.CharField()
    role = serializers.CharField()
    content = serializers.CharField()
    client_message_id = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    analysis = serializers.ChoiceField(choices=["done", "pending"], source="analysis_state")
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


class MessageCreateApi(APIView):
    @extend_schema(
        request=MessageInputSerializer,
        parameters=[OpenApiParameter(IDEMPOTENCY_HEADER, str, OpenApiParameter.HEADER, required=False)],
        responses={201: MessageOutputSerializer, 200: MessageOutputSerializer},
        summary="Observe a chat message; returns the context to inject into this call and what it taught",
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


class MessageDetailApi(APIView):
    @extend_schema(responses=MessageDetailOutputSerializer, summary="One of your messages and what it taught")
    def get(self, request: Request, message_id: str) -> Response:
        message = selectors.message_get_own(user=subject_user(request), message_id=message_id)
        if message is None:
            raise NotFound("No such message.")
        return Response(MessageDetailOutputSerializer(message).data)
