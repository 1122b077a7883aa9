"""HTTP API of retrieval: import documents, search (traced), and feedback on traced results."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.actors import Actor
from config.api import StrictCharField, StrictInputSerializer
from retrieval import exploration, services
from retrieval.models import OUTCOMES

MAX_DOCUMENTS_PER_REQUEST = 500


class DocumentInputSerializer(StrictInputSerializer):
    id = StrictCharField(max_length=255)
    raw_text = StrictCharField(max_length=2_000_000, trim_whitespace=False)
    title = StrictCharField(required=False, allow_blank=True, max_length=500)
    project = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=100)
    source_type = StrictCharField(required=False, max_length=50, default="text")
    source_system = StrictCharField(required=False, allow_blank=True, max_length=100, default="")
    url = StrictCharField(required=False, allow_blank=True, max_length=1000, default="")
    participants = serializers.ListField(required=False, default=list)
    source_created_at = serializers.DateTimeField(required=False, allow_null=True)
    source_updated_at = serializers.DateTimeField(required=False, allow_null=True)
    metadata = serializers.DictField(required=False, default=dict)


class ImportInputSerializer(StrictInputSerializer):
    documents = serializers.ListField(
        child=DocumentInputSerializer(), allow_empty=False, max_length=MAX_DOCUMENTS_PER_REQUEST
    )


class ImportOutputSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    unchanged = serializers.IntegerField()
    chunks_embedded = serializers.IntegerField()
    chunks_reused = serializers.IntegerField()
    chunks_kept = serializers.IntegerField(help_text="passages of changed documents that kept their chunk")
    chunks_removed = serializers.IntegerField(help_text="chunks of changed or removed passages deleted")
    weights_orphaned = serializers.IntegerField(help_text="live weights of those chunks, now orphaned")


class DocumentImportApi(APIView):
    @extend_schema(
        request=ImportInputSerializer,
        responses=ImportOutputSerializer,
        summary="Import documents (unchanged ones cost nothing)",
    )
    def post(self, request: Request) -> Response:
        serializer = ImportInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        items = []
        for doc in serializer.validated_data["documents"]:
            doc = dict(doc)
            doc["project_slug"] = doc.pop("project", None) or None
            items.append(services.DocumentInput(**doc))
        report = services.documents_import(actor=Actor.from_request(request), items=items)
        return Response(ImportOutputSerializer(report).data)


class SearchInputSerializer(StrictInputSerializer):
    query = StrictCharField(max_length=4000)
    k = serializers.IntegerField(required=False, default=10, min_value=1, max_value=50)
    project = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=100)
    tool_name = StrictCharField(required=False, allow_blank=True, max_length=100, default="")
    session_id = StrictCharField(required=False, allow_blank=True, max_length=255, default="")
    target_id = StrictCharField(required=False, allow_blank=True, max_length=255, default="")


class SearchHitSerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    score = serializers.FloatField()
    weight = serializers.FloatField()
    chunk_id = serializers.CharField(source="chunk.chunk_id")
    document_id = serializers.CharField(source="chunk.document_id")
    title = serializers.CharField(source="chunk.document.title")
    content = serializers.CharField(source="chunk.content")


class SearchOutputSerializer(serializers.Serializer):
    trace_id = serializers.UUIDField()
    results = SearchHitSerializer(many=True, source="hits")


class SearchApi(APIView):
    @extend_schema(
        request=SearchInputSerializer,
        responses=SearchOutputSerializer,
        summary="Semantic search over the documents you may read; the results are traced",
    )
    def post(self, request: Request) -> Response:
        serializer = SearchInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        result = services.search(
            actor=Actor.from_request(request), project_slug=data.pop("project", None) or None, **data
        )
        return Response(SearchOutputSerializer(result).data)


class ResultFeedbackSerializer(StrictInputSerializer):
    chunk_id = StrictCharField(max_length=300)
    cited = serializers.BooleanField(required=False, allow_null=True, default=None)
    used_in_answer = serializers.BooleanField(required=False, allow_null=True, default=None)
    user_referenced = serializers.BooleanField(required=False, allow_null=True, default=None)
    outcome = serializers.ChoiceField(choices=OUTCOMES, required=False, allow_null=True, default=None)


class FeedbackInputSerializer(StrictInputSerializer):
    trace_id = serializers.UUIDField()
    results = ResultFeedbackSerializer(many=True, required=False, default=list)
    answer_rating = serializers.ChoiceField(choices=["up", "down"], required=False, allow_null=True, default=None)


class FeedbackOutputSerializer(serializers.Serializer):
    updated = serializers.IntegerField()


class RetrievalFeedbackApi(APIView):
    @extend_schema(
        request=FeedbackInputSerializer,
        responses=FeedbackOutputSerializer,
        summary="Mark traced results cited / used / referenced, and their outcome",
    )
    def post(self, request: Request) -> Response:
        serializer = FeedbackInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        rows = services.retrieval_feedback_record(
            actor=Actor.from_request(request),
            trace_id=str(data["trace_id"]),
            items=[services.ResultFeedback(**item) for item in data["results"]],
            answer_rating=data["answer_rating"],
        )
        return Response({"updated": len(rows)}, status=status.HTTP_200_OK)


class ProjectSettingsInputSerializer(StrictInputSerializer):
    exploration_share = serializers.FloatField(allow_null=True, min_value=0.0, max_value=1.0)


class ProjectSettingsOutputSerializer(serializers.Serializer):
    project = serializers.CharField(source="project.slug")
    exploration_share = serializers.FloatField(allow_null=True)
    effective_exploration_share = serializers.FloatField()


class ProjectSettingsApi(APIView):
    @extend_schema(
        request=ProjectSettingsInputSerializer,
        responses=ProjectSettingsOutputSerializer,
        summary="Set a project's share of explored searches (null: the deployment's default)",
    )
    def put(self, request: Request, slug: str) -> Response:
        serializer = ProjectSettingsInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        row = services.project_settings_set(
            actor=Actor.from_request(request),
            project_slug=slug,
            exploration_share=serializer.validated_data["exploration_share"],
        )
        row.effective_exploration_share = exploration.share_for(project=row.project)  # type: ignore[attr-defined]
        return Response(ProjectSettingsOutputSerializer(row).data)
