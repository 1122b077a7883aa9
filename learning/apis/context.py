"""The context to inject into the user's next LLM call, on any surface."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.actors import Actor
from accounts.models import User
from config.api import StrictCharField, StrictInputSerializer
from config.exceptions import ApplicationError
from intelligence.selectors import target_id_of
from learning.apis.common import SURFACES, project_of_user, subject_user
from learning.conf import learning_settings
from learning.context.build import Context, Scope, context_build
from learning.services import usages


class ContextOutputSerializer(serializers.Serializer):
    enabled = serializers.BooleanField()
    preferences = serializers.ListField(child=serializers.DictField())
    workflow = serializers.DictField(allow_null=True)
    taste_patterns = serializers.ListField(child=serializers.DictField())
    agent_learnings = serializers.ListField(child=serializers.DictField())
    memories = serializers.ListField(child=serializers.DictField())
    task_examples = serializers.ListField(child=serializers.DictField())
    packet_evidence = serializers.ListField(
        child=serializers.DictField(), help_text="task_generation: the target's top packet cards, one excerpt each."
    )
    text = serializers.CharField(help_text="The rendered block to put in the system prompt.")


class ContextQuerySerializer(StrictInputSerializer):
    message = StrictCharField(required=False, max_length=learning_settings.MESSAGE_MAX_CHARS, trim_whitespace=False)
    project = StrictCharField(required=False, allow_blank=True, max_length=100)
    surface = serializers.ChoiceField(choices=SURFACES, required=False, default="chat")
    plugin = StrictCharField(required=False, allow_blank=True, max_length=100)
    command = StrictCharField(required=False, allow_blank=True, max_length=100)
    tool = StrictCharField(required=False, allow_blank=True, max_length=100)
    tags = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=1000,
        help_text="Comma-separated tags of this call: agent learnings with tags reach only calls sharing one.",
    )
    target = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=100,
        help_text="An intelligence target of the project, by slug (default: the project's own).",
    )

    def validate_tags(self, value: str) -> list[str]:
        tags = [t.strip() for t in value.split(",") if t.strip()]
        if len(tags) > 20 or any(len(t) > 50 for t in tags):
            raise serializers.ValidationError("At most 20 tags of at most 50 characters each.")
        return tags


class ContextRecordInputSerializer(ContextQuerySerializer):
    response_id = StrictCharField(
        max_length=255, help_text="The response this context goes into; feedback on it judges the injections."
    )


_DESCRIPTION = (
    "Preferences, the workflow the message matches, the taste patterns of plugin/command (each with "
    "its notice), agent learnings scoped to project and tool, the memories the user may see, and for "
    "surface=task_generation up to three approved task examples."
)


def _context_for(request: Request, data: dict) -> tuple[User, Scope, Context]:
    user = subject_user(request)
    project = project_of_user(user, data.get("project"), actor=Actor.from_request(request))
    target_id = None
    if data.get("target"):
        if project is None:
            raise ApplicationError("A target is named within its project: send project too.", field="target")
        target_id = target_id_of(project_id=project.pk, slug=data["target"])
        if target_id is None:
            raise ApplicationError(f"No target {data['target']!r} in project {project.slug!r}.", field="target")
    scope = Scope(
        project_id=project.pk if project else None,
        surface=data["surface"],
        plugin=data.get("plugin", ""),
        command=data.get("command", ""),
        tool_name=data.get("tool", ""),
        tags=tuple(data.get("tags") or ()),
        target_id=target_id,
    )
    return user, scope, context_build(user=user, message=data.get("message"), scope=scope)


class ContextApi(APIView):
    @extend_schema(
        parameters=[ContextQuerySerializer],
        responses=ContextOutputSerializer,
        summary="Preview what would be injected into the user's next LLM call (writes nothing)",
        description=_DESCRIPTION + " A preview: nothing is recorded. To record the injections against a "
        "response (so feedback on it can mark them helped or hurt), POST the same fields with response_id.",
    )
    def get(self, request: Request) -> Response:
        if "response_id" in request.query_params:
            # A GET is safe: recording usages is a write, so it has its own verb.
            raise ApplicationError(
                "response_id records the injections, which a GET never does: POST to /context to record them.",
                field="response_id",
            )
        serializer = ContextQuerySerializer(data=request.query_params.dict())
        serializer.is_valid(raise_exception=True)
        _, _, context = _context_for(request, serializer.validated_data)
        return Response(ContextOutputSerializer(context.as_dict()).data)

    @extend_schema(
        request=ContextRecordInputSerializer,
        responses=ContextOutputSerializer,
        summary="What to inject into the user's next LLM call, recorded against response_id",
        description=_DESCRIPTION + " Each injection is recorded against response_id, so feedback on that "
        "response can mark them helped or hurt.",
    )
    def post(self, request: Request) -> Response:
        serializer = ContextRecordInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        user, scope, context = _context_for(request, data)
        usages.usages_record(user=user, context=context, scope=scope, response_id=data["response_id"])
        return Response(ContextOutputSerializer(context.as_dict()).data)
