"""Feedback on an assistant response: a thumbs up or down that judges the learnings injected into it."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.actors import Actor
from config.api import ChoiceField, StrictCharField, StrictInputSerializer
from feedback.conf import feedback_settings
from learning.apis.common import UserDataApi, project_of_user, subject_user
from learning.conf import learning_settings
from learning.services import agent


class ResponseFeedbackInputSerializer(StrictInputSerializer):
    response_id = StrictCharField(max_length=255)
    rating = ChoiceField(choices=sorted(agent.RATINGS))
    reason = StrictCharField(required=False, allow_blank=True, max_length=feedback_settings.FEEDBACK_MAX_TEXT_CHARS)
    response_text = StrictCharField(
        required=False, allow_blank=True, max_length=learning_settings.COMMAND_OUTPUT_MAX_CHARS, trim_whitespace=False
    )
    tool_name = StrictCharField(required=False, allow_blank=True, max_length=100)
    tool_trace = serializers.JSONField(required=False, allow_null=True)  # null: no trace, as when absent
    tags = serializers.ListField(child=StrictCharField(max_length=50), required=False, max_length=20)
    project = StrictCharField(required=False, allow_blank=True, max_length=100)
    session_id = StrictCharField(required=False, allow_blank=True, max_length=255)


class ResponseFeedbackOutputSerializer(serializers.Serializer):
    event_id = serializers.UUIDField()
    usages_judged = serializers.IntegerField(help_text="Injected learnings now marked helped or hurt.")


class ResponseFeedbackApi(UserDataApi):
    @extend_schema(
        request=ResponseFeedbackInputSerializer,
        responses={201: ResponseFeedbackOutputSerializer},
        summary="Thumbs up or down on an assistant response",
        description="The user's rating of one response (`response_id`: the id the context was recorded "
        "against with `POST /context`), with an optional reason. It is evidence for agent learnings (repeated "
        "thumbs-down on similar responses become a prevention prompt for review), and it marks the learnings "
        "injected into that response as helped (up) or hurt (down): `usages_judged` counts them.",
        examples=[
            OpenApiExample(
                "A thumbs-down",
                value={
                    "response_id": "resp-7f3a",
                    "rating": "down",
                    "reason": "It ignored that I asked for bullet points",
                    "project": "demo",
                    "session_id": "chat-42",
                },
                request_only=True,
            ),
            OpenApiExample(
                "Recorded",
                value={"event_id": "e4f4847f-d93c-4daa-bb7c-cf489f2802ce", "usages_judged": 5},
                response_only=True,
                status_codes=["201"],
            ),
        ],
    )
    def post(self, request: Request) -> Response:
        serializer = ResponseFeedbackInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        user = subject_user(request)
        event, judged = agent.response_feedback_record(
            actor=Actor.from_request(request),
            user=user,
            response_id=data["response_id"],
            rating=data["rating"],
            reason=data.get("reason", ""),
            response_text=data.get("response_text", ""),
            tool_name=data.get("tool_name", ""),
            tool_trace=data.get("tool_trace"),
            tags=data.get("tags", []),
            project=project_of_user(user, data.get("project"), actor=Actor.from_request(request)),
            session_id=data.get("session_id", ""),
        )
        body = {"event_id": event.pk, "usages_judged": judged}
        return Response(ResponseFeedbackOutputSerializer(body).data, status=status.HTTP_201_CREATED)
