"""HTTP API of preference learning: observe messages, read context, manage what was learned.

Mounted at /api/v1/ and, for existing clients, at /api/pdb/v1/reggie/. Every route acts
on the caller's own data (a service key names the user with X-On-Behalf-Of); another
user's ids answer 404, so they do not leak.
"""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.actors import Actor
from accounts.models import Project, User
from accounts.selectors import project_get_by_slug, project_get_for_member, user_is_project_member
from config.api import StrictCharField, StrictInputSerializer
from config.exceptions import AccessDenied, ApplicationError
from learning import selectors
from learning.context.build import Scope, context_build
from learning.context.render import notice
from learning.models import PREFERENCE_CATEGORIES, ChatMessage
from learning.services import agent, messages, preferences, taste, usages, workflows
from promotions.services import memory_share_propose


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


SURFACES = ("chat", "command", "task_generation", "search", "agent")


def _project_of_user(user: User, slug: str | None) -> Project | None:
    """A project the request's subject user belongs to (staff: any); whoever the caller is, the
    context and the items shared are that user's."""
    if not slug:
        return None
    project = project_get_for_member(slug=slug, user=user)
    if project is None:
        raise ApplicationError(f"No project {slug!r}.", field="project")
    if not user.is_staff and not getattr(project, "is_member", False):
        raise AccessDenied("The user is not a member of this project.", field="project")
    return project


class ContextOutputSerializer(serializers.Serializer):
    enabled = serializers.BooleanField()
    preferences = serializers.ListField(child=serializers.DictField())
    workflow = serializers.DictField(allow_null=True)
    taste_patterns = serializers.ListField(child=serializers.DictField())
    agent_learnings = serializers.ListField(child=serializers.DictField())
    memories = serializers.ListField(child=serializers.DictField())
    task_examples = serializers.ListField(child=serializers.DictField())
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
        message, context = messages.message_observe(
            user=user,
            session_id=data["session_id"],
            content=data["content"],
            role=data["role"],
            project=_project_of_user(user, data.get("project")),
        )
        body = {"message_id": message.pk, "context": context.as_dict()}
        return Response(MessageOutputSerializer(body).data, status=status.HTTP_201_CREATED)


class ContextQuerySerializer(StrictInputSerializer):
    message = StrictCharField(required=False, max_length=settings.MESSAGE_MAX_CHARS, trim_whitespace=False)
    project = StrictCharField(required=False, allow_blank=True, max_length=100)
    surface = serializers.ChoiceField(choices=SURFACES, required=False, default="chat")
    plugin = StrictCharField(required=False, allow_blank=True, max_length=100)
    command = StrictCharField(required=False, allow_blank=True, max_length=100)
    tool = StrictCharField(required=False, allow_blank=True, max_length=100)
    response_id = StrictCharField(required=False, allow_blank=True, max_length=255)


class ContextApi(APIView):
    @extend_schema(
        parameters=[ContextQuerySerializer],
        responses=ContextOutputSerializer,
        summary="What to inject into the user's next LLM call, on any surface",
        description=(
            "Preferences, the workflow the message matches, the taste patterns of plugin/command (each with "
            "its notice), agent learnings scoped to project and tool, the memories the user may see, and for "
            "surface=task_generation up to three approved task examples. Each injection is recorded against "
            "response_id, so feedback on that response can mark them helped or hurt."
        ),
    )
    def get(self, request: Request) -> Response:
        serializer = ContextQuerySerializer(data=request.query_params.dict())
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        user = subject_user(request)
        project = _project_of_user(user, data.get("project"))
        scope = Scope(
            project_id=project.pk if project else None,
            surface=data["surface"],
            plugin=data.get("plugin", ""),
            command=data.get("command", ""),
            tool_name=data.get("tool", ""),
        )
        context = context_build(user=user, message=data.get("message"), scope=scope)
        usages.usages_record(user=user, context=context, scope=scope, response_id=data.get("response_id", ""))
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
        row, created = preferences.preference_add_manual(user=subject_user(request), **serializer.validated_data)
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
        row = preferences.preference_set_active(preference=preference, active=serializer.validated_data["active"])
        return Response(PreferenceOutputSerializer(row).data)


class PreferenceDetailApi(APIView):
    @extend_schema(request=None, responses={204: None}, summary="Forget a preference")
    def delete(self, request: Request, preference_id: int) -> Response:
        preference = selectors.preference_get(user=subject_user(request), preference_id=preference_id)
        if preference is None:
            raise NotFound("No such preference.")
        preferences.preference_delete(preference=preference)
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
                workflows.workflow_set_active(workflow=workflow, active=serializer.validated_data["active"])
            ).data
        )


