"""Asking to share one of your own private memories or preferences with a team or project: the
request becomes a ``memory`` promotion candidate that a staff admin reviews; nothing is shared
before it is approved and applied. Served at ``memories/<id>/share``, ``preferences/<id>/share`` and
``workflows/<id>/share`` (a ``workflow`` candidate; under /api/v1/ and the /api/pdb/v1/reggie/ mount)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.actors import Actor
from config.api import ChoiceField, StrictCharField, StrictInputSerializer
from learning.apis.common import UserDataApi, project_of_user, subject_user
from learning.selectors import memory_get_own, preference_get, workflow_get
from promotions.services import memory_share_propose, workflow_share_propose


class ShareInputSerializer(StrictInputSerializer):
    visibility = ChoiceField(choices=["team", "project"])
    project = StrictCharField(required=False, allow_blank=True, max_length=100)
    notes = StrictCharField(required=False, allow_blank=True, max_length=10_000)


class ShareOutputSerializer(serializers.Serializer):
    promotion_id = serializers.UUIDField()
    status = serializers.CharField()
    created = serializers.BooleanField(help_text="False: this item already had an open candidate.")


SHARE_RESPONSES = {
    201: OpenApiResponse(ShareOutputSerializer, description="A new promotion candidate, for a staff admin to review."),
    200: OpenApiResponse(ShareOutputSerializer, description="The item already had an open candidate: that one."),
}


class _ShareApi(UserDataApi):
    """Ask for one of your own private items to be shared: it becomes a promotion candidate that a
    staff admin reviews; nothing is shared before it is approved and applied."""

    subject_type = ""

    def schema_texts(self) -> tuple[str, str]:
        return (
            f"Ask to share one of your {self.subject_type}s with a team or project",
            f"One of your own private {self.subject_type}s becomes a `memory` promotion candidate: a staff admin "
            "reviews it, and once it is approved and applied a copy reaches the team's or the project's members "
            "(`visibility`, and `project` for a project). Nothing is shared before that; text that tries to "
            "steer the assistant is never shared.",
        )

    @extend_schema(request=ShareInputSerializer, responses=SHARE_RESPONSES)
    def post(self, request: Request, item_id: str) -> Response:
        user = subject_user(request)
        owned = (
            memory_get_own(user=user, memory_id=item_id)
            if self.subject_type == "memory"
            else preference_get(user=user, preference_id=int(item_id))
        )
        if owned is None:
            raise NotFound(f"No such {self.subject_type}.")
        serializer = ShareInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        promotion, created = memory_share_propose(
            actor=Actor.from_request(request),
            subject_type=self.subject_type,
            subject_id=str(owned.pk),
            visibility=data["visibility"],
            project=project_of_user(user, data.get("project"), actor=Actor.from_request(request)),
            notes=data.get("notes", ""),
        )
        body = {"promotion_id": promotion.pk, "status": promotion.status, "created": created}
        return Response(
            ShareOutputSerializer(body).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK
        )


class MemoryShareApi(_ShareApi):
    subject_type = "memory"


class PreferenceShareApi(_ShareApi):
    subject_type = "preference"


class WorkflowShareApi(UserDataApi):
    """Ask for one of your own learned workflows to be shared with a project (or the team): a
    ``workflow`` promotion candidate; once applied, a copy reaches the members' context."""

    @extend_schema(
        request=ShareInputSerializer,
        responses=SHARE_RESPONSES,
        summary="Ask to share one of your workflows with a project or the team",
        description="One of your own learned workflows becomes a `workflow` promotion candidate: once a staff "
        "admin applies it, a copy reaches the context of the project's members (or the team's); pausing the "
        "promotion takes it out again.",
    )
    def post(self, request: Request, item_id: int) -> Response:
        user = subject_user(request)
        workflow = workflow_get(user=user, workflow_id=item_id)
        if workflow is None or workflow.visibility != "private":
            raise NotFound("No such workflow.")
        serializer = ShareInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        promotion, created = workflow_share_propose(
            actor=Actor.from_request(request),
            workflow_id=workflow.pk,
            visibility=data["visibility"],
            project=project_of_user(user, data.get("project"), actor=Actor.from_request(request)),
            notes=data.get("notes", ""),
        )
        body = {"promotion_id": promotion.pk, "status": promotion.status, "created": created}
        return Response(
            ShareOutputSerializer(body).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK
        )
