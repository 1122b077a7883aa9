from django.contrib import admin

from core.admin import ReadOnlyAdmin
from feedback.models import FeedbackEvent, TaskFeedback


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
