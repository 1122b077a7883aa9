from django.contrib import admin

from core.admin import ReadOnlyAdmin
from learning.models import CommandDecision, CommandRun


@admin.register(CommandRun)
class CommandRunAdmin(ReadOnlyAdmin):
    """Written only by the taste service, with its post_command event."""

    list_display = ("created_at", "user", "project", "plugin", "command")
    list_filter = ("plugin",)
    search_fields = ("id", "plugin", "command")
    list_select_related = ("user", "project")
    date_hierarchy = "created_at"


@admin.register(CommandDecision)
class CommandDecisionAdmin(ReadOnlyAdmin):
    """Written only by the taste service, with its decision_point event (one per run)."""

    list_display = ("created_at", "run", "decision")
    list_filter = ("decision",)
    search_fields = ("run__id",)
    list_select_related = ("run",)
    date_hierarchy = "created_at"
