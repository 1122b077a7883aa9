"""What was learned about users, and the evidence it was learned from, in the admin.

Evidence (chat history, prompt patterns, command runs and decisions, learning usages) is read-only.
Learned items change only through the services the API calls, so the admin writes the same events:
preferences and workflows are switched on or off or forgotten, taste patterns stopped, a private
memory rewritten or forgotten. Agent learnings and shared copies (memories, workflows) change only
through the promotion that made them (the console).
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from config.exceptions import Conflict
from core.admin import ReadOnlyAdmin, ServiceAdmin, preview, promotion_column, promotion_links
from learning.models import (
    AgentLearning,
    ChatMessage,
    CommandDecision,
    CommandRun,
    LearnedWorkflow,
    LearningUsage,
    Memory,
    Preference,
    PromptPattern,
    TastePattern,
    UndoEntry,
)
from learning.services import memories, preferences, taste, workflows

# --- evidence ---------------------------------------------------------------------------------------


@admin.register(ChatMessage)
class ChatMessageAdmin(ReadOnlyAdmin):
    """The conversations the analyzer reads."""

    list_display = ("created_at", "user", "role", "content_preview", "session_id", "project", "analysis_state")
    list_filter = ("role", "project")
    search_fields = ("=id", "=session_id", "user__username", "content")
    list_select_related = ("user", "project")
    list_defer = ("analysis", "learned", "replay_context")
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
    show_full_result_count = False
    content_preview = preview("content", description="message")

    @admin.display(description="analysis")
    def analysis_state(self, obj: ChatMessage) -> str:
        return obj.analysis_state


@admin.register(PromptPattern)
class PromptPatternAdmin(ReadOnlyAdmin):
    """Each user prompt, hashed and summarised: the window workflows are found in."""

    list_display = ("created_at", "user", "prompt_summary", "prompt_category", "session_id")
    list_filter = ("prompt_category",)
    search_fields = ("prompt_summary", "=session_id", "user__username")
    list_select_related = ("user",)
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
    show_full_result_count = False


@admin.register(UndoEntry)
class UndoEntryAdmin(ReadOnlyAdmin):
    """What a user's change to a learned item replaced, kept for LEARNING_UNDO_SECONDS so the modal's
    Undo can put it back (learning.services.undo); purged by the learning.undo_purge beat task."""

    list_display = ("created_at", "user", "action", "subject_type", "subject_id")
    list_filter = ("subject_type", "action")
    search_fields = ("=subject_id", "user__username")
    list_select_related = ("user",)
    list_defer = ("before",)
    ordering = ("-created_at",)
    show_full_result_count = False


@admin.register(CommandRun)
class CommandRunAdmin(ReadOnlyAdmin):
    """Written only by the taste service, with its post_command event."""

    list_display = ("created_at", "user", "project", "plugin", "command", "succeeded", "output_preview")
    list_filter = ("plugin", "succeeded", "project")
    search_fields = ("=id", "plugin", "command", "user__username")
    list_select_related = ("user", "project")
    list_defer = ("parameters", "applied_patterns")
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
    output_preview = preview("output", length=60, description="output")


@admin.register(CommandDecision)
class CommandDecisionAdmin(ReadOnlyAdmin):
    """Written only by the taste service, with its decision_point event (one per run)."""

    list_display = ("created_at", "decision", "run_user", "run_tool", "run")
    list_filter = ("decision",)
    search_fields = ("=run__id", "run__user__username", "run__plugin")
    list_select_related = ("run", "run__user")
    list_defer = ("edited_output", "parameters", "corrections", "run__output", "run__parameters")
    date_hierarchy = "created_at"
    ordering = ("-created_at",)

    @admin.display(description="user", ordering="run__user__username")
    def run_user(self, obj: CommandDecision) -> object:
        return obj.run.user

    @admin.display(description="tool")
    def run_tool(self, obj: CommandDecision) -> str:
        return f"{obj.run.plugin}/{obj.run.command}"


@admin.register(LearningUsage)
class LearningUsageAdmin(ReadOnlyAdmin):
    """Which learned item was injected into which response, and whether it helped."""

    list_display = ("created_at", "item_type", "item_id", "user", "project", "surface", "tool_name", "outcome")
    list_filter = ("outcome", "item_type", "surface")
    search_fields = ("=response_id", "=item_id", "user__username")
    list_select_related = ("user", "project")
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
    show_full_result_count = False


@admin.register(AgentLearning)
class AgentLearningAdmin(ReadOnlyAdmin):
    """Made only by applying a promotion; paused, resumed or retired through it (the console)."""

    list_display = ("title", "status", "project", "tool_name", "created_at", promotion_column)
    list_filter = ("status", "project")
    search_fields = ("title", "prevention_prompt", "tool_name", "=promotion_id")
    list_select_related = ("project",)
    list_defer = ("prevention_prompt", "evidence")
    ordering = ("-created_at",)

    def get_object_links(self, request: HttpRequest, obj: AgentLearning) -> list[tuple[str, str]]:
        return promotion_links(obj.promotion_id)


# --- learned items, changed through the services ------------------------------------------------------


@admin.register(Preference)
class PreferenceAdmin(ServiceAdmin):
    """Switched on or off, or forgotten, as the user's own API calls do (``preference_set_active``,
    ``preference_delete``); the text is the user's words and is not edited here."""

    list_display = (
        "description",
        "user",
        "category",
        "active",
        "candidate",
        "source",
        "confidence",
        "times_reinforced",
        "last_reinforced_at",
    )
    list_filter = ("active", "category", "source", "candidate", "needs_review", "inactive_reason")
    search_fields = ("description", "preference", "user__username")
    list_select_related = ("user",)
    ordering = ("user__username", "-active", "-confidence")
    actions = ["deactivate", "activate"]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_manage_permission(request, obj)

    def delete_model(self, request: HttpRequest, obj: Preference) -> None:
        preferences.preference_delete(preference=obj)

    @admin.action(description="Stop applying the selected preferences", permissions=["manage"])
    def deactivate(self, request: HttpRequest, queryset: QuerySet[Preference]) -> None:
        self.each_row(
            request,
            queryset,
            lambda row: preferences.preference_set_active(preference=row, active=False),
            "preference(s) switched off",
        )

    @admin.action(description="Apply the selected preferences again", permissions=["manage"])
    def activate(self, request: HttpRequest, queryset: QuerySet[Preference]) -> None:
        self.each_row(
            request,
            queryset,
            lambda row: preferences.preference_set_active(preference=row, active=True),
            "preference(s) switched on",
        )


