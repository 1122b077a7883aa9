"""HTTP API of the promotion ledger (staff admins): list, read, propose, preview, and each lifecycle action."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.actors import Actor
from config.api import (
    ChoiceField,
    NewestFirstCursorPagination,
    OnBehalfOf,
    StrictCharField,
    StrictInputSerializer,
    filterset_parameters,
    paginated_list,
)
from config.exceptions import AccessDenied
from config.schema import error_example
from promotions import selectors, services
from promotions.destinations import WRITERS, writer_for
from promotions.filters import PromotionFilter
from promotions.previews import retrieval_weight_preview
from promotions.services import TRANSITIONS


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
    promotion_type = ChoiceField(choices=sorted(WRITERS))
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


STAFF_ONLY = "Only staff admins review promotions."


def admin_actor(request: Request) -> Actor:
    """The request's actor, who must be a staff admin (the whole promotions API is theirs)."""
    actor = Actor.from_request(request)
    if not actor.is_admin:
        raise AccessDenied(STAFF_ONLY)
    return actor


class StaffApi(APIView):
    """An operation of the promotions API: staff admins only, never a service key (acting for a staff
    user or not), so X-On-Behalf-Of has no use here."""

    on_behalf_of = OnBehalfOf.REFUSED
    error_examples = [error_example(403, "permission_denied", STAFF_ONLY, name="not_staff")]


PROMOTION_EXAMPLE: dict[str, Any] = {
    "id": "b2775622-ceec-4725-b4fa-921d19dbda11",
    "created_at": "2026-12-01T21:40:36.407808Z",
    "updated_at": "2026-12-01T21:40:36.407853Z",
    "status": "candidate",
    "promotion_type": "task_example",
    "project": None,
    "target": None,
    "promotion_path": "human_review",
    "rule": "admin_proposal: proposed by hand by a staff admin, for review",
    "subject_type": "task_feedback",
    "subject_id": "25c3ec02-88dc-47b3-be70-06dbc9d4a7fc",
    "source_event_ids": [],
    "destination_table": "",
    "destination_record_id": "",
    "confidence": 0.5,
    "risk_level": "low",
    "proposed_learning": {
        "title": "Book the venue for the March offsite",
        "description": "Compare three venues near the office and book the one that fits the budget.",
        "completed": True,
        "reason": "Clear and doable",
    },
    "review_notes": "A clear example of a planning task",
    "reviewed_by": None,
    "reviewed_at": None,
    "applied_at": None,
    "expires_at": "2026-12-31T21:40:36.379016Z",
    "superseded_by": None,
}


class PromotionListCreateApi(StaffApi):
    pagination_class = NewestFirstCursorPagination

    @extend_schema(
        parameters=filterset_parameters(PromotionFilter),
        responses=PromotionOutputSerializer(many=True),
        summary="The promotion ledger, newest first",
        description="Every promotion (candidates, approved, applied, paused, rejected, superseded, expired), "
        "newest first, one cursor page at a time; filter by status, type, path, project...",
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
        responses={
            201: OpenApiResponse(PromotionOutputSerializer, description="A new candidate."),
            200: OpenApiResponse(
                PromotionOutputSerializer,
                description="The subject already had an open candidate: that one (a subject never has two).",
            ),
        },
        summary="Propose a candidate by hand (the subject's open candidate if it has one)",
        description="Scanners propose most candidates; an admin proposes one here, e.g. a completed task "
        "rated good as a task example. The type's writer checks the subject now (a 400 naming `subject_id` "
        "if it cannot become one).",
        examples=[
            OpenApiExample(
                "A task example",
                value={
                    "promotion_type": "task_example",
                    "subject_id": "25c3ec02-88dc-47b3-be70-06dbc9d4a7fc",
                    "notes": "A clear example of a planning task",
                },
                request_only=True,
            ),
            OpenApiExample("Proposed", value=PROMOTION_EXAMPLE, response_only=True, status_codes=["201"]),
        ],
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


class PromotionDetailApi(StaffApi):
    @extend_schema(
        responses=PromotionOutputSerializer,
        summary="One promotion",
        description="A promotion with its evidence (`source_event_ids`, `proposed_learning`), its review and, "
        "once applied, the row it wrote (`destination_table`, `destination_record_id`).",
        examples=[OpenApiExample("A candidate", value=PROMOTION_EXAMPLE, response_only=True)],
    )
    def get(self, request: Request, promotion_id: str) -> Response:
        promotion = selectors.promotion_get(actor=admin_actor(request), promotion_id=promotion_id)
        if promotion is None:
            raise NotFound("No such promotion.")
        return Response(PromotionOutputSerializer(promotion).data)


ACTION_TEXTS: dict[str, tuple[str, str]] = {
    "approve": (
        "Approve a candidate",
        "The reviewer agrees with the candidate (with optional `notes`); nothing changes for users until it "
        "is applied.",
    ),
    "reject": ("Reject a candidate", "The candidate is closed with the reviewer's `notes`; it is never applied."),
    "apply": (
        "Apply an approved promotion",
        "Writes the learning to its destination (a task example, a memory, an agent learning, a retrieval "
        "weight...): from now on it changes what users get. The answer names the row written.",
    ),
    "pause": ("Pause an applied promotion", "Its learning stops acting (e.g. a weight is ignored) until resumed."),
    "resume": ("Resume a paused promotion", "Its learning acts again."),
    "supersede": (
        "Supersede a promotion",
        "Retires a live promotion, optionally naming the one that replaces it (`superseded_by`).",
    ),
}


class PromotionActionApi(StaffApi):
    """approve | reject | apply | pause | resume | supersede."""

    action_name = ""

    def schema_texts(self) -> tuple[str, str]:
        summary, description = ACTION_TEXTS[self.action_name]
        sources = ", ".join(TRANSITIONS[self.action_name][0])
        return summary, f"{description} Allowed from: {sources}; any other status is a 409 naming `status`."

    @property
    def error_examples(self) -> list[OpenApiExample]:  # type: ignore[override]
        action = self.action_name
        sources = TRANSITIONS[action][0]
        wrong = "applied" if "applied" not in sources else "rejected"
        message = f"Cannot {action} a promotion that is {wrong}; {action} is allowed from {', '.join(sources)}."
        return [*StaffApi.error_examples, error_example(409, "conflict", message, field="status", name="wrong_status")]

    @extend_schema(
        request=ActionInputSerializer,
        responses=PromotionOutputSerializer,
        examples=[OpenApiExample("With notes", value={"notes": "Checked against the evidence"}, request_only=True)],
    )
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


class PromotionPreviewApi(StaffApi):
    @extend_schema(
        responses=PreviewOutputSerializer,
        summary="Impact preview: recent queries replayed with and without the weight",
        description="For a retrieval-weight promotion: the recent traced queries its scope covers, replayed "
        "with and without the weight (the chunk's rank before and after, NDCG@10 where the trace has "
        "judgments), and a summary. Any other type is a 400.",
    )
    def get(self, request: Request, promotion_id: str) -> Response:
        promotion = selectors.promotion_get(actor=admin_actor(request), promotion_id=promotion_id)
        if promotion is None:
            raise NotFound("No such promotion.")
        return Response(PreviewOutputSerializer(retrieval_weight_preview(promotion=promotion)).data)
