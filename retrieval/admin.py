"""Documents, passages, search traces, rollups and weights in the admin.

All evidence or derived data, read-only: documents change by import (and their project by the
attribution queue), traces by search and feedback, rollups by the scan, weights through the
promotion that made them (the console). A project's retrieval settings are set through
``project_settings_set``, as the API sets them. Changelists never load embeddings or raw text.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from accounts.actors import Actor
from core.admin import (
    ReadOnlyAdmin,
    ServiceAdmin,
    admin_changelist_url,
    preview,
    promotion_column,
    promotion_links,
)
from retrieval.models import (
    Chunk,
    Document,
    IndexGeneration,
    RetrievalFeedback,
    RetrievalProjectSettings,
    RetrievalQuery,
    RetrievalWeight,
    TraceRollup,
    TraceRollupState,
)
from retrieval.services import project_settings_set

# Not registered: ``TraceRollupMark`` (one row per traced result, its id and a category code: pure
# bookkeeping of the rollups, nothing an admin reads; tests/admin/test_registry.py lists it).

# What a changelist must not read from a related document or chunk (list_select_related).
DOCUMENT_TEXT = ("raw_text", "metadata", "participants")
CHUNK_TEXT = ("content", "metadata")


def _deferred(path: str, names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(f"{path}__{name}" for name in names)


@admin.register(Document)
class DocumentAdmin(ReadOnlyAdmin):
    list_display = ("title", "id", "project", "source_type", "source_system", "source_updated_at", "updated_at")
    list_filter = ("project", "source_type", "source_system")
    search_fields = ("=id", "title", "url")
    list_select_related = ("project",)
    list_defer = DOCUMENT_TEXT
    ordering = ("-updated_at",)

    def get_object_links(self, request: HttpRequest, obj: Document) -> list[tuple[str, str]]:
        return [
            ("Passages", admin_changelist_url(Chunk, document__id__exact=obj.pk)),
            ("Search results", admin_changelist_url(RetrievalFeedback, document__id__exact=obj.pk)),
        ]


@admin.register(Chunk)
class ChunkAdmin(ReadOnlyAdmin):
    list_display = ("chunk_id", "document", "position", "content_preview", "created_at")
    list_filter = ("document__project",)
    search_fields = ("=chunk_id", "=content_hash", "document__title", "=document__id")
    list_select_related = ("document",)
    list_defer = ("metadata", *_deferred("document", DOCUMENT_TEXT))
    ordering = ("document_id", "position")
    show_full_result_count = False
    content_preview = preview("content", description="passage")

    def get_object_links(self, request: HttpRequest, obj: Chunk) -> list[tuple[str, str]]:
        return [
            ("Search results", admin_changelist_url(RetrievalFeedback, chunk__id__exact=obj.pk)),
            ("Weights", admin_changelist_url(RetrievalWeight, chunk__id__exact=obj.pk)),
        ]


class ResultInline(admin.TabularInline):
    """A trace's results, in rank order."""

    model = RetrievalFeedback
    fields = ("rank", "natural_rank", "chunk", "document", "score", "weight", "cited", "used_in_answer", "outcome")
    readonly_fields = fields
    can_delete = False
    extra = 0
    show_change_link = True

    def get_queryset(self, request: HttpRequest) -> Any:
        return (
            super()
            .get_queryset(request)
            .select_related("chunk", "document")
            .defer("chunk__embedding", *_deferred("chunk", CHUNK_TEXT), *_deferred("document", DOCUMENT_TEXT))
        )

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(RetrievalQuery)
class RetrievalQueryAdmin(ReadOnlyAdmin):
    """One search (a trace): the query, who asked, and its results."""

    list_display = ("created_at", "query_preview", "user", "project", "tool_name", "k", "explored", "feedback_at")
    list_filter = ("explored", "project", "tool_name")
    search_fields = ("=id", "query_text", "user__username", "=session_id")
    list_select_related = ("user", "project")
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
    show_full_result_count = False
    inlines = [ResultInline]
    query_preview = preview("query_text", description="query")


