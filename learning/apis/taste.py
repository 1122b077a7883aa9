"""Taste: a tool's runs, the user's decision on each output, and the patterns learned from them."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.actors import Actor
from config.api import ChoiceField, StrictBooleanField, StrictCharField, StrictInputSerializer
from config.schema import error_example
from feedback.conf import feedback_settings
from learning import selectors
from learning.apis.common import UNDO_HELP, NoInputSerializer, UserDataApi, project_of_user, subject_user
from learning.conf import learning_settings
from learning.context.render import notice
from learning.services import taste


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


class TastePatternListApi(UserDataApi):
    @extend_schema(
        responses=TastePatternsOutputSerializer,
        summary="Your taste patterns, applied ones first",
        description="What the user's edits, rejections and re-runs of a tool's output taught: the instruction "
        "applied to later runs of that plugin/command (with the notice shown to the user), its evidence, and "
        "its state (candidate, active, rejected).",
    )
    def get(self, request: Request) -> Response:
        rows = selectors.taste_pattern_list(user=subject_user(request))
        return Response({"taste_patterns": TastePatternOutputSerializer(rows, many=True).data})


class TastePatternStopApi(UserDataApi):
    @extend_schema(
        request=None,
        responses=TastePatternOutputSerializer,
        summary='"Stop applying this"',
        description="The user's answer to a taste pattern's notice: it is rejected and no longer applied.",
    )
    def post(self, request: Request, pattern_id: int) -> Response:
        pattern = taste.taste_pattern_stop(user=subject_user(request), pattern_id=pattern_id)
        return Response(TastePatternOutputSerializer(pattern).data)


class TastePatternResumeApi(UserDataApi):
    @extend_schema(
        request=None,
        responses=TastePatternOutputSerializer,
        summary="Resume a stopped taste pattern",
        description="Applied again: active if its confirmations made it so, else on trial; its run of overrides "
        "is cleared, and a live pattern of the other direction in the same scope is superseded. 409 naming "
        "`status` when it is applied already.",
    )
    def post(self, request: Request, pattern_id: int) -> Response:
        user = subject_user(request)
        NoInputSerializer(data=request.data).is_valid(raise_exception=True)
        return Response(TastePatternOutputSerializer(taste.taste_pattern_resume(user=user, pattern_id=pattern_id)).data)


class TastePatternUndoOutputSerializer(serializers.Serializer):
    undone = serializers.CharField(help_text="The change undone: stopped or resumed.")
    taste_pattern = TastePatternOutputSerializer()


class TastePatternUndoApi(UserDataApi):
    @extend_schema(
        request=None,
        responses=TastePatternUndoOutputSerializer,
        summary="Undo your last stop or resume of a taste pattern",
        description=UNDO_HELP,
    )
    def post(self, request: Request, pattern_id: int) -> Response:
        user = subject_user(request)
        NoInputSerializer(data=request.data).is_valid(raise_exception=True)
        action, pattern = taste.taste_pattern_undo(user=user, pattern_id=pattern_id)
        return Response(TastePatternUndoOutputSerializer({"undone": action, "taste_pattern": pattern}).data)


class CommandRunInputSerializer(StrictInputSerializer):
    plugin = StrictCharField(max_length=100)
    command = StrictCharField(max_length=100)
    parameters = serializers.DictField(required=False, default=dict)
    output = StrictCharField(
        max_length=learning_settings.COMMAND_OUTPUT_MAX_CHARS, allow_blank=True, trim_whitespace=False
    )
    project = StrictCharField(required=False, allow_blank=True, max_length=100)
    session_id = StrictCharField(required=False, allow_blank=True, max_length=255)
    succeeded = StrictBooleanField(
        required=False,
        allow_null=True,
        default=None,
        help_text="Did the tool report success? A success not corrected before the next run of the "
        "command confirms the patterns applied to it.",
    )


class CommandRunOutputSerializer(serializers.Serializer):
    run_id = serializers.UUIDField()
    applied = TastePatternOutputSerializer(many=True, help_text="The taste patterns applied to this run.")
    notices = serializers.ListField(child=serializers.CharField(), help_text="Show these to the user.")
    confirmed = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="Patterns confirmed by earlier successful runs of the command that were not corrected.",
    )


class CommandRunApi(UserDataApi):
    @extend_schema(
        request=CommandRunInputSerializer,
        responses={201: CommandRunOutputSerializer},
        summary="Record a run of a tool (post_command); returns the taste patterns applied to it",
        description="Call it after a tool (plugin/command) produced its output for the user. The answer "
        "lists the taste patterns applied to this run and the `notices` to show the user; keep `run_id` to "
        "report what the user did with the output.",
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
            project=project_of_user(user, data.get("project"), actor=Actor.from_request(request)),
            session_id=data.get("session_id", ""),
            succeeded=data["succeeded"],
        )
        body = {
            "run_id": result.run_id,
            "applied": result.applied,
            "notices": [notice(p.instruction) for p in result.applied],
            "confirmed": result.confirmed,
        }
        return Response(CommandRunOutputSerializer(body).data, status=status.HTTP_201_CREATED)


class CommandDecisionInputSerializer(StrictInputSerializer):
    run_id = serializers.UUIDField()
    decision = ChoiceField(choices=taste.DECISIONS)
    edited_output = StrictCharField(
        required=False, allow_blank=True, max_length=learning_settings.COMMAND_OUTPUT_MAX_CHARS, trim_whitespace=False
    )
    parameters = serializers.DictField(
        required=False,
        allow_null=True,
        help_text="A rerun's new parameters; without them (or null) the rerun is a plain re-run of the same inputs.",
    )
    reason = StrictCharField(required=False, allow_blank=True, max_length=feedback_settings.FEEDBACK_MAX_TEXT_CHARS)


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


class CommandDecisionApi(UserDataApi):
    @extend_schema(
        request=CommandDecisionInputSerializer,
        responses={201: CommandDecisionOutputSerializer},
        summary="Record what the user did with a run's output (decision_point)",
        description="Accepted, edited (with `edited_output`), rejected or re-run: an edit's corrections are "
        "derived from the two texts, and the same correction seen again and again becomes a taste pattern. "
        "A run not recorded first is a 404 naming `run_id`.",
        examples=[
            error_example(
                404,
                "not_found",
                "No such run: record the post_command before its decision.",
                field="run_id",
                name="unknown_run",
            )
        ],
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
