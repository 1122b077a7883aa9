"""The card-review queue (staff admins): open reviews with their cards and evidence; approve or reject."""

from __future__ import annotations

from typing import Any

import django_filters
from drf_spectacular.utils import extend_schema, extend_schema_field
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
    paginated_list,
)
from config.exceptions import AccessDenied
from config.schema import error_example
from intelligence import selectors
from intelligence.apis.cards import CardEvidenceOutputSerializer
from intelligence.models import IntelligenceReview, ReviewKind, ReviewStatus
from intelligence.services.reviews import review_decide


class CardReviewFilter(django_filters.FilterSet):
    status = django_filters.ChoiceFilter(choices=ReviewStatus.choices, help_text="default: open")
    kind = django_filters.ChoiceFilter(choices=ReviewKind.choices)
    project = django_filters.CharFilter(field_name="project__slug")

    class Meta:
        model = IntelligenceReview
        fields = ["status", "kind", "project"]


class ReviewCardOutputSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    target = serializers.CharField(source="target.slug")
    card_type = serializers.CharField()
    status = serializers.CharField()
    title = serializers.CharField()
    summary = serializers.CharField()
    confidence = serializers.FloatField()
    evidence = serializers.SerializerMethodField()

    @extend_schema_field(CardEvidenceOutputSerializer(many=True))
    def get_evidence(self, card) -> Any:
        return CardEvidenceOutputSerializer(
            card.evidence.all(), many=True, context={"project_slug": self.context["project_slugs"][card.project_id]}
        ).data


class CardReviewOutputSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    project = serializers.CharField(source="project.slug")
    kind = serializers.CharField()
    status = serializers.CharField()
    proposed = serializers.JSONField()
    reason = serializers.CharField()
    reports = serializers.IntegerField()
    requested_by = serializers.CharField(source="requested_by.username", allow_null=True, default=None)
    reviewer = serializers.CharField(source="reviewer.username", allow_null=True, default=None)
    decision_notes = serializers.CharField()
    decided_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    card = serializers.SerializerMethodField()

    @extend_schema_field(ReviewCardOutputSerializer)
    def get_card(self, review: IntelligenceReview) -> dict:
        return ReviewCardOutputSerializer(
            review.card, context={"project_slugs": {review.project_id: review.project.slug}}
        ).data


STAFF_ONLY = "Only staff admins review cards."


def staff_actor(request: Request) -> Actor:
    """The request's actor, who must be a staff admin (card reviews are theirs)."""
    actor = Actor.from_request(request)
    if not actor.is_admin:
        raise AccessDenied(STAFF_ONLY)
    return actor


class ReviewQueueApi(APIView):
    """The card-review queue is for staff admins, never a service key: X-On-Behalf-Of has no use here."""

    on_behalf_of = OnBehalfOf.REFUSED
    error_examples = [error_example(403, "permission_denied", STAFF_ONLY, name="not_staff")]


class ReviewListApi(ReviewQueueApi):
    pagination_class = NewestFirstCursorPagination

    @extend_schema(
        parameters=filterset_parameters(CardReviewFilter),
        responses=CardReviewOutputSerializer(many=True),
        summary="Card reviews (open ones unless ?status=) with their cards and evidence, newest first (staff admins)",
        description="What readers proposed for insight cards (corrections, edits, merges, reports of wrong "
        "or stale cards), each with its card, the card's evidence and how many readers reported it.",
    )
    def get(self, request: Request) -> Response:
        reviews = selectors.reviews_list(actor=staff_actor(request))
        if "status" not in request.query_params:  # the queue: what waits for a decision
            reviews = reviews.filter(status=ReviewStatus.OPEN)
        return paginated_list(
            request=request,
            view=self,
            queryset=reviews,
            filterset_class=CardReviewFilter,
            output_serializer=CardReviewOutputSerializer,
        )


class ReviewDecisionInputSerializer(StrictInputSerializer):
    notes = StrictCharField(required=False, allow_blank=True, max_length=10_000)


REVIEW_TEXTS = {
    "approve": ("Approve a card review", "The proposed change (a correction, an edit, a merge) is made to the card."),
    "reject": ("Reject a card review", "The card stays as it is; the review is closed with the notes."),
}


class ReviewDecisionApi(ReviewQueueApi):
    """approve | reject."""

    decision = ""

    def schema_texts(self) -> tuple[str, str]:
        summary, description = REVIEW_TEXTS[self.decision]
        return summary, f"{description} A review already decided is a 409 naming `decision`."

    @property
    def error_examples(self) -> list:  # type: ignore[override]
        message = "This review was already approved."
        return [
            *ReviewQueueApi.error_examples,
            error_example(409, "conflict", message, field="decision", name="decided"),
        ]

    @extend_schema(request=ReviewDecisionInputSerializer, responses=CardReviewOutputSerializer)
    def post(self, request: Request, review_id: str) -> Response:
        actor = staff_actor(request)
        if selectors.review_get(actor=actor, review_id=review_id) is None:
            raise NotFound("No such review.")
        serializer = ReviewDecisionInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        review_decide(
            actor=actor, review_id=review_id, decision=self.decision, notes=serializer.validated_data.get("notes", "")
        )
        review = selectors.review_get(actor=actor, review_id=review_id)
        return Response(CardReviewOutputSerializer(review).data)