@admin.register(TastePattern)
class TastePatternAdmin(ServiceAdmin):
    """Stopped as the user's "stop applying this" does (``taste_pattern_stop``)."""

    list_display = (
        "instruction",
        "user",
        "plugin",
        "command",
        "status",
        "confidence",
        "observations",
        "confirmations",
        "rejections",
        "last_applied_at",
    )
    list_filter = ("status", "plugin", "correction_type", "rejected_reason")
    search_fields = ("instruction", "description", "plugin", "command", "user__username")
    list_select_related = ("user",)
    list_defer = ("evidence",)
    ordering = ("user__username", "plugin", "-confidence")
    actions = ["stop"]

    @admin.action(description="Stop applying the selected taste patterns", permissions=["manage"])
    def stop(self, request: HttpRequest, queryset: QuerySet[TastePattern]) -> None:
        self.each_row(
            request,
            queryset.select_related("user"),
            lambda row: taste.taste_pattern_stop(user=row.user, pattern_id=row.pk),
            "taste pattern(s) stopped",
        )


def _private(row: LearnedWorkflow | Memory) -> None:
    if row.visibility != "private":
        raise Conflict("a shared copy changes only through the promotion that shared it (the console).")


@admin.register(LearnedWorkflow)
class LearnedWorkflowAdmin(ServiceAdmin):
    """A user's own workflow is switched on or off, or forgotten, through ``workflow_set_active`` /
    ``workflow_delete``; a shared copy only through its promotion."""

    list_display = (
        "workflow_name",
        "user",
        "visibility",
        "project",
        "active",
        "times_detected",
        "confidence",
        "last_used_at",
    )
    list_filter = ("active", "visibility", "project")
    search_fields = ("workflow_name", "trigger_pattern", "user__username")
    list_select_related = ("user", "project")
    list_defer = ("learned_steps", "example_input", "example_output")
    ordering = ("user__username", "-confidence")
    actions = ["deactivate", "activate"]

    def get_object_links(self, request: HttpRequest, obj: LearnedWorkflow) -> list[tuple[str, str]]:
        return promotion_links(obj.promotion_id)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_manage_permission(request, obj) and (obj is None or obj.visibility == "private")

    def delete_model(self, request: HttpRequest, obj: LearnedWorkflow) -> None:
        _private(obj)
        workflows.workflow_delete(workflow=obj)

    def _set_active(self, row: LearnedWorkflow, active: bool) -> None:
        _private(row)
        workflows.workflow_set_active(workflow=row, active=active)

    @admin.action(description="Stop applying the selected workflows", permissions=["manage"])
    def deactivate(self, request: HttpRequest, queryset: QuerySet[LearnedWorkflow]) -> None:
        self.each_row(request, queryset, lambda row: self._set_active(row, False), "workflow(s) switched off")

    @admin.action(description="Apply the selected workflows again", permissions=["manage"])
    def activate(self, request: HttpRequest, queryset: QuerySet[LearnedWorkflow]) -> None:
        self.each_row(request, queryset, lambda row: self._set_active(row, True), "workflow(s) switched on")


@admin.register(Memory)
class MemoryAdmin(ServiceAdmin):
    """A private memory's text and kind are rewritten, or it is forgotten, as its owner's API calls
    do (``memory_update``, ``memory_delete``: flagged text writes its event); a shared copy is
    read-only here and changes through its promotion."""

    list_display = (
        "content_preview",
        "owner",
        "kind",
        "visibility",
        "project",
        "status",
        "needs_review",
        "confidence",
        "created_at",
    )
    list_filter = ("visibility", "kind", "status", "needs_review", "project")
    search_fields = ("content", "owner__username", "=promotion_id")
    list_select_related = ("owner", "project")
    ordering = ("-created_at",)
    content_preview = preview("content", description="memory")
    readonly_fields = (
        "owner",
        "project",
        "visibility",
        "content_hash",
        "confidence",
        "status",
        "source_message",
        "promotion_id",
        "needs_review",
        "expires_at",
        "created_at",
        "edited_at",
    )

    def get_object_links(self, request: HttpRequest, obj: Memory) -> list[tuple[str, str]]:
        return promotion_links(obj.promotion_id)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_manage_permission(request, obj) and (obj is None or obj.visibility == "private")

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_change_permission(request, obj)

    def save_model(self, request: HttpRequest, obj: Memory, form: Any, change: bool) -> None:
        changes = {name: form.cleaned_data[name] for name in ("content", "kind") if name in form.changed_data}
        if changes:
            memories.memory_update(memory=obj, **changes)

    def delete_model(self, request: HttpRequest, obj: Memory) -> None:
        memories.memory_delete(memory=obj)
