"""HTTP API of preference learning: observe messages, read context, manage what was learned.

Mounted at /api/v1/ and, for existing clients, at /api/pdb/v1/reggie/. Every route acts
on the caller's own data (a service key names the user with X-On-Behalf-Of); another
user's ids answer 404, so they do not leak.
"""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.actors import Actor
from accounts.models import Project, User
from accounts.selectors import project_get_by_slug, user_is_project_member
from config.api import StrictCharField, StrictInputSerializer
from config.exceptions import AccessDenied, ApplicationError
from learning import selectors, services
from learning.context import context_build
from learning.models import PREFERENCE_CATEGORIES, ChatMessage


def subject_user(request: Request) -> User:
    """Whose learning this request is about: the caller, or the user a service key names."""
    actor = Actor.from_request(request)
    if actor.user is None:
        raise ApplicationError(
            "A service key must name the user with the X-On-Behalf-Of header.", field="X-On-Behalf-Of"
        )
    return actor.user


def _project_for(request: Request, slug: str | None) -> Project | None:
    if not slug:
        return None
    project = project_get_by_slug(slug=slug)
    if project is None:
        raise ApplicationError(f"No project {slug!r}.", field="project")
    actor = Actor.from_request(request)
    if not actor.sees_everything and (
        actor.user is None or not user_is_project_member(user=actor.user, project=project)
    ):
        raise AccessDenied("You are not a member of this project.", field="project")
    return project


class ContextOutputSerializer(serializers.Serializer):
    enabled = serializers.BooleanField()
    preferences = serializers.ListField(child=serializers.DictField())
    workflow = serializers.DictField(allow_null=True)
    memories = serializers.ListField(child=serializers.DictField())
    text = serializers.CharField(help_text="The rendered block to put in the system prompt.")


class MessageInputSerializer(StrictInputSerializer):
    session_id = StrictCharField(max_length=255)
    content = StrictCharField(max_length=settings.MESSAGE_MAX_CHARS, trim_whitespace=False)
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
        message, context = services.message_observe(
            user=user,
            session_id=data["session_id"],
            content=data["content"],
            role=data["role"],
            project=_project_for(request, data.get("project")),
        )
        body = {"message_id": message.pk, "context": context.as_dict()}
        return Response(MessageOutputSerializer(body).data, status=status.HTTP_201_CREATED)


class ContextApi(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("message", str, required=False, description="the current message, to match a workflow")
        ],
        responses=ContextOutputSerializer,
        summary="What to inject into the user's next LLM call",
    )
    def get(self, request: Request) -> Response:
        message = request.query_params.get("message")
        if message is not None and len(message) > settings.MESSAGE_MAX_CHARS:
            raise ApplicationError(f"message is at most {settings.MESSAGE_MAX_CHARS} characters.", field="message")
        context = context_build(user=subject_user(request), message=message)
        return Response(ContextOutputSerializer(context.as_dict()).data)


class PreferenceOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    category = serializers.CharField()
    preference = serializers.CharField()
    description = serializers.CharField()
    confidence = serializers.FloatField()
    times_reinforced = serializers.IntegerField()
    active = serializers.BooleanField()
    source = serializers.CharField()  # type: ignore[assignment]  # the metaclass pops declared fields
    inactive_reason = serializers.CharField()
    last_reinforced_at = serializers.DateTimeField()
    created_at = serializers.DateTimeField()


class PreferenceInputSerializer(StrictInputSerializer):
    category = serializers.ChoiceField(choices=[(c, c) for c in PREFERENCE_CATEGORIES])
    preference = StrictCharField(max_length=100)
    description = StrictCharField(max_length=500, required=False, allow_blank=True)


class ToggleInputSerializer(StrictInputSerializer):
    active = serializers.BooleanField()


class PreferencesOutputSerializer(serializers.Serializer):
    preferences = PreferenceOutputSerializer(many=True)


