"""HTTP API of retrieval: import documents, search (traced), and feedback on traced results."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.actors import Actor
from config.api import ChoiceField, StrictCharField, StrictInputSerializer
from config.schema import error_example
from retrieval import exploration, services
from retrieval.models import OUTCOMES

MAX_DOCUMENTS_PER_REQUEST = 500


class DocumentInputSerializer(StrictInputSerializer):
    id = StrictCharField(max_length=255)
    raw_text = StrictCharField(max_length=2_000_000, trim_whitespace=False)
    title = StrictCharField(required=False, allow_blank=True, max_length=500)
    project = StrictCharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        max_length=100,
        help_text="slug of the project the document belongs to; left out (or null) on a re-import, the "
        "document keeps the project it has (imported into, attributed or reviewed since); another slug moves it",
    )
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
        responses={
            201: OpenApiResponse(ImportOutputSerializer, description="At least one document was new (`created`)."),
            200: OpenApiResponse(
                ImportOutputSerializer, description="Every document was known already: updated or unchanged."
            ),
        },
        summary="Import documents (unchanged ones cost nothing)",
        description="Up to 500 documents per request, each by its own `id` (a re-import of the same id "
        "updates it). Text is chunked by paragraph; a passage already embedded anywhere is not embedded "
        "again, and a re-imported document keeps every unchanged passage with its chunk id, weights and "
        "traces. A re-import without `project` keeps the document's project; naming another project moves it. "
        "Staff admins and service keys import anywhere; a project's admins into their project (and re-import "
        "its documents without naming it). A document created, deleted or moved while the import runs: 409 on `id`, "
        "send it again.",
        examples=[
            OpenApiExample(
                "One document",
                value={
                    "documents": [
                        {
                            "id": "handbook-expenses",
                            "title": "Expenses policy",
                            "project": "demo",
                            "raw_text": "Travel expenses are reimbursed within 30 days of submission.\n\n"
                            "Meals while travelling are covered up to 40 EUR per day; alcohol is never reimbursed.",
                        }
                    ]
                },
                request_only=True,
            ),
            OpenApiExample(
                "Created",
                value={
                    "created": 1,
                    "updated": 0,
                    "unchanged": 0,
                    "chunks_embedded": 1,
                    "chunks_reused": 0,
                    "chunks_kept": 0,
                    "chunks_removed": 0,
                    "weights_orphaned": 0,
                },
                response_only=True,
                status_codes=["201"],
            ),
        ],
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
        created = status.HTTP_201_CREATED if report.created else status.HTTP_200_OK
        return Response(ImportOutputSerializer(report).data, status=created)


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
        description="The `k` best passages for `query` among the documents the caller may read (a `project` "
        "narrows it to that project's), ranked by similarity times the retrieval weights admins applied. "
        "Every search is traced: keep `trace_id`, and once the answer is written report which results it "
        "used with `POST /retrieval/feedback`. Answers 200 (a query; the trace is a side record). A service "
        "key acting for a user searches with that user's rights.",
        examples=[
            OpenApiExample(
                "A question",
                value={
                    "query": "how much can I spend on meals when travelling",
                    "k": 3,
                    "project": "demo",
                    "tool_name": "kb_search",
                    "session_id": "chat-42",
                },
                request_only=True,
            ),
            OpenApiExample(
                "Results",
                value={
                    "trace_id": "b242ac31-137d-48b6-b034-93d2d8d6e5f5",
                    "results": [
                        {
                            "rank": 1,
                            "score": 0.5678,
                            "weight": 1.0,
                            "chunk_id": "handbook-expenses#0",
                            "document_id": "handbook-expenses",
                            "title": "Expenses policy",
                            "content": "Travel expenses are reimbursed within 30 days of submission.\n\n"
                            "Meals while travelling are covered up to 40 EUR per day; alcohol is never reimbursed.",
                        }
                    ],
                },
                response_only=True,
            ),
        ],
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
    outcome = ChoiceField(choices=OUTCOMES, required=False, allow_null=True, default=None)


class FeedbackInputSerializer(StrictInputSerializer):
    trace_id = serializers.UUIDField()
    results = ResultFeedbackSerializer(many=True, required=False, default=list)
    answer_rating = ChoiceField(choices=["up", "down"], required=False, allow_null=True, default=None)


class FeedbackOutputSerializer(serializers.Serializer):
    updated = serializers.IntegerField()


class RetrievalFeedbackApi(APIView):
    @extend_schema(
        request=FeedbackInputSerializer,
        responses=FeedbackOutputSerializer,
        summary="Mark traced results cited / used / referenced, and their outcome",
        description="After answering with a search's results: which of them the answer cited or used, which "
        "the user referred to, their `outcome`, and the answer's rating. A downvoted answer marks the results "
        "it used `unhelpful` and the rest `unknown`; an upvoted one marks the results it used `helpful` (an "
        "`outcome` sent with a result, and an earlier `stale`, `wrong_project` or `unsupported`, stand). Only "
        "your own traces (a service key acting for a user: that user's); marking again updates the marks. "
        "`updated` counts the results marked.",
        examples=[
            OpenApiExample(
                "The answer used the first result",
                value={
                    "trace_id": "b242ac31-137d-48b6-b034-93d2d8d6e5f5",
                    "results": [
                        {"chunk_id": "handbook-expenses#0", "cited": True, "used_in_answer": True, "outcome": "helpful"}
                    ],
                    "answer_rating": "up",
                },
                request_only=True,
            ),
            OpenApiExample("Marked", value={"updated": 1}, response_only=True),
            error_example(404, "not_found", "No such trace.", field="trace_id", name="unknown_trace"),
        ],
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
        description="The share of this project's searches that show a random draw below the top three "
        "results, so passages ranked just past the page can earn evidence. Staff admins, the project's "
        "admins, and service keys within their projects.",
        examples=[
            error_example(
                403,
                "permission_denied",
                "Only staff admins and the project's admins change its retrieval settings.",
                field="project",
                name="not_project_admin",
            )
        ],
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
