"""A target's current packet: its cards by section, why each is there, and the source coverage."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.actors import Actor
from config.schema import error_example
from intelligence import selectors


class PacketCardOutputSerializer(serializers.Serializer):
    id = serializers.UUIDField(source="card.pk")
    card_type = serializers.CharField(source="card.card_type")
    status = serializers.CharField(source="card.status")
    title = serializers.CharField(source="card.title")
    summary = serializers.CharField(source="card.summary")
    owner = serializers.CharField(source="card.owner")
    due_at = serializers.DateTimeField(source="card.due_at", allow_null=True)
    confidence = serializers.FloatField(source="card.confidence")
    origin = serializers.CharField(source="card.origin", help_text="source (documents) or memory")
    target = serializers.CharField(source="card.target.slug", help_text="the target the card belongs to")
    why = serializers.CharField(help_text="why the card is in the packet, where")
    evidence_count = serializers.IntegerField(source="evidence_total")
    last_evidence_at = serializers.DateTimeField(source="card.last_evidence_at", allow_null=True)


class PacketSectionOutputSerializer(serializers.Serializer):
    key = serializers.CharField()
    title = serializers.CharField()
    cards = PacketCardOutputSerializer(source="entries", many=True)


class PacketCoverageOutputSerializer(serializers.Serializer):
    fed = serializers.ListField(child=serializers.JSONField())
    stale = serializers.ListField(child=serializers.JSONField())
    missing = serializers.ListField(child=serializers.JSONField())


class PacketMetaOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    version = serializers.IntegerField()
    built_at = serializers.DateTimeField()
    reason = serializers.CharField()


class PacketTargetOutputSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    kind = serializers.CharField()


class PacketOutputSerializer(serializers.Serializer):
    project = serializers.CharField(source="target.project.slug")
    target = PacketTargetOutputSerializer()
    packet = PacketMetaOutputSerializer(allow_null=True, help_text="null: no packet built yet")
    sections = PacketSectionOutputSerializer(many=True)
    source_coverage = PacketCoverageOutputSerializer(source="coverage")


class PacketCurrentApi(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("target", str, required=False, description="a target's slug (default: the project)")
        ],
        responses=PacketOutputSerializer,
        summary="The current packet of a project's target (project members, admins, the service)",
        description="The target's latest compiled packet: its insight cards by section (each with why it is "
        "there and its evidence count), and which sources fed it, are stale or are missing. `packet` is null "
        "before the first compilation. A project you may not read is a 404.",
        examples=[
            error_example(404, "not_found", "No such project or target.", name="unknown_project"),
        ],
    )
    def get(self, request: Request, project_slug: str) -> Response:
        target = selectors.target_readable(
            actor=Actor.from_request(request),
            project_slug=project_slug,
            target_slug=request.query_params.get("target") or None,
        )
        if target is None:
            raise NotFound("No such project or target.")
        return Response(PacketOutputSerializer(selectors.packet_view(target=target)).data)
