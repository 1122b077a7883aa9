"""A card with its evidence, and readers' feedback on it: useful / wrong / stale / wrong-target
marks, proposed edits and merges (each a ``packet_quality`` event; corrections open a review)."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.actors import Actor
from config.api import ChoiceField, StrictCharField, StrictInputSerializer, idempotency_from_header
from intelligence import selectors
from intelligence.models import InsightCard, InsightCardEvidence
from intelligence.services.cards import (
    FEEDBACK_SIGNALS,
    CardFeedback,
    card_edit_propose,
    card_feedback_record,
    card_merge_propose,
)


def evidence_source_link(evidence: InsightCardEvidence, project_slug: str) -> str | None:
    """Where a reader follows an excerpt: the document's own url, else the page that shows its text
    to the project's members; None once the document is gone."""
    if evidence.document is None:
        return None
    if evidence.document.url:
        return evidence.document.url
    return reverse("intelligence-document", kwargs={"project_slug": project_slug, "document_id": evidence.document.pk})


class CardEvidenceOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    excerpt = serializers.CharField()
    document_id = serializers.CharField(source="document_ref")
    document_title = serializers.SerializerMethodField()
    source_system = serializers.CharField()
    observed_at = serializers.DateTimeField(allow_null=True)
    useful_count = serializers.IntegerField()
    not_useful_count = serializers.IntegerField()
    source_url = serializers.SerializerMethodField()

    @extend_schema_field(serializers.CharField())
    def get_document_title(self, evidence: InsightCardEvidence) -> str:
        return evidence.document.title if evidence.document is not None else ""

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_source_url(self, evidence: InsightCardEvidence) -> str | None:
        return evidence_source_link(evidence, self.context["project_slug"])


class CardOutputSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    project = serializers.CharField(source="project.slug")
    target = serializers.CharField(source="target.slug")
    card_type = serializers.CharField()
    status = serializers.CharField()
    origin = serializers.CharField()
    title = serializers.CharField()
    summary = serializers.CharField()
    owner = serializers.CharField()
    due_at = serializers.DateTimeField(allow_null=True)
    confidence = serializers.FloatField()
    details = serializers.JSONField()
    first_evidence_at = serializers.DateTimeField(allow_null=True)
    last_evidence_at = serializers.DateTimeField(allow_null=True)
    evidence = CardEvidenceOutputSerializer(many=True)


def _card(request: Request, card_id: str, *, with_evidence: bool = False) -> tuple[Actor, InsightCard]:
    actor = Actor.from_request(request)
    read = selectors.card_get if with_evidence else selectors.card_readable
    card = read(actor=actor, card_id=card_id)
    if card is None:
        raise NotFound("No such card.")
    return actor, card


def card_output(card: InsightCard) -> dict[str, Any]:
    return CardOutputSerializer(card, context={"project_slug": card.project.slug}).data


class CardDetailApi(APIView):
    @extend_schema(
        responses=CardOutputSerializer,
        summary="A card with its evidence and source links",
        description="An insight card of a project you may read: its summary, owner, due date, confidence and "
        "each piece of evidence with an excerpt and a link to its source.",
    )
    def get(self, request: Request, card_id: str) -> Response:
        _, card = _card(request, card_id, with_evidence=True)
        return Response(card_output(card))


class CardFeedbackInputSerializer(StrictInputSerializer):
    signal = ChoiceField(choices=list(FEEDBACK_SIGNALS))
    target = StrictCharField(required=False, max_length=100, help_text="the right target's slug (wrong_target)")
    note = StrictCharField(required=False, allow_blank=True, max_length=10_000)
    evidence_id = serializers.IntegerField(required=False, min_value=1, max_value=2**63 - 1)
    idempotency_key = StrictCharField(required=False, max_length=255)


class CardFeedbackOutputSerializer(serializers.Serializer):
    event_id = serializers.UUIDField(source="event.pk")
    signal = serializers.CharField(source="event.signal")
    review_id = serializers.UUIDField(source="review.pk", allow_null=True, default=None)
    review_reports = serializers.IntegerField(source="review.reports", allow_null=True, default=None)
    created = serializers.BooleanField()


def _feedback_response(result: CardFeedback) -> Response:
    return Response(
        CardFeedbackOutputSerializer(result).data,
        status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK,
        headers={} if result.created else {"Idempotent-Replayed": "true"},
    )


class CardFeedbackApi(APIView):
    idempotency_field = "idempotency_key"

    @extend_schema(
        request=CardFeedbackInputSerializer,
        responses={
            201: OpenApiResponse(CardFeedbackOutputSerializer, description="The mark, recorded."),
            200: OpenApiResponse(
                CardFeedbackOutputSerializer, description="A repeated idempotency key: the original mark."
            ),
        },
        summary="Mark a card useful, wrong, stale or wrong-target (a correction opens a review)",
        description="A reader's mark on a card (or on one piece of its evidence, `evidence_id`), written as a "
        "`packet_quality` event. A correction (wrong, stale, wrong_target with the right `target`) opens a "
        "review for a staff admin, or adds a report to the open one.",
    )
    def post(self, request: Request, card_id: str) -> Response:
        actor, card = _card(request, card_id)
        serializer = CardFeedbackInputSerializer(data=idempotency_from_header(request, request.data))
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        result = card_feedback_record(
            actor=actor,
            card=card,
            signal=data["signal"],
            note=data.get("note", ""),
            target_slug=data.get("target"),
            evidence_id=data.get("evidence_id"),
            idempotency_key=data.get("idempotency_key"),
        )
        return _feedback_response(result)


class CardEditInputSerializer(StrictInputSerializer):
    title = StrictCharField(required=False, max_length=300)
    summary = StrictCharField(required=False, allow_blank=True, max_length=10_000)
    note = StrictCharField(required=False, allow_blank=True, max_length=10_000)


class CardEditApi(APIView):
    @extend_schema(
        request=CardEditInputSerializer,
        responses={201: CardFeedbackOutputSerializer},
        summary="Propose a new title or summary for a card (a reviewer decides)",
        description="The proposal opens a card review; the card changes only once a staff admin approves it.",
    )
    def post(self, request: Request, card_id: str) -> Response:
        actor, card = _card(request, card_id)
        serializer = CardEditInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        return _feedback_response(
            card_edit_propose(
                actor=actor, card=card, title=data.get("title"), summary=data.get("summary"), note=data.get("note", "")
            )
        )


class CardMergeInputSerializer(StrictInputSerializer):
    into = serializers.UUIDField(help_text="the card of the same project this one repeats")
    note = StrictCharField(required=False, allow_blank=True, max_length=10_000)


class CardMergeApi(APIView):
    @extend_schema(
        request=CardMergeInputSerializer,
        responses={201: CardFeedbackOutputSerializer},
        summary="Propose merging a card into another card of its project (a reviewer decides)",
        description="For a card that repeats another (`into`, of the same project); a staff admin decides.",
    )
    def post(self, request: Request, card_id: str) -> Response:
        actor, card = _card(request, card_id)
        serializer = CardMergeInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        return _feedback_response(
            card_merge_propose(actor=actor, card=card, into_id=str(data["into"]), note=data.get("note", ""))
        )
