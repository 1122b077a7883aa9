from django.contrib import admin

from feedback.models import FeedbackEvent, TaskFeedback


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows written only by services: visible here, never edited here."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(FeedbackEvent)
class FeedbackEventAdmin(ReadOnlyAdmin):
    list_display = (
        "created_at",
        "event_family",
        "event_type",
        "signal",
        "user",
        "project",
        "subject_type",
        "subject_id",
    )
    list_filter = ("event_family", "signal", "private")
    search_fields = ("event_type", "subject_id", "target_id", "session_id", "source_record_id")
    list_select_related = ("user", "project")
    date_hierarchy = "created_at"
    show_full_result_count = False  # COUNT(*) over a large append-only table is slow


@admin.register(TaskFeedback)
class TaskFeedbackAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "user", "project", "rating", "completed", "promoted")
    list_filter = ("rating", "completed", "promoted")
    list_select_related = ("user", "project")
