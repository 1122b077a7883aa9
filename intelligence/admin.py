"""Admin pages of every project-intelligence table: read-mostly views for operators. Changes of
state (reviews, attribution decisions, rules) go through the console and the API, which audit them."""

from __future__ import annotations

from django.contrib import admin

from intelligence import models


@admin.register(models.IntelligenceTarget)
class IntelligenceTargetAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "kind", "project", "active")
    list_filter = ("kind", "active")
    search_fields = ("slug", "name")


class EvidenceInline(admin.TabularInline):
    model = models.InsightCardEvidence
    extra = 0
    fields = ("document_ref", "source_system", "observed_at", "excerpt", "useful_count", "not_useful_count")
    readonly_fields = fields
    can_delete = False


@admin.register(models.InsightCard)
class InsightCardAdmin(admin.ModelAdmin):
    list_display = ("title", "card_type", "status", "target", "confidence", "last_evidence_at")
    list_filter = ("card_type", "status", "origin")
    search_fields = ("title", "summary")
    list_select_related = ("target",)
    inlines = [EvidenceInline]
    readonly_fields = ("fingerprint", "evidence_count", "first_evidence_at", "last_evidence_at")


@admin.register(models.InsightCardTarget)
class InsightCardTargetAdmin(admin.ModelAdmin):
    list_display = ("card", "target", "status", "score")
    list_filter = ("status",)
    list_select_related = ("card", "target")


@admin.register(models.IntelligencePacket)
class IntelligencePacketAdmin(admin.ModelAdmin):
    list_display = ("target", "version", "current", "built_at", "reason")
    list_filter = ("current",)
    list_select_related = ("target",)
    readonly_fields = ("target", "version", "current", "sections", "source_coverage", "reason", "built_at")


@admin.register(models.IntelligenceReview)
class IntelligenceReviewAdmin(admin.ModelAdmin):
    list_display = ("card", "kind", "status", "reports", "requested_by", "reviewer", "created_at")
    list_filter = ("kind", "status")
    list_select_related = ("card", "requested_by", "reviewer")
    readonly_fields = ("card", "project", "kind", "proposed", "requested_by", "source_event_ids", "created_at")


@admin.register(models.DocumentAttributionCandidate)
class DocumentAttributionCandidateAdmin(admin.ModelAdmin):
    list_display = ("document", "target", "score", "status", "decided_by", "created_at")
    list_filter = ("status",)
    list_select_related = ("document", "target", "decided_by")
    readonly_fields = ("document", "target", "score", "evidence", "created_at")


@admin.register(models.SourceIntelligenceJob)
class SourceIntelligenceJobAdmin(admin.ModelAdmin):
    list_display = ("kind", "document_ref", "status", "attempts", "created_at", "finished_at")
    list_filter = ("kind", "status")
    search_fields = ("document_ref",)
    readonly_fields = ("kind", "document", "document_ref", "target", "content_hash", "attempts", "last_error", "result")


@admin.register(models.SourceSignalCandidate)
class SourceSignalCandidateAdmin(admin.ModelAdmin):
    list_display = ("signal_type", "statement", "document", "status", "confidence", "extractor")
    list_filter = ("signal_type", "status", "extractor")
    list_select_related = ("document",)


@admin.register(models.PacketRefreshJob)
class PacketRefreshJobAdmin(admin.ModelAdmin):
    list_display = ("target", "status", "attempts", "created_at", "finished_at")
    list_filter = ("status",)
    list_select_related = ("target",)


@admin.register(models.AttributionRule)
class AttributionRuleAdmin(admin.ModelAdmin):
    list_display = ("match_kind", "pattern", "target", "status", "promotion_id")
    list_filter = ("match_kind", "status")
    readonly_fields = ("promotion_id",)


@admin.register(models.PacketRule)
class PacketRuleAdmin(admin.ModelAdmin):
    list_display = ("rule_type", "description", "project", "status", "promotion_id")
    list_filter = ("rule_type", "status")
    readonly_fields = ("promotion_id",)
