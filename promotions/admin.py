"""The ledger and its scans in the admin (read-only: the ledger changes only through its state
machine, in the console and the API), and the deletions that reach every app.

Deleting a user, a project or an intelligence target is not a row delete: it is the erasure
(``promotions.erasure.user_erase``) or the audited deletion (``promotions.deletions``), which keep
the stream, the ledger and the traces, and write the event that records it. Those services live in
this app, above all others, so the admins of those models are registered again here with a delete
that calls them (their own apps' admins refuse deletion).
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse

from accounts import admin as accounts_admin
from accounts.actors import Actor
from accounts.models import Project, User
from config.exceptions import ApplicationError
from core.admin import (
    ReadOnlyAdmin,
    admin_change_url,
    admin_changelist_url,
    link,
    model_for_table,
    related,
)
from feedback.models import FeedbackEvent, TaskFeedback
from intelligence import admin as intelligence_admin
from intelligence.models import IntelligenceTarget
from learning.models import LearnedWorkflow, Memory, Preference
from promotions.deletions import project_delete, target_delete
from promotions.erasure import user_erase
from promotions.models import LearningPromotion, RetrievalScanJudgement, RetrievalScanState, ScanRun
from retrieval.models import Chunk

# The rows a promotion's subject names, where the subject is a row (others are groups of evidence:
# a response-feedback cluster, a tool failure signature, an attribution pattern).
SUBJECT_MODELS = {
    "chunk": Chunk,
    "task_feedback": TaskFeedback,
    "memory": Memory,
    "preference": Preference,
    "workflow": LearnedWorkflow,
    "feedback_event": FeedbackEvent,
}
# A link names at most this many source events (a URL stays well under the servers' limits).
EVENTS_LINKED = 100


@admin.register(LearningPromotion)
class LearningPromotionAdmin(ReadOnlyAdmin):
    """Read-only here: lifecycle actions go through the console and the API (and their audit trail)."""

    list_display = (
        "created_at",
        "promotion_type",
        "subject",
        "status",
        "risk_level",
        "confidence",
        "project",
        "target_name",
        "promotion_path",
        "reviewed_by",
    )
    list_filter = ("status", "promotion_type", "risk_level", "promotion_path", "project")
    search_fields = ("=id", "subject_id", "review_notes", "rule")
    list_select_related = ("reviewed_by", "project", "target")
    list_defer = ("proposed_learning", "source_event_ids", "rule", "review_notes")
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
    fields = (
        "status",
        "promotion_type",
        "promotion_path",
        "rule",
        "subject_type",
        "subject_id",
        "subject_row",
        "project",
        "target",
        "confidence",
        "risk_level",
        "proposed_learning",
        "source_events",
        "destination",
        "audit_trail",
        "review_notes",
        "reviewed_by",
        "reviewed_at",
        "applied_at",
        "expires_at",
        "superseded_by",
        "created_at",
        "updated_at",
    )
    readonly_fields = ("subject_row", "source_events", "destination", "audit_trail")
    target_name = related("target__name", "target")

    @admin.display(description="subject")
    def subject(self, obj: LearningPromotion) -> str:
        return f"{obj.subject_type} {obj.subject_id}"

    @admin.display(description="subject row")
    def subject_row(self, obj: LearningPromotion) -> object:
        model = SUBJECT_MODELS.get(obj.subject_type)
        return link(admin_change_url(model, obj.subject_id), f"{obj.subject_type} {obj.subject_id}") if model else "—"

    @admin.display(description="source events")
    def source_events(self, obj: LearningPromotion) -> object:
        ids = [str(i) for i in obj.source_event_ids or []]
        if not ids:
            return "—"
        url = admin_changelist_url(FeedbackEvent, id__in=",".join(ids[:EVENTS_LINKED]))
        text = f"{len(ids)} event(s)" if len(ids) <= EVENTS_LINKED else f"{len(ids)} events (the first {EVENTS_LINKED})"
        return link(url, text)

    @admin.display(description="destination")
    def destination(self, obj: LearningPromotion) -> object:
        if not obj.destination_table:
            return "— (not applied)"
        url = admin_change_url(model_for_table(obj.destination_table), obj.destination_record_id)
        return link(url, f"{obj.destination_table} {obj.destination_record_id}")

    @admin.display(description="audit trail")
    def audit_trail(self, obj: LearningPromotion) -> object:
        return link(
            admin_changelist_url(FeedbackEvent, subject_type="promotion", subject_id=str(obj.pk)),
            "every lifecycle event",
        )

    def get_object_links(self, request: HttpRequest, obj: LearningPromotion) -> list[tuple[str, str]]:
        return [("View in console", reverse("console-promotion", args=[obj.pk]))]


@admin.register(ScanRun)
class ScanRunAdmin(ReadOnlyAdmin):
    """Read-only here: scans are queued through the API or the console, and run by a worker."""

    list_display = ("created_at", "scanner", "status", "requested_by", "started_at", "finished_at")
    list_filter = ("status", "scanner")
    list_select_related = ("requested_by",)
    list_defer = ("report", "error")
    date_hierarchy = "created_at"
    ordering = ("-created_at",)


@admin.register(RetrievalScanState)
class RetrievalScanStateAdmin(ReadOnlyAdmin):
    """What the retrieval scan's judgements are of (one row): the rollup generation and the reference."""

    list_display = ("id", "generation", "updated_at")


