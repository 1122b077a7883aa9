"""Project intelligence in the admin.

Targets are created and edited through ``target_create`` / ``target_update`` (their deletion, which
reaches other apps, is wired in promotions/admin.py). Everything else is evidence or the compiler's
output, read-only: cards change through reviews, attributions through the attribution queue (both
in the console, which audits them), rules only through the promotion that made them, jobs by the
workers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.urls import reverse

from accounts.actors import Actor
from core.admin import (
    ReadOnlyAdmin,
    ServiceAdmin,
    admin_changelist_url,
    preview,
    promotion_column,
    promotion_links,
    related,
)
from intelligence import models
from intelligence.services.targets import PROFILE_FIELDS, target_create, target_update

DOCUMENT_TEXT = ("document__raw_text", "document__metadata", "document__participants")


class TargetColumns:
    """Changelist columns naming a row's target by its name (and its project), not its id."""

    target_name = related("target__name", "target")
    target_project = related("target__project", "project")


@admin.register(models.IntelligenceTarget)
class IntelligenceTargetAdmin(ServiceAdmin):
    """A project's root target or a named scope inside it, and the profile attribution matches."""

    list_display = ("name", "slug", "kind", "project", "active", "updated_at")
    list_filter = ("kind", "active", "project")
    search_fields = ("slug", "name", "project__slug")
    list_select_related = ("project",)
    autocomplete_fields = ("project",)
    fields = ("project", "kind", "slug", "name", *PROFILE_FIELDS, "active")
    ordering = ("project__slug", "slug")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return self.has_manage_permission(request)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_manage_permission(request, obj)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        return ("project", "kind", "slug") if obj is not None else ()

    def get_prepopulated_fields(self, request: HttpRequest, obj: Any = None) -> dict[str, Sequence[str]]:
        return {} if obj is not None else {"slug": ("name",)}

    def get_object_links(self, request: HttpRequest, obj: models.IntelligenceTarget) -> list[tuple[str, str]]:
        return [
            ("Cards", admin_changelist_url(models.InsightCard, target__id__exact=obj.pk)),
            (
                "Attribution candidates",
                admin_changelist_url(models.DocumentAttributionCandidate, target__id__exact=obj.pk),
            ),
        ]

    def save_model(self, request: HttpRequest, obj: models.IntelligenceTarget, form: Any, change: bool) -> None:
        actor = Actor.from_request(request)
        data = {name: form.cleaned_data[name] for name in form.changed_data}
        for name in PROFILE_FIELDS:  # an emptied list arrives as None
            if name in data and data[name] is None:
                data[name] = []
        if change:
            if data:
                target_update(actor=actor, target_id=obj.pk, changes=data)
            return
        created = target_create(
            actor=actor,
            project_slug=obj.project.slug,
            name=obj.name,
            slug=obj.slug,
            kind=obj.kind,
            profile={name: data.get(name, []) for name in PROFILE_FIELDS},
        )
        obj.pk = created.pk  # what the response and the admin log name


class EvidenceInline(admin.TabularInline):
    model = models.InsightCardEvidence
    extra = 0
    fields = ("document_ref", "source_system", "observed_at", "excerpt", "useful_count", "not_useful_count")
    readonly_fields = fields
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(models.InsightCard)
class InsightCardAdmin(TargetColumns, ReadOnlyAdmin):
    """A statement about a target, with its evidence; corrected through reviews (the console)."""

    list_display = (
        "title",
        "card_type",
        "status",
        "target_name",
        "project",
        "confidence",
        "evidence_count",
        "last_evidence_at",
    )
    list_filter = ("card_type", "status", "origin", "project")
    search_fields = ("title", "summary", "=id", "owner")
    list_select_related = ("target", "project")
    list_defer = ("summary", "details")
    ordering = ("-last_evidence_at",)
    inlines = [EvidenceInline]

    def get_object_links(self, request: HttpRequest, obj: models.InsightCard) -> list[tuple[str, str]]:
        return [("Reviews", admin_changelist_url(models.IntelligenceReview, card__id__exact=obj.pk))]


@admin.register(models.InsightCardEvidence)
class InsightCardEvidenceAdmin(ReadOnlyAdmin):
    list_display = (
        "card",
        "document_ref",
        "source_system",
        "observed_at",
        "excerpt_preview",
        "useful_count",
        "not_useful_count",
    )
    list_filter = ("source_system",)
    search_fields = ("=document_ref", "excerpt", "card__title")
    list_select_related = ("card",)
    list_defer = ("card__summary", "card__details")
    ordering = ("-observed_at",)
    excerpt_preview = preview("excerpt", description="excerpt")


@admin.register(models.InsightCardTarget)
class InsightCardTargetAdmin(TargetColumns, ReadOnlyAdmin):
    list_display = ("card", "target_name", "status", "score", "updated_at")
    list_filter = ("status",)
    search_fields = ("card__title", "target__name")
    list_select_related = ("card", "target")
    list_defer = ("card__summary", "card__details")
    ordering = ("-updated_at",)


class PacketEntryInline(admin.TabularInline):
    model = models.IntelligencePacketCard
    extra = 0
    fields = ("position", "section", "card", "why")
    readonly_fields = fields
    can_delete = False

    def get_queryset(self, request: HttpRequest) -> Any:
        return super().get_queryset(request).select_related("card").defer("card__summary", "card__details")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(models.IntelligencePacket)
