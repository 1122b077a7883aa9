"""Targets: the projects and named scopes learning is anchored to, with the profiles attribution
matches documents against. Members read their projects' targets; staff admins and the project's
admins create and change them."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.actors import Actor
from config.api import (
    ChoiceField,
    NewestFirstCursorPagination,
    StrictBooleanField,
    StrictCharField,
    StrictInputSerializer,
    filterset_parameters,
    paginated_list,
)
from config.schema import error_example
from intelligence import selectors
from intelligence.filters import TargetFilter
from intelligence.models import TargetKind
from intelligence.services import targets as services


class TargetOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    project = serializers.CharField(source="project.slug")
    kind = serializers.CharField()
    slug = serializers.CharField()
    name = serializers.CharField()
    aliases = serializers.ListField(child=serializers.CharField())
    client_names = serializers.ListField(child=serializers.CharField())
    addresses = serializers.ListField(child=serializers.CharField())
    participants = serializers.ListField(child=serializers.CharField())
    external_ids = serializers.ListField(child=serializers.CharField())
    active = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


def _profile_list() -> serializers.ListField:
    return serializers.ListField(child=StrictCharField(max_length=200), required=False, max_length=200)


class TargetCreateInputSerializer(StrictInputSerializer):
    project = StrictCharField(max_length=100)
    name = StrictCharField(max_length=200)
    slug = StrictCharField(max_length=100, required=False)
    kind = ChoiceField(choices=TargetKind.values, required=False, default=TargetKind.SCOPE)
    aliases = _profile_list()
    client_names = _profile_list()
    addresses = _profile_list()
    participants = _profile_list()
    external_ids = _profile_list()


class TargetUpdateInputSerializer(StrictInputSerializer):
    name = StrictCharField(max_length=200, required=False)
    aliases = _profile_list()
    client_names = _profile_list()
    addresses = _profile_list()
    participants = _profile_list()
    external_ids = _profile_list()
    active = StrictBooleanField(required=False)


class TargetListCreateApi(APIView):
    pagination_class = NewestFirstCursorPagination

    @extend_schema(
        parameters=filterset_parameters(TargetFilter),
        responses=TargetOutputSerializer(many=True),
        summary="Targets of the projects the caller may read, newest first",
        description="Each project has its own target, and may have named scopes (a client, a site, a "
        "workstream) with the profile attribution matches documents against.",
    )
    def get(self, request: Request) -> Response:
        return paginated_list(
            request=request,
            view=self,
            queryset=selectors.targets_visible(actor=Actor.from_request(request)).select_related("project"),
            filterset_class=TargetFilter,
            output_serializer=TargetOutputSerializer,
        )

    @extend_schema(
        request=TargetCreateInputSerializer,
        responses={201: TargetOutputSerializer},
        summary="Create a target with its profile (staff admins and the project's admins)",
        description="A named scope of a project, with the names, aliases, addresses and participants that "
        "attribute documents to it. A slug the project already has is a 409 naming `slug`.",
        examples=[
            error_example(
                409, "conflict", "Project 'demo' already has a target 'north-depot'.", field="slug", name="slug_taken"
            )
        ],
    )
    def post(self, request: Request) -> Response:
        serializer = TargetCreateInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        target = services.target_create(
            actor=Actor.from_request(request),
            project_slug=data["project"],
            name=data["name"],
            slug=data.get("slug", ""),
            kind=data["kind"],
            profile={key: data[key] for key in services.PROFILE_FIELDS if key in data},
        )
        return Response(TargetOutputSerializer(target).data, status=status.HTTP_201_CREATED)


class TargetDetailApi(APIView):
    @extend_schema(
        responses=TargetOutputSerializer,
        summary="One target and its profile",
        description="A target of a project you may read (404 otherwise).",
    )
    def get(self, request: Request, target_id: int) -> Response:
        target = selectors.target_get(actor=Actor.from_request(request), target_id=target_id)
        if target is None:
            raise NotFound("No such target.")
        return Response(TargetOutputSerializer(target).data)

    @extend_schema(
        request=TargetUpdateInputSerializer,
        responses=TargetOutputSerializer,
        summary="Change a target's name, profile or active flag (staff admins and the project's admins)",
        description="Only the fields sent change; an inactive target receives no new documents.",
    )
    def patch(self, request: Request, target_id: int) -> Response:
        actor = Actor.from_request(request)
        if selectors.target_get(actor=actor, target_id=target_id) is None:
            raise NotFound("No such target.")
        serializer = TargetUpdateInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        target = services.target_update(actor=actor, target_id=target_id, changes=dict(serializer.validated_data))
        return Response(TargetOutputSerializer(target).data)