@admin.register(RetrievalScanJudgement)
class RetrievalScanJudgementAdmin(ReadOnlyAdmin):
    """The retrieval scan's judgement of each query neighbourhood: redone when its rollups change."""

    list_display = ("terms", "project_id", "groups", "already_first", "decided")
    search_fields = ("terms",)
    list_defer = ("decisions",)
    ordering = ("-decided", "terms")
    show_full_result_count = False


# --- deletions through the services that audit them ----------------------------------------------


class AuditedDelete:
    """Delete through ``delete_one(actor, obj)``; the confirmation page says what the service does
    instead of listing Django's cascade (which the service replaces)."""

    consequence = ""

    def delete_one(self, actor: Actor, obj: Any) -> object:
        raise NotImplementedError

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> tuple[list[str], dict, set, list]:
        return [f"{obj}: {self.consequence}" for obj in objs], {}, set(), []

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        self.delete_one(Actor.from_request(request), obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        actor = Actor.from_request(request)
        for obj in queryset:
            try:
                self.delete_one(actor, obj)
            except ApplicationError as exc:
                self.message_user(request, f"{obj} was not deleted: {exc.message}", messages.ERROR)  # type: ignore[attr-defined]


class ErasingUserAdmin(AuditedDelete, accounts_admin.UserAdmin):
    """Deleting a user erases them (``user_erase``), as ``POST /api/v1/users/<id>/erase`` does."""

    consequence = (
        "erased: their preferences, workflows, taste patterns, memories, messages, traces, ratings, keys "
        "and memberships are deleted; their feedback events stay, anonymised, under a user_erased event."
    )

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        own = obj is not None and obj.pk == request.user.pk  # as the API: never yourself
        return admin.ModelAdmin.has_delete_permission(self, request, obj) and not own

    def delete_one(self, actor: Actor, obj: User) -> object:
        if actor.user is not None and actor.user.pk == obj.pk:
            raise ApplicationError("you cannot erase yourself; ask another admin or use manage.py erase_user.")
        return user_erase(actor=actor, user=obj)


class AuditedProjectAdmin(AuditedDelete, accounts_admin.ProjectAdmin):
    """Deleting a project goes through ``project_delete``: a project_deleted event, then its events,
    ratings, promotions and traces lose the project and stay."""

    consequence = (
        "deleted with its intelligence targets, memberships and documents; its events, task ratings, "
        "promotions and traces stay without it, after a project_deleted event that records it."
    )

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return admin.ModelAdmin.has_delete_permission(self, request, obj)

    def delete_one(self, actor: Actor, obj: Project) -> object:
        return project_delete(actor=actor, project_id=obj.pk)


class AuditedTargetAdmin(AuditedDelete, intelligence_admin.IntelligenceTargetAdmin):
    """Deleting a target goes through ``target_delete``: a target_deleted event, then what named it
    (events, promotions, traces) loses it and stays."""

    consequence = (
        "deleted with its cards, packets and rules; the events, promotions and traces that named it stay "
        "without it, after a target_deleted event that records it."
    )

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_manage_permission(request, obj)

    def delete_one(self, actor: Actor, obj: IntelligenceTarget) -> object:
        return target_delete(actor=actor, target_id=obj.pk)


for model, model_admin in (
    (User, ErasingUserAdmin),
    (Project, AuditedProjectAdmin),
    (IntelligenceTarget, AuditedTargetAdmin),
):
    admin.site.unregister(model)
    admin.site.register(model, model_admin)
