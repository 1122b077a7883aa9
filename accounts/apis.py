"""HTTP API for the caller's identity, projects and API keys."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.actors import Actor
from accounts.models import ApiKey, Project
from accounts.selectors import api_key_list, project_list
from accounts.services import api_key_create, api_key_projects_set, api_key_revoke
from config.api import ChoiceField, OnBehalfOf, StrictCharField, StrictInputSerializer
from config.exceptions import AccessDenied, ApplicationError
from config.schema import error_example


class MeOutputSerializer(serializers.Serializer):
    user_id = serializers.IntegerField(allow_null=True)
    username = serializers.CharField(allow_null=True)
    external_id = serializers.CharField(allow_null=True)
    is_admin = serializers.BooleanField()
    is_service = serializers.BooleanField(help_text="The request came with a service key.")
    acting_for = serializers.BooleanField(help_text="A service key acting for the user (with that user's rights).")
    api_key_prefix = serializers.CharField(allow_null=True)


class MeApi(APIView):
    @extend_schema(
        responses=MeOutputSerializer,
        summary="Who this request acts as",
        description="The user the request acts as (the key's owner, the session's user, or the user a service "
        "key names with X-On-Behalf-Of; null for a service key acting as itself), whether that is a staff "
        "admin, and which key was used. A quick way to check a key and an X-On-Behalf-Of header.",
    )
    def get(self, request: Request) -> Response:
        actor = Actor.from_request(request)
        user = actor.user
        return Response(
            MeOutputSerializer(
                {
                    "user_id": user.pk if user else None,
                    "username": user.username if user else None,
                    "external_id": user.external_id if user else None,
                    "is_admin": actor.is_admin,
                    "is_service": actor.is_service_key,
                    "acting_for": actor.acting_for,
                    "api_key_prefix": actor.api_key.prefix if actor.api_key else None,
                }
            ).data
        )


class ProjectOutputSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    created_at = serializers.DateTimeField()


class ProjectListApi(APIView):
    @extend_schema(
        responses=ProjectOutputSerializer(many=True),
        summary="Projects you can see",
        description="The projects the caller belongs to (staff admins and a service key acting as itself: all "
        "of them, within the key's project limit). Their slugs are what `project` fields take.",
    )
    def get(self, request: Request) -> Response:
        projects = project_list(actor=Actor.from_request(request))
        return Response(ProjectOutputSerializer(projects, many=True).data)


def projects_from_slugs(slugs: list[str]) -> list[Project]:
    projects = list(Project.objects.filter(slug__in=slugs))
    if missing := set(slugs) - {p.slug for p in projects}:
        raise ApplicationError(f"No project {sorted(missing)[0]!r}.", field="projects")
    return projects


class ApiKeyInputSerializer(StrictInputSerializer):
    name = StrictCharField(max_length=100)
    kind = ChoiceField(choices=ApiKey.Kind.choices, default=ApiKey.Kind.USER)
    projects = serializers.ListField(
        child=StrictCharField(max_length=100),
        max_length=1000,
        required=False,
        help_text="Service keys only: the projects the key is limited to (omitted or empty: every project).",
    )


class ApiKeyProjectsInputSerializer(StrictInputSerializer):
    projects = serializers.ListField(
        child=StrictCharField(max_length=100),
        max_length=1000,
        allow_empty=True,
        help_text="The projects the service key is limited to; an empty list lifts the limit.",
    )


class ApiKeyOutputSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    kind = serializers.CharField()
    prefix = serializers.CharField()
    owner = serializers.CharField(source="owner.username")
    created_at = serializers.DateTimeField()
    last_used_at = serializers.DateTimeField(allow_null=True)
    revoked_at = serializers.DateTimeField(allow_null=True)
    projects = serializers.SerializerMethodField(help_text="A service key's project limit (empty: none).")

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_projects(self, key: ApiKey) -> list[str]:
        return sorted(project.slug for project in key.projects.all())


class ApiKeyCreatedOutputSerializer(ApiKeyOutputSerializer):
    key = serializers.CharField(help_text="The raw key. Shown this once; only its digest is stored.")


SERVICE_KEYS_REFUSED = "Service keys cannot manage API keys."
STAFF_ONLY_LIMITS = "Only staff admins limit service keys to projects."


def _human_actor(request: Request) -> Actor:
    """Key management is for people: a service key cannot mint or revoke keys."""
    actor = Actor.from_request(request)
    if actor.is_service_key or actor.user is None:
        raise AccessDenied(SERVICE_KEYS_REFUSED)
    return actor


class ApiKeyListCreateApi(APIView):
    on_behalf_of = OnBehalfOf.REFUSED
    error_examples = [error_example(403, "permission_denied", SERVICE_KEYS_REFUSED)]

    @extend_schema(
        responses=ApiKeyOutputSerializer(many=True),
        summary="Your API keys (admins: all keys)",
        description="Every key you own with its prefix, kind, project limit and last use (staff admins: every "
        "key). Raw keys are never shown again after their creation.",
    )
    def get(self, request: Request) -> Response:
        return Response(ApiKeyOutputSerializer(api_key_list(actor=_human_actor(request)), many=True).data)

    @extend_schema(
        request=ApiKeyInputSerializer,
        responses={201: ApiKeyCreatedOutputSerializer},
        summary="Create an API key; the raw key is in this response only",
        description="A user key acts as you. A service key (`kind: service`, staff admins only) is the "
        "assistant backend's: it writes for anyone and acts for a user named with X-On-Behalf-Of; `projects` "
        "limits it to those projects. Only the key's SHA-256 digest is stored: keep `key` from this answer.",
    )
    def post(self, request: Request) -> Response:
        actor = _human_actor(request)
        serializer = ApiKeyInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        assert actor.user is not None  # _human_actor guarantees it
        data = serializer.validated_data
        projects = projects_from_slugs(data.pop("projects", []))
        key, raw = api_key_create(owner=actor.user, projects=projects, **data)
        return Response({**ApiKeyOutputSerializer(key).data, "key": raw}, status=status.HTTP_201_CREATED)


class ApiKeyRevokeApi(APIView):
    on_behalf_of = OnBehalfOf.REFUSED
    error_examples = [error_example(403, "permission_denied", SERVICE_KEYS_REFUSED)]

    @extend_schema(
        request=None,
        responses=ApiKeyOutputSerializer,
        summary="Revoke an API key",
        description="One of your keys (staff admins: any) stops working at once; its row stays, with "
        "`revoked_at`. Revoking a revoked key changes nothing.",
    )
    def post(self, request: Request, key_id: str) -> Response:
        key = api_key_list(actor=_human_actor(request)).filter(pk=key_id).first()
        if key is None:
            raise NotFound("No such API key.")
        return Response(ApiKeyOutputSerializer(api_key_revoke(api_key=key)).data)


class ApiKeyProjectsApi(APIView):
    on_behalf_of = OnBehalfOf.REFUSED
    error_examples = [
        error_example(403, "permission_denied", STAFF_ONLY_LIMITS, name="not_staff"),
        error_example(403, "permission_denied", SERVICE_KEYS_REFUSED, name="service_key"),
    ]

    @extend_schema(
        request=ApiKeyProjectsInputSerializer,
        responses=ApiKeyOutputSerializer,
        summary="Limit a service key to projects (staff admins)",
        description="Replaces the key's project limit: it then reads and writes project data of these projects "
        "only (acting as itself: nothing outside them). An empty list lifts the limit.",
    )
    def put(self, request: Request, key_id: str) -> Response:
        actor = _human_actor(request)
        if not actor.is_admin:
            raise AccessDenied(STAFF_ONLY_LIMITS)
        key = api_key_list(actor=actor).filter(pk=key_id).first()
        if key is None:
            raise NotFound("No such API key.")
        serializer = ApiKeyProjectsInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        key = api_key_projects_set(api_key=key, projects=projects_from_slugs(serializer.validated_data["projects"]))
        return Response(ApiKeyOutputSerializer(api_key_list(actor=actor).get(pk=key.pk)).data)