class IntelligencePacketAdmin(TargetColumns, ReadOnlyAdmin):
    list_display = ("target_name", "version", "current", "built_at", "reason")
    list_filter = ("current",)
    search_fields = ("target__name", "target__slug")
    list_select_related = ("target",)
    list_defer = ("sections", "source_coverage")
    ordering = ("-built_at",)
    inlines = [PacketEntryInline]


@admin.register(models.IntelligencePacketCard)
class IntelligencePacketCardAdmin(ReadOnlyAdmin):
    list_display = ("packet", "position", "section", "card")
    list_filter = ("section",)
    search_fields = ("card__title",)
    list_select_related = ("packet", "card")
    list_defer = ("packet__sections", "packet__source_coverage", "card__summary", "card__details")
    ordering = ("packet_id", "position")


@admin.register(models.IntelligenceReview)
class IntelligenceReviewAdmin(ReadOnlyAdmin):
    """A user's correction of a card; decided in the console's card reviews."""

    list_display = ("card", "kind", "status", "reports", "requested_by", "reviewer", "created_at", "decided_at")
    list_filter = ("kind", "status", "project")
    search_fields = ("card__title", "reason", "decision_notes", "=id")
    list_select_related = ("card", "requested_by", "reviewer")
    list_defer = ("proposed", "source_event_ids", "card__summary", "card__details")
    date_hierarchy = "created_at"
    ordering = ("-created_at",)

    def get_object_links(self, request: HttpRequest, obj: models.IntelligenceReview) -> list[tuple[str, str]]:
        return [("View in console", f"{reverse('console-intelligence-reviews')}?status={obj.status}")]


@admin.register(models.DocumentAttributionCandidate)
class DocumentAttributionCandidateAdmin(TargetColumns, ReadOnlyAdmin):
    """A document that may belong to a target; decided in the console's attribution queue."""

    list_display = ("document", "target_name", "target_project", "score", "status", "decided_by", "created_at")
    list_filter = ("status", "target__project")
    search_fields = ("=document__id", "document__title", "target__name", "notes")
    list_select_related = ("document", "target", "target__project", "decided_by")
    list_defer = ("evidence", *DOCUMENT_TEXT)
    date_hierarchy = "created_at"
    ordering = ("-created_at",)

    def get_object_links(self, request: HttpRequest, obj: models.DocumentAttributionCandidate) -> list[tuple[str, str]]:
        return [("View in console", f"{reverse('console-attribution')}?status={obj.status}")]


@admin.register(models.SourceIntelligenceJob)
class SourceIntelligenceJobAdmin(ReadOnlyAdmin):
    """The compiler's job ledger: run by the workers, retried by their sweep."""

    list_display = ("kind", "document_ref", "status", "attempts", "error_preview", "created_at", "finished_at")
    list_filter = ("kind", "status")
    search_fields = ("=document_ref", "last_error")
    list_defer = ("result",)
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
    error_preview = preview("last_error", length=60, description="last error")


@admin.register(models.SourceSignalCandidate)
class SourceSignalCandidateAdmin(TargetColumns, ReadOnlyAdmin):
    list_display = (
        "signal_type",
        "statement_preview",
        "document",
        "target_name",
        "status",
        "confidence",
        "extractor",
        "created_at",
    )
    list_filter = ("signal_type", "status", "extractor")
    search_fields = ("statement", "=document__id")
    list_select_related = ("document", "target")
    list_defer = ("excerpt", "details", *DOCUMENT_TEXT)
    ordering = ("-created_at",)
    statement_preview = preview("statement", description="statement")


@admin.register(models.PacketRefreshJob)
class PacketRefreshJobAdmin(TargetColumns, ReadOnlyAdmin):
    list_display = ("target_name", "status", "attempts", "created_at", "finished_at")
    list_filter = ("status",)
    search_fields = ("target__name", "target__slug")
    list_select_related = ("target",)
    ordering = ("-created_at",)


@admin.register(models.AttributionRule)
class AttributionRuleAdmin(TargetColumns, ReadOnlyAdmin):
    """Made only by applying a promotion; paused or superseded through it (the console)."""

    list_display = ("match_kind", "pattern", "target_name", "status", "created_at", promotion_column)
    list_filter = ("match_kind", "status")
    search_fields = ("pattern", "target__name", "=promotion_id")
    list_select_related = ("target",)
    ordering = ("-created_at",)

    def get_object_links(self, request: HttpRequest, obj: models.AttributionRule) -> list[tuple[str, str]]:
        return promotion_links(obj.promotion_id)


@admin.register(models.PacketRule)
class PacketRuleAdmin(ReadOnlyAdmin):
    """Made only by applying a promotion; paused or superseded through it (the console)."""

    list_display = ("rule_type", "description_preview", "project", "status", "created_at", promotion_column)
    list_filter = ("rule_type", "status", "project")
    search_fields = ("description", "=promotion_id")
    list_select_related = ("project",)
    ordering = ("-created_at",)
    description_preview = preview("description", description="rule")

    def get_object_links(self, request: HttpRequest, obj: models.PacketRule) -> list[tuple[str, str]]:
        return promotion_links(obj.promotion_id)