class WorkflowDetailApi(APIView):
    @extend_schema(request=None, responses={204: None}, summary="Forget a workflow")
    def delete(self, request: Request, workflow_id: int) -> Response:
        workflow = selectors.workflow_get(user=subject_user(request), workflow_id=workflow_id)
        if workflow is None:
            raise NotFound("No such workflow.")
        workflows.workflow_delete(workflow=workflow)
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


class TastePatternOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    plugin = serializers.CharField()
    command = serializers.CharField(allow_null=True)
    correction_type = serializers.CharField()
    direction = serializers.CharField()
    description = serializers.CharField()
    instruction = serializers.CharField()
    notice = serializers.SerializerMethodField()
    confidence = serializers.FloatField()
    observations = serializers.IntegerField()
    confirmations = serializers.IntegerField()
    rejections = serializers.IntegerField()
    consecutive_rejections = serializers.IntegerField()
    status = serializers.CharField()
    rejected_reason = serializers.CharField()
    evidence = serializers.JSONField()
    last_applied_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()

    def get_notice(self, pattern) -> str:
        return notice(pattern.instruction)


class TastePatternsOutputSerializer(serializers.Serializer):
    taste_patterns = TastePatternOutputSerializer(many=True)


class TastePatternListApi(APIView):
    @extend_schema(responses=TastePatternsOutputSerializer, summary="Your taste patterns, applied ones first")
    def get(self, request: Request) -> Response:
        rows = selectors.taste_pattern_list(user=subject_user(request))
        return Response({"taste_patterns": TastePatternOutputSerializer(rows, many=True).data})


class TastePatternStopApi(APIView):
    @extend_schema(request=None, responses=TastePatternOutputSerializer, summary='"Stop applying this"')
    def post(self, request: Request, pattern_id: int) -> Response:
        pattern = taste.taste_pattern_stop(user=subject_user(request), pattern_id=pattern_id)
        return Response(TastePatternOutputSerializer(pattern).data)


class CommandRunInputSerializer(StrictInputSerializer):
    plugin = StrictCharField(max_length=100)
    command = StrictCharField(max_length=100)
    parameters = serializers.DictField(required=False, default=dict)
    output = StrictCharField(max_length=settings.COMMAND_OUTPUT_MAX_CHARS, allow_blank=True, trim_whitespace=False)
    project = StrictCharField(required=False, allow_blank=True, max_length=100)
    session_id = StrictCharField(required=False, allow_blank=True, max_length=255)


class CommandRunOutputSerializer(serializers.Serializer):
    run_id = serializers.UUIDField()
    applied = TastePatternOutputSerializer(many=True, help_text="The taste patterns applied to this run.")
    notices = serializers.ListField(child=serializers.CharField(), help_text="Show these to the user.")


class CommandRunApi(APIView):
    @extend_schema(
        request=CommandRunInputSerializer,
        responses={201: CommandRunOutputSerializer},
        summary="Record a run of a tool (post_command); returns the taste patterns applied to it",
    )
    def post(self, request: Request) -> Response:
        serializer = CommandRunInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        user = subject_user(request)
        result = taste.command_run_record(
            actor=Actor.from_request(request),
            user=user,
            plugin=data["plugin"],
            command=data["command"],
            output=data["output"],
            parameters=data["parameters"],
            project=_project_of_user(user, data.get("project")),
            session_id=data.get("session_id", ""),
        )
        body = {
            "run_id": result.run_id,
            "applied": result.applied,
            "notices": [notice(p.instruction) for p in result.applied],
        }
        return Response(CommandRunOutputSerializer(body).data, status=status.HTTP_201_CREATED)


class CommandDecisionInputSerializer(StrictInputSerializer):
    run_id = serializers.UUIDField()
    decision = serializers.ChoiceField(choices=taste.DECISIONS)
    edited_output = StrictCharField(
        required=False, allow_blank=True, max_length=settings.COMMAND_OUTPUT_MAX_CHARS, trim_whitespace=False
    )
    parameters = serializers.DictField(required=False)
    reason = StrictCharField(required=False, allow_blank=True, max_length=settings.FEEDBACK_MAX_TEXT_CHARS)


class CorrectionOutputSerializer(serializers.Serializer):
    type = serializers.CharField()
    direction = serializers.CharField()
    detail = serializers.DictField()


