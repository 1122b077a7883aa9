"""The user's learned workflows: list, switch on or off, forget, undo."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from learning import selectors
from learning.apis.common import UNDO_HELP, NoInputSerializer, ToggleInputSerializer, UserDataApi, subject_user
from learning.services import workflows


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
    visibility = serializers.CharField(help_text="private, or project/team for a copy shared through a promotion")


class WorkflowsOutputSerializer(serializers.Serializer):
    workflows = WorkflowOutputSerializer(many=True)


class WorkflowListApi(UserDataApi):
    @extend_schema(
        responses=WorkflowsOutputSerializer,
        summary="Your learned workflows",
        description="Tasks the user asked for three or more times, in any wording: the name, the trigger, "
        "the steps and output the user wants; `visibility` project/team marks a copy shared by a promotion.",
    )
    def get(self, request: Request) -> Response:
        rows = selectors.workflow_list(user=subject_user(request))
        return Response({"workflows": WorkflowOutputSerializer(rows, many=True).data})


class WorkflowToggleApi(UserDataApi):
    @extend_schema(
        request=ToggleInputSerializer,
        responses=WorkflowOutputSerializer,
        summary="Switch a workflow on or off",
        description="An inactive workflow is kept but never offered in the context.",
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


class WorkflowDetailApi(UserDataApi):
    @extend_schema(
        request=None,
        responses={204: None},
        summary="Forget a workflow",
        description="Deletes the workflow; similar requests may teach it again later.",
    )
    def delete(self, request: Request, workflow_id: int) -> Response:
        workflow = selectors.workflow_get(user=subject_user(request), workflow_id=workflow_id)
        if workflow is None:
            raise NotFound("No such workflow.")
        workflows.workflow_delete(workflow=workflow)
        return Response(status=status.HTTP_204_NO_CONTENT)


class WorkflowUndoOutputSerializer(serializers.Serializer):
    undone = serializers.CharField(help_text="The change undone: switched_off, switched_on or deleted.")
    workflow = WorkflowOutputSerializer()


class WorkflowUndoApi(UserDataApi):
    @extend_schema(
        request=None,
        responses=WorkflowUndoOutputSerializer,
        summary="Undo your last change to a workflow (a switch, a deletion)",
        description=UNDO_HELP,
    )
    def post(self, request: Request, workflow_id: int) -> Response:
        user = subject_user(request)
        NoInputSerializer(data=request.data).is_valid(raise_exception=True)
        action, row = workflows.workflow_undo(user=user, workflow_id=workflow_id)
        return Response(WorkflowUndoOutputSerializer({"undone": action, "workflow": row}).data)
