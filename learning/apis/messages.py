"""Observing a chat message: stored, queued for analysis, answered with the context for this call."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api import StrictCharField, StrictInputSerializer
from learning.apis.common import project_of_user, subject_user
from learning.apis.context import ContextOutputSerializer
from learning.conf import learning_settings
from learning.models import ChatMessage
from learning.services import messages


class MessageInputSerializer(StrictInputSerializer):
    session_id = StrictCharField(max_length=255)
    content = StrictCharField(max_length=learning_settings.MESSAGE_MAX_CHARS, trim_whitespace=False)
    role = serializers.ChoiceField(choices=ChatMessage.Role.choices, default=ChatMessage.Role.USER)
    project = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=100)


class MessageOutputSerializer(serializers.Serializer):
    message_id = serializers.UUIDField()
    context = ContextOutputSerializer()  # type: ignore[assignment]  # the metaclass pops declared fields


class MessageCreateApi(APIView):
    @extend_schema(
        request=MessageInputSerializer,
        responses={201: MessageOutputSerializer},
        summary="Observe a chat message; returns the context to inject into this call",
    )
    def post(self, request: Request) -> Response:
        serializer = MessageInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        user = subject_user(request)
        message, context = messages.message_observe(
            user=user,
            session_id=data["session_id"],
            content=data["content"],
            role=data["role"],
            project=project_of_user(user, data.get("project")),
        )
        body = {"message_id": message.pk, "context": context.as_dict()}
        return Response(MessageOutputSerializer(body).data, status=status.HTTP_201_CREATED)