class CommandDecisionOutputSerializer(serializers.Serializer):
    decision = serializers.CharField()
    corrections = CorrectionOutputSerializer(many=True, help_text="What the edit changed, derived from the texts.")
    confirmed = serializers.ListField(child=serializers.IntegerField())
    overridden = serializers.ListField(child=serializers.IntegerField())
    rejected = serializers.ListField(child=serializers.IntegerField())
    patterns = TastePatternOutputSerializer(many=True, help_text="Patterns this decision created or updated.")


class CommandDecisionApi(APIView):
    @extend_schema(
        request=CommandDecisionInputSerializer,
        responses={201: CommandDecisionOutputSerializer},
        summary="Record what the user did with a run's output (decision_point)",
    )
    def post(self, request: Request) -> Response:
        serializer = CommandDecisionInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        result = taste.command_decision_record(
            actor=Actor.from_request(request),
            user=subject_user(request),
            run_id=str(data["run_id"]),
            decision=data["decision"],
            edited_output=data.get("edited_output"),
            parameters=data.get("parameters"),
            reason=data.get("reason", ""),
        )
        return Response(CommandDecisionOutputSerializer(result).data, status=status.HTTP_201_CREATED)


class ResponseFeedbackInputSerializer(StrictInputSerializer):
    response_id = StrictCharField(max_length=255)
    rating = serializers.ChoiceField(choices=sorted(agent.RATINGS))
    reason = StrictCharField(required=False, allow_blank=True, max_length=settings.FEEDBACK_MAX_TEXT_CHARS)
    response_text = StrictCharField(
        required=False, allow_blank=True, max_length=settings.COMMAND_OUTPUT_MAX_CHARS, trim_whitespace=False
    )
    tool_name = StrictCharField(required=False, allow_blank=True, max_length=100)
    tool_trace = serializers.JSONField(required=False)
    tags = serializers.ListField(child=StrictCharField(max_length=50), required=False, max_length=20)
    project = StrictCharField(required=False, allow_blank=True, max_length=100)
    session_id = StrictCharField(required=False, allow_blank=True, max_length=255)


class ResponseFeedbackOutputSerializer(serializers.Serializer):
    event_id = serializers.UUIDField()
    usages_judged = serializers.IntegerField(help_text="Injected learnings now marked helped or hurt.")


class ResponseFeedbackApi(APIView):
    @extend_schema(
        request=ResponseFeedbackInputSerializer,
        responses={201: ResponseFeedbackOutputSerializer},
        summary="Thumbs up or down on an assistant response",
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
            project=_project_of_user(user, data.get("project")),
            session_id=data.get("session_id", ""),
        )
        body = {"event_id": event.pk, "usages_judged": judged}
        return Response(ResponseFeedbackOutputSerializer(body).data, status=status.HTTP_201_CREATED)


class ShareInputSerializer(StrictInputSerializer):
    visibility = serializers.ChoiceField(choices=["team", "project"])
    project = StrictCharField(required=False, allow_blank=True, max_length=100)
    notes = StrictCharField(required=False, allow_blank=True, max_length=10_000)


class ShareOutputSerializer(serializers.Serializer):
    promotion_id = serializers.UUIDField()
    status = serializers.CharField()
    created = serializers.BooleanField(help_text="False: this item already had an open candidate.")


class _ShareApi(APIView):
    """Ask for one of your own private items to be shared: it becomes a promotion candidate that a
    staff admin reviews; nothing is shared before it is approved and applied."""

    subject_type = ""

    @extend_schema(request=ShareInputSerializer, responses={201: ShareOutputSerializer, 200: ShareOutputSerializer})
    def post(self, request: Request, item_id: str) -> Response:
        user = subject_user(request)
        owned = (
            selectors.memory_get_own(user=user, memory_id=item_id)
            if self.subject_type == "memory"
            else selectors.preference_get(user=user, preference_id=int(item_id))
        )
        if owned is None:
            raise NotFound(f"No such {self.subject_type}.")
        serializer = ShareInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        project = _project_of_user(user, data.get("project"))
        promotion, created = memory_share_propose(
            actor=Actor.from_request(request),
            subject_type=self.subject_type,
            subject_id=str(owned.pk),
            visibility=data["visibility"],
            project=project,
            notes=data.get("notes", ""),
        )
        body = {"promotion_id": promotion.pk, "status": promotion.status, "created": created}
        return Response(ShareOutputSerializer(body).data, status=status.HTTP_201_CREATED if created else 200)


class MemoryShareApi(_ShareApi):
    subject_type = "memory"


class PreferenceShareApi(_ShareApi):
    subject_type = "preference"