@admin.register(RetrievalFeedback)
class RetrievalFeedbackAdmin(ReadOnlyAdmin):
    """One traced result: what search returned at which rank, and what became of it."""

    list_display = (
        "created_at",
        "query_preview",
        "rank",
        "chunk",
        "document",
        "score",
        "weight",
        "cited",
        "used_in_answer",
        "outcome",
        "user",
    )
    list_filter = ("outcome", "cited", "used_in_answer", "explored", "project")
    search_fields = ("query_text", "=chunk__chunk_id", "=document__id", "document__title", "=trace__id")
    list_select_related = ("chunk", "document", "user", "project")
    list_defer = ("metadata", *_deferred("chunk", CHUNK_TEXT), *_deferred("document", DOCUMENT_TEXT))
    date_hierarchy = "created_at"
    ordering = ("-created_at", "trace_id", "rank")
    show_full_result_count = False
    query_preview = preview("query_text", length=60, description="query")


@admin.register(RetrievalWeight)
class RetrievalWeightAdmin(ReadOnlyAdmin):
    """Made only by applying a promotion; paused, resumed or superseded through it (the console)."""

    list_display = (
        "chunk",
        "document",
        "multiplier",
        "scope",
        "project",
        "status",
        "reason",
        "created_at",
        promotion_column,
    )
    list_filter = ("status", "scope", "reason", "project")
    search_fields = ("=chunk__chunk_id", "=document__id", "document__title", "=promotion_id")
    list_select_related = ("chunk", "document", "project")
    list_defer = ("query_terms", *_deferred("chunk", CHUNK_TEXT), *_deferred("document", DOCUMENT_TEXT))
    ordering = ("-created_at",)

    def get_object_links(self, request: HttpRequest, obj: RetrievalWeight) -> list[tuple[str, str]]:
        return promotion_links(obj.promotion_id)


@admin.register(TraceRollup)
class TraceRollupAdmin(ReadOnlyAdmin):
    """Trace evidence summed per passage, query neighbourhood, project and rank: what the scan reads."""

    list_display = (
        "chunk",
        "terms",
        "project",
        "rank",
        "explored",
        "shown",
        "skipped",
        "clicked",
        "helpful",
        "unhelpful",
        "stale",
        "wrong_project",
    )
    list_filter = ("explored", "project")
    search_fields = ("terms", "=chunk__chunk_id")
    list_select_related = ("chunk", "project")
    list_defer = _deferred("chunk", CHUNK_TEXT)
    ordering = ("chunk_id", "terms", "rank")
    show_full_result_count = False


@admin.register(TraceRollupState)
class TraceRollupStateAdmin(ReadOnlyAdmin):
    """The rollups' watermarks (one row): how far the scan has counted the traces."""

    list_display = ("id", "settled_id", "expired_id", "changed_since", "keying", "updated_at")


@admin.register(IndexGeneration)
class IndexGenerationAdmin(ReadOnlyAdmin):
    """The counter that tells an in-process vector index it is stale (one row)."""

    list_display = ("id", "generation", "token")


@admin.register(RetrievalProjectSettings)
class RetrievalProjectSettingsAdmin(ServiceAdmin):
    """A project's share of explored searches, set through ``project_settings_set`` (empty: the
    deployment's default)."""

    list_display = ("project", "exploration_share", "updated_at")
    list_select_related = ("project",)
    autocomplete_fields = ("project",)
    fields = ("project", "exploration_share")
    ordering = ("project__slug",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return self.has_manage_permission(request)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_manage_permission(request, obj)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        return ("project",) if obj is not None else ()

    def save_model(self, request: HttpRequest, obj: RetrievalProjectSettings, form: Any, change: bool) -> None:
        project_settings_set(
            actor=Actor.from_request(request),
            project_slug=obj.project.slug,
            exploration_share=form.cleaned_data["exploration_share"],
        )