class PreferenceListCreateApi(APIView):
    @extend_schema(responses=PreferencesOutputSerializer, summary="Your preferences, active first")
    def get(self, request: Request) -> Response:
        rows = selectors.preference_list(user=subject_user(request))
        return Response({"preferences": PreferenceOutputSerializer(rows, many=True).data})

    @extend_schema(
        request=PreferenceInputSerializer,
        responses={201: PreferenceOutputSerializer, 200: PreferenceOutputSerializer},
        summary="Add a preference by hand",
    )
    def post(self, request: Request) -> Response:
        serializer = PreferenceInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        row, created = services.preference_add_manual(user=subject_user(request), **serializer.validated_data)
        return Response(
            PreferenceOutputSerializer(row).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK
        )


class PreferenceCheckInApi(APIView):
    @extend_schema(responses=PreferencesOutputSerializer, summary="Preferences that faded: are these still accurate?")
    def get(self, request: Request) -> Response:
        rows = selectors.preference_check_in_list(user=subject_user(request))
        return Response({"preferences": PreferenceOutputSerializer(rows, many=True).data})


class PreferenceToggleApi(APIView):
    @extend_schema(
        request=ToggleInputSerializer, responses=PreferenceOutputSerializer, summary="Switch a preference on or off"
    )
    def patch(self, request: Request, preference_id: int) -> Response:
        preference = selectors.preference_get(user=subject_user(request), preference_id=preference_id)
        if preference is None:
            raise NotFound("No such preference.")
        serializer = ToggleInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        row = services.preference_set_active(preference=preference, active=serializer.validated_data["active"])
        return Response(PreferenceOutputSerializer(row).data)


class PreferenceDetailApi(APIView):
    @extend_schema(request=None, responses={204: None}, summary="Forget a preference")
    def delete(self, request: Request, preference_id: int) -> Response:
        preference = selectors.preference_get(user=subject_user(request), preference_id=preference_id)
        if preference is None:
            raise NotFound("No such preference.")
        services.preference_delete(preference=preference)
        return Response(status=status.HTTP_204_NO_CONTENT)


class WorkflowOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    workflow_name = serializers.CharField()
    trigger_pattern = serializers.CharField()
    learned_steps = serializers.JSONField()
    preferred_output = serializers.CharField()
    example_input = serializers.CharField()
    example_output = serializers.CharField()
    times_detected = serializers.IntegerField()
    last_used_at = serializers.DateTimeField(allow_null=True)
    confidence = serializers.FloatField()
    active = serializers.BooleanField()


class WorkflowsOutputSerializer(serializers.Serializer):
    workflows = WorkflowOutputSerializer(many=True)


class WorkflowListApi(APIView):
    @extend_schema(responses=WorkflowsOutputSerializer, summary="Your learned workflows")
    def get(self, request: Request) -> Response:
        rows = selectors.workflow_list(user=subject_user(request))
        return Response({"workflows": WorkflowOutputSerializer(rows, many=True).data})


class WorkflowToggleApi(APIView):
    @extend_schema(
        request=ToggleInputSerializer, responses=WorkflowOutputSerializer, summary="Switch a workflow on or off"
    )
    def patch(self, request: Request, workflow_id: int) -> Response:
        workflow = selectors.workflow_get(user=subject_user(request), workflow_id=workflow_id)
        if workflow is None:
            raise NotFound("No such workflow.")
        serializer = ToggleInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return Response(
            WorkflowOutputSerializer(
                services.workflow_set_active(workflow=workflow, active=serializer.validated_data["active"])
            ).data
        )


class WorkflowDetailApi(APIView):
    @extend_schema(request=None, responses={204: None}, summary="Forget a workflow")
    def delete(self, request: Request, workflow_id: int) -> Response:
        workflow = selectors.workflow_get(user=subject_user(request), workflow_id=workflow_id)
        if workflow is None:
            raise NotFound("No such workflow.")
        services.workflow_delete(workflow=workflow)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MemoryOutputSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    kind = serializers.CharField()
    content = serializers.CharField()
    confidence = serializers.FloatField()
    visibility = serializers.CharField()
    created_at = serializers.DateTimeField()


class MemoryListApi(APIView):
    @extend_schema(responses=MemoryOutputSerializer(many=True), summary="What the assistant remembers about you")
    def get(self, request: Request) -> Response:
        return Response(
            {"memories": MemoryOutputSerializer(selectors.memory_list(user=subject_user(request)), many=True).data}
        )
