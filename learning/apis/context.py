"""The context to inject into the user's next LLM call, on any surface."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.actors import Actor
from accounts.models import User
from config.api import ChoiceField, StrictCharField, StrictInputSerializer
from config.exceptions import ApplicationError
from intelligence.selectors import target_id_of
from learning.apis.common import SURFACES, UserDataApi, project_of_user, subject_user
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
    surface = ChoiceField(choices=SURFACES, required=False, default="chat")
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
    "surface=task_generation up to three approved task examples. Put `text` into the system prompt of "
    "the call; the structured lists say what it contains."
)

# What the demo's alice gets (./scripts/demo), as the API answered it.
CONTEXT_TEXT = (
    "[User Preferences]\n- Keep your answers short.\n- Answer in British English.\n"
    "- I'm a senior engineer, skip the basics.\n\n"
    "[Known Workflow: Summarize the sales report of the week]\n"
    "The user regularly asks for this. The current message looks like another request of this kind.\n"
    'Trigger: requests like "Summarize the sales report of the week for the leadership team"\n'
    'If this message matches, offer to do "Summarize the sales report of the week" the way the user '
    "usually wants it, without being asked.\n\n"
    '[About the User]\n- The user said: "I follow a strict gluten-free diet"'
)
CONTEXT_EXAMPLE = {
    "enabled": True,
    "preferences": [
        {
            "id": 1,
            "category": "length",
            "preference": "keep-your-answers-short-a7e038e4",
            "description": "Keep your answers short.",
            "confidence": 0.9,
            "needs_review": False,
        },
        {
            "id": 3,
            "category": "output",
            "preference": "answer-in-british-english-63a675c1",
            "description": "Answer in British English.",
            "confidence": 0.9,
            "needs_review": False,
        },
        {
            "id": 2,
            "category": "expertise",
            "preference": "im-a-senior-engineer-skip-the-basics-36c6cf7a",
            "description": "I'm a senior engineer, skip the basics.",
            "confidence": 0.78,
            "needs_review": False,
        },
    ],
    "workflow": {
        "id": 1,
        "workflow_name": "Summarize the sales report of the week",
        "trigger_pattern": "Summarize the sales report of the week for the leadership team",
        "preferred_output": "",
        "confidence": 0.841,
        "similarity": 0.408,
    },
    "taste_patterns": [],
    "agent_learnings": [],
    "memories": [
        {
            "id": "07439458-9ec7-40e3-b193-613697deefa3",
            "kind": "fact",
            "content": "I follow a strict gluten-free diet",
            "visibility": "private",
            "project": None,
        }
    ],
    "task_examples": [],
    "packet_evidence": [],
    "text": CONTEXT_TEXT,
}


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


class ContextApi(UserDataApi):
    @extend_schema(
        parameters=[ContextQuerySerializer],
        responses=ContextOutputSerializer,
        summary="Preview what would be injected into the user's next LLM call (writes nothing)",
        description=_DESCRIPTION + " A preview: nothing is recorded. To record the injections against a "
        "response (so feedback on it can mark them helped or hurt), POST the same fields with response_id.",
        examples=[OpenApiExample("Alice's context", value=CONTEXT_EXAMPLE, response_only=True)],
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
        "response (`POST /responses/feedback` with the same response_id) can mark them helped or hurt. "
        "Answers 200: the context is computed, the recorded usages are a side effect.",
        examples=[
            OpenApiExample(
                "Before answering",
                value={
                    "message": "Summarise the weekly sales report",
                    "project": "demo",
                    "surface": "chat",
                    "response_id": "resp-7f3a",
                },
                request_only=True,
            ),
            OpenApiExample("Alice's context", value=CONTEXT_EXAMPLE, response_only=True),
        ],
    )
    def post(self, request: Request) -> Response:
        serializer = ContextRecordInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        user, scope, context = _context_for(request, data)
        usages.usages_record(user=user, context=context, scope=scope, response_id=data["response_id"])
        return Response(ContextOutputSerializer(context.as_dict()).data)
