"""The attribution review queue (staff admins): list and read candidates, and decide them."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.actors import Actor
from config.api import (
    NewestFirstCursorPagination,
    OnBehalfOf,
    StrictCharField,
    StrictInputSerializer,
    filterset_parameters,
    invalid_choice_message,
    paginated_list,
)
from config.exceptions import AccessDenied, ApplicationError
from config.schema import error_example
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


STAFF_ONLY = "Only staff admins review attribution candidates."


def _reviewer(request: Request) -> Actor:
    actor = Actor.from_request(request)
    if not actor.is_admin:
        raise AccessDenied(STAFF_ONLY)
    return actor


class ReviewerApi(APIView):
    """The attribution queue is for staff admins, never a service key: X-On-Behalf-Of has no use here."""

    on_behalf_of = OnBehalfOf.REFUSED
    error_examples = [error_example(403, "permission_denied", STAFF_ONLY, name="not_staff")]


class CandidateListApi(ReviewerApi):
    pagination_class = NewestFirstCursorPagination

    @extend_schema(
        parameters=[
            OpenApiParameter("status", str, enum=STATUSES, required=False, description="default: candidate"),
            *filterset_parameters(AttributionCandidateFilter),
        ],
        responses=CandidateOutputSerializer(many=True),
        summary="Attribution candidates of one status (default: open), newest first",
        description="Documents the attribution step matched to a target with too little certainty to file "
        "them alone, each with its score and the evidence (aliases, participants, addresses...) behind it.",
    )
    def get(self, request: Request) -> Response:
        actor = _reviewer(request)
        wanted = request.query_params.get("status", "candidate")
        if wanted not in STATUSES:
            raise ApplicationError(invalid_choice_message(wanted, STATUSES), field="status")
        return paginated_list(
            request=request,
            view=self,
            queryset=selectors.attribution_candidates(actor=actor, status=wanted),
            filterset_class=AttributionCandidateFilter,
            output_serializer=CandidateOutputSerializer,
        )


class CandidateDetailApi(ReviewerApi):
    @extend_schema(
        responses=CandidateOutputSerializer,
        summary="One attribution candidate and its evidence",
        description="The candidate's document, target, score and evidence, and its decision once decided.",
    )
    def get(self, request: Request, candidate_id: int) -> Response:
        candidate = selectors.attribution_candidate_get(actor=_reviewer(request), candidate_id=candidate_id)
        if candidate is None:
            raise NotFound("No such attribution candidate.")
        return Response(CandidateOutputSerializer(candidate).data)


DECISION_TEXTS = {
    "approve": (
        "Approve an attribution",
        "The document is filed under the candidate's target; its signals feed that target's cards.",
    ),
    "reject": ("Reject an attribution", "The document does not belong to that target; it is not filed there."),
    "correct": (
        "Correct an attribution to another target",
        "The document belongs to another active target (`target`), where it is filed instead; corrections "
        "are the evidence attribution rules are proposed from.",
    ),
}


class CandidateDecisionApi(ReviewerApi):
    """approve | reject | correct (to ``target``)."""

    decision = ""

    def schema_texts(self) -> tuple[str, str]:
        summary, description = DECISION_TEXTS[self.decision]
        return summary, f"{description} A candidate already decided is a 409 naming `status`."

    @property
    def error_examples(self) -> list:  # type: ignore[override]
        message = "This candidate was already approved."
        return [*ReviewerApi.error_examples, error_example(409, "conflict", message, field="status", name="decided")]

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
