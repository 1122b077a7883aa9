"""The stream and task ratings in the admin: evidence, read-only (the stream is append-only)."""

from __future__ import annotations

from django.contrib import admin

from core.admin import ReadOnlyAdmin, admin_change_url, link, model_for_table, preview
from feedback.models import FeedbackEvent, TaskFeedback


@admin.register(FeedbackEvent)
class FeedbackEventAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "event_family", "event_type", "signal", "user", "project", "subject", "surface")
    # No filter over distinct values of a column: each would scan the whole stream.
    list_filter = ("event_family", "signal", "private", "project")
    search_fields = (
        "=id",
        "event_type",
        "subject_id",
        "target_id",
        "session_id",
        "source_record_id",
        "user__username",
    )
    list_select_related = ("user", "project")
    list_defer = ("free_text", "before_snapshot", "after_snapshot", "source_context", "metadata")
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
    show_full_result_count = False  # COUNT(*) over a large append-only table is slow
    readonly_fields = ("source_record",)

    @admin.display(description="subject")
    def subject(self, obj: FeedbackEvent) -> str:
        return f"{obj.subject_type} {obj.subject_id}".strip()

    @admin.display(description="source record")
    def source_record(self, obj: FeedbackEvent) -> object:
        """The row the event is about, in its own admin (by table and id, as the event names it)."""
        if not obj.source_table:
            return "—"
        url = admin_change_url(model_for_table(obj.source_table), obj.source_record_id)
        return link(url, f"{obj.source_table} {obj.source_record_id}")


@admin.register(TaskFeedback)
class TaskFeedbackAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "task", "user", "project", "rating", "completed", "promoted", "reason_preview")
    list_filter = ("rating", "completed", "promoted", "project")
    search_fields = ("=id", "reason", "user__username")
    list_select_related = ("user", "project")
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
    reason_preview = preview("reason", length=60, description="reason")

    @admin.display(description="task")
    def task(self, obj: TaskFeedback) -> str:
        snapshot = obj.task_snapshot if isinstance(obj.task_snapshot, dict) else {}
        return str(snapshot.get("title") or snapshot.get("id") or "—")[:80]
