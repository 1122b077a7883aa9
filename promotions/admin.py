from django.contrib import admin

from core.admin import ReadOnlyAdmin
from promotions.models import LearningPromotion, ScanRun


@admin.register(LearningPromotion)
class LearningPromotionAdmin(ReadOnlyAdmin):
    """Read-only here: lifecycle actions go through the API (and its audit trail)."""

    list_display = ("created_at", "promotion_type", "subject_type", "subject_id", "status", "confidence", "reviewed_by")
    list_filter = ("status", "promotion_type", "risk_level", "promotion_path")
    search_fields = ("subject_id", "review_notes")
    list_select_related = ("reviewed_by", "project")


@admin.register(ScanRun)
class ScanRunAdmin(ReadOnlyAdmin):
    """Read-only here: scans are queued through the API or the console, and run by a worker."""

    list_display = ("created_at", "scanner", "status", "requested_by", "started_at", "finished_at")
    list_filter = ("status", "scanner")
    list_select_related = ("requested_by",)
