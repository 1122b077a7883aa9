"""HTTP API of the promotion ledger (staff admins): list, read, propose, preview, and each lifecycle action."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.actors import Actor
from config.api import (
    NewestFirstCursorPagination,
    StrictCharField,
    StrictInputSerializer,
    filterset_parameters,
    paginated_list,
)
from config.exceptions import AccessDenied
from promotions import selectors, services
from promotions.destinations import WRITERS, writer_for
from promotions.filters import PromotionFilter
from promotions.previews import retrieval_weight_preview


class PromotionOutputSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    status = serializers.CharField()
    promotion_type = serializers.CharField()
    project = serializers.CharField(source="project.slug", allow_null=True)
    target = serializers.IntegerField(source="target_id", allow_null=True)
    promotion_path = serializers.CharField()
    rule = serializers.CharField()
    subject_type = serializers.CharField()
    subject_id = serializers.CharField()
    source_event_ids = serializers.JSONField()
    destination_table = serializers.CharField()
    destination_record_id = serializers.CharField()
    confidence = serializers.FloatField()
    risk_level = serializers.CharField()
    proposed_learning = serializers.JSONField()
    review_notes = serializers.CharField()
    reviewed_by = serializers.CharField(source="reviewed_by.username", allow_null=True)
    reviewed_at = serializers.DateTimeField(allow_null=True)
    applied_at = serializers.DateTimeField(allow_null=True)
    expires_at = serializers.DateTimeField(allow_null=True)
    superseded_by = serializers.UUIDField(source="superseded_by_id", allow_null=True)


class ProposeInputSerializer(StrictInputSerializer):
    promotion_type = serializers.ChoiceField(choices=sorted(WRITERS))
    subject_type = StrictCharField(required=False, max_length=50, help_text="default: the type's usual subject")
    subject_id = StrictCharField(max_length=255)
    proposed_learning = serializers.DictField(
        required=False, help_text='e.g. {"visibility": "project", "project": "apollo"} for a memory'
    )
    notes = StrictCharField(required=False, allow_blank=True, max_length=10_000)
    confidence = serializers.FloatField(required=False, default=0.5, min_value=0, max_value=1)


class ActionInputSerializer(StrictInputSerializer):
    notes = StrictCharField(required=False, allow_blank=True, max_length=10_000)
    superseded_by = serializers.UUIDField(required=False, allow_null=True)


def admin_actor(request: Request) -> Actor:
    """The request's actor, who must be a staff admin (the whole promotions API is theirs)."""
    actor = Actor.from_request(request)
    if not actor.is_admin:
        raise AccessDenied("Only staff admins review promotions.")
    return actor


class PromotionListCreateApi(APIView):
    pagination_class = NewestFirstCursorPagination

    @extend_schema(
        parameters=filterset_parameters(PromotionFilter),
        responses=PromotionOutputSerializer(many=True),
        summary="The promotion ledger, newest first",
    )
    def get(self, request: Request) -> Response:
        return paginated_list(
            request=request,
            view=self,
            queryset=selectors.promotion_list(actor=admin_actor(request)),
            filterset_class=PromotionFilter,
            output_serializer=PromotionOutputSerializer,
        )

    @extend_schema(
        request=ProposeInputSerializer,
        responses={201: PromotionOutputSerializer, 200: PromotionOutputSerializer},
        summary="Propose a candidate by hand (the subject's open candidate if it has one)",
    )
    def post(self, request: Request) -> Response:
        actor = admin_actor(request)
        serializer = ProposeInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        promotion, created = services.promotion_propose(
            actor=actor,
            promotion_type=data["promotion_type"],
            subject_type=data.get("subject_type") or writer_for(data["promotion_type"]).subject_types[0],
            subject_id=data["subject_id"],
            proposed_learning=data.get("proposed_learning"),
            confidence=data["confidence"],
            notes=data.get("notes", ""),
            rule="admin_proposal: proposed by hand by a staff admin, for review",
        )
        return Response(
            PromotionOutputSerializer(promotion).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK
        )


class PromotionDetailApi(APIView):
    @extend_schema(responses=PromotionOutputSerializer, summary="One promotion")
    def get(self, request: Request, promotion_id: str) -> Response:
        promotion = selectors.promotion_get(actor=admin_actor(request), promotion_id=promotion_id)
        if promotion is None:
            raise NotFound("No such promotion.")
        return Response(PromotionOutputSerializer(promotion).data)


class PromotionActionApi(APIView):
    """approve | reject | apply | pause | resume | supersede."""

    action_name = ""

    @extend_schema(request=ActionInputSerializer, responses=PromotionOutputSerializer)
    def post(self, request: Request, promotion_id: str) -> Response:
        actor = admin_actor(request)
        if selectors.promotion_get(actor=actor, promotion_id=promotion_id) is None:
            raise NotFound("No such promotion.")
        serializer = ActionInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        superseded_by = serializer.validated_data.get("superseded_by")
        promotion = services.promotion_transition(
            actor=actor,
            promotion_id=promotion_id,
            action=self.action_name,
            notes=serializer.validated_data.get("notes", ""),
            superseded_by=str(superseded_by) if superseded_by else None,
        )
        return Response(PromotionOutputSerializer(promotion).data)


class PreviewQuerySerializer(serializers.Serializer):
    trace_id = serializers.UUIDField()
    query = serializers.CharField()
    rank_before = serializers.IntegerField(allow_null=True)
    rank_after = serializers.IntegerField(allow_null=True)
    ndcg_before = serializers.FloatField(allow_null=True)
    ndcg_after = serializers.FloatField(allow_null=True)


class PreviewSummarySerializer(serializers.Serializer):
    touched = serializers.IntegerField()
    rank_changed = serializers.IntegerField()
    judged = serializers.IntegerField()
    improved = serializers.IntegerField()
    worsened = serializers.IntegerField()
    mean_ndcg_change = serializers.FloatField(allow_null=True)


class PreviewOutputSerializer(serializers.Serializer):
    promotion = serializers.UUIDField()
    chunk = serializers.IntegerField()
    multiplier = serializers.FloatField()
    scope = serializers.CharField()
    queries = PreviewQuerySerializer(many=True)
    summary = PreviewSummarySerializer()


class PromotionPreviewApi(APIView):
    @extend_schema(
        responses=PreviewOutputSerializer, summary="Impact preview: recent queries replayed with and without the weight"
    )
    def get(self, request: Request, promotion_id: str) -> Response:
        promotion = selectors.promotion_get(actor=admin_actor(request), promotion_id=promotion_id)
        if promotion is None:
            raise NotFound("No such promotion.")
        return Response(PreviewOutputSerializer(retrieval_weight_preview(promotion=promotion)).data)
