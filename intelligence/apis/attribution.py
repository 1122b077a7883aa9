"""The attribution review queue (staff admins): list and read candidates, and decide them."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
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
from config.exceptions import AccessDenied, ApplicationError
from intelligence import selectors
from intelligence.filters import STATUSES, AttributionCandidateFilter
from intelligence.services.attribution_reviews import attribution_candidate_decide


class EvidenceOutputSerializer(serializers.Serializer):
    kind = serializers.CharField()
    value = serializers.CharField()
    weight = serializers.FloatField()


class CandidateOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    document = serializers.CharField(source="document_id")
    document_title = serializers.CharField(source="document.title")
    document_project = serializers.CharField(source="document.project.slug", allow_null=True, default=None)
    target = serializers.IntegerField(source="target_id")
    target_slug = serializers.CharField(source="target.slug")
    project = serializers.CharField(source="target.project.slug")
    score = serializers.FloatField()
    evidence = EvidenceOutputSerializer(many=True)
    status = serializers.CharField()
    decided_by = serializers.CharField(source="decided_by.username", allow_null=True, default=None)
    decided_at = serializers.DateTimeField(allow_null=True)
    notes = serializers.CharField()
    created_at = serializers.DateTimeField()


class DecisionInputSerializer(StrictInputSerializer):
    notes = StrictCharField(required=False, allow_blank=True, max_length=10_000)
    target = serializers.IntegerField(required=False, min_value=1, help_text="the right target (correct only)")


def _reviewer(request: Request) -> Actor:
    actor = Actor.from_request(request)
    if not actor.is_admin:
        raise AccessDenied("Only staff admins review attribution candidates.")
    return actor


class CandidateListApi(APIView):
    pagination_class = NewestFirstCursorPagination

    @extend_schema(
        parameters=filterset_parameters(AttributionCandidateFilter),
        responses=CandidateOutputSerializer(many=True),
        summary="Attribution candidates of one status (default: open), newest first",
    )
    def get(self, request: Request) -> Response:
        actor = _reviewer(request)
        wanted = request.query_params.get("status", "candidate")
        if wanted not in STATUSES:
            raise ApplicationError(f"status must be one of {', '.join(STATUSES)}.", field="status")
        return paginated_list(
            request=request,
            view=self,
            queryset=selectors.attribution_candidates(actor=actor, status=wanted),
            filterset_class=AttributionCandidateFilter,
            output_serializer=CandidateOutputSerializer,
        )


class CandidateDetailApi(APIView):
    @extend_schema(responses=CandidateOutputSerializer, summary="One attribution candidate and its evidence")
    def get(self, request: Request, candidate_id: int) -> Response:
        candidate = selectors.attribution_candidate_get(actor=_reviewer(request), candidate_id=candidate_id)
        if candidate is None:
            raise NotFound("No such attribution candidate.")
        return Response(CandidateOutputSerializer(candidate).data)


class CandidateDecisionApi(APIView):
    """approve | reject | correct (to ``target``)."""

    decision = ""

    @extend_schema(request=DecisionInputSerializer, responses=CandidateOutputSerializer)
    def post(self, request: Request, candidate_id: int) -> Response:
        actor = _reviewer(request)
        if selectors.attribution_candidate_get(actor=actor, candidate_id=candidate_id) is None:
            raise NotFound("No such attribution candidate.")
        serializer = DecisionInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        if self.decision != "correct" and "target" in data:
            raise ApplicationError("Only a correction names a target.", field="target")
        decided = attribution_candidate_decide(
            actor=actor,
            candidate_id=candidate_id,
            decision=self.decision,
            target_id=data.get("target"),
            notes=data.get("notes", ""),
        )
        return Response(
            CandidateOutputSerializer(selectors.attribution_candidate_get(actor=actor, candidate_id=decided.pk)).data
        )
