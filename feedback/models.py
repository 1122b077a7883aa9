"""The unified, append-only feedback event stream, and task ratings."""

from __future__ import annotations

import uuid
from typing import Any, NoReturn

from django.conf import settings
from django.db import connections, models, transaction
from django.db.models import Q
from django.utils import timezone


class EventFamily(models.TextChoices):
    RETRIEVAL = "retrieval"
    ATTRIBUTION = "attribution"
    ASSISTANT_RESPONSE = "assistant_response"
    TOOL_ACTION = "tool_action"
    TASK_GENERATION = "task_generation"
    PACKET_QUALITY = "packet_quality"
    DOCUMENT_REVIEW = "document_review"
    USER_PREFERENCE = "user_preference"
    WORKFLOW_OUTCOME = "workflow_outcome"
    EVAL_FAILURE = "eval_failure"


class Signal(models.TextChoices):
    POSITIVE = "positive"
    NEGATIVE = "negative"
    CORRECTED = "corrected"
    ACCEPTED = "accepted"
    IGNORED = "ignored"
    COMPLETED = "completed"
    FAILED = "failed"
    NEEDS_REVIEW = "needs_review"
    STALE = "stale"
    CONFLICTING = "conflicting"


# Events about a person's own preferences or memories are theirs alone (and admins').
PRIVATE_FAMILIES = frozenset({EventFamily.USER_PREFERENCE})
PRIVATE_SUBJECT_TYPES = frozenset({"preference", "memory"})


class AppendOnlyError(Exception):
    """Raised on any attempt to change or remove a feedback event."""


# The one change the stream allows: anonymising a user's events when the user is erased. Every
# column that can carry what a person wrote or who they are is cleared to these values; the others
# (what happened, when, in which project, about which subject) stay as evidence. The PostgreSQL
# trigger (migration 0003) enforces exactly these values.
ERASED_WRITER = "erased"
ANONYMISED: dict[str, Any] = {
    "user": None,
    "free_text": "",
    "before_snapshot": {},
    "after_snapshot": {},
    "source_context": {},
    "metadata": {},
    "session_id": "",
    "idempotency_key": None,
    "writer": ERASED_WRITER,
}
ERASURE_SETTING = "ai_feedback_events.erasure"
ERASURE_EVENT_TYPE = "user_erased"
# The other audited change: when a project or an intelligence target is deleted, the events that
# name it lose that one reference (project to null, target_id to ""), under the id of the
# ``project_deleted`` / ``target_deleted`` event that records the deletion; nothing else changes.
# The PostgreSQL trigger (migration 0004) enforces exactly this.
DETACH_SETTING = "ai_feedback_events.detach"
PROJECT_DELETED_EVENT_TYPE = "project_deleted"
TARGET_DELETED_EVENT_TYPE = "target_deleted"


class AppendOnlyQuerySet(models.QuerySet):
    def anonymise_user(self, *, user_id: int, erasure_event_id: uuid.UUID) -> int:
        """The audited exception to append-only, for ``feedback.services.erasure`` alone: clear the
        identifying columns of ``user_id``'s events, under the id of the ``user_erased`` event that
        records the erasure (PostgreSQL's trigger checks it exists and names this user)."""
        connection = connections[self.db]
        with transaction.atomic(using=self.db):
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("SELECT set_config(%s, %s, true)", [ERASURE_SETTING, str(erasure_event_id)])
            rows = models.QuerySet.update(self.filter(user_id=user_id), **ANONYMISED)
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("SELECT set_config(%s, '', true)", [ERASURE_SETTING])
        return rows

    def detach(self, *, project_id: int | None = None, target_id: str = "", deletion_event_id: uuid.UUID) -> int:
        """The audited exception for deletions, for ``feedback.services.detach`` alone: the events of
        ``project_id`` lose their project, or those naming ``target_id`` lose it, under the id of the
        ``project_deleted`` / ``target_deleted`` event that records it (PostgreSQL's trigger checks
        that event exists, names this project or target, and that nothing else changes)."""
        if (project_id is None) == (not target_id):
            raise ValueError("detach one project or one target")
        rows = self.filter(project_id=project_id) if project_id is not None else self.filter(target_id=target_id)
        values: dict[str, Any] = {"project": None} if project_id is not None else {"target_id": ""}
        connection = connections[self.db]
        with transaction.atomic(using=self.db):
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("SELECT set_config(%s, %s, true)", [DETACH_SETTING, str(deletion_event_id)])
            count = models.QuerySet.update(rows, **values)
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("SELECT set_config(%s, '', true)", [DETACH_SETTING])
        return count

    def update(self, **kwargs: Any) -> NoReturn:
        raise AppendOnlyError("Feedback events are append-only: they cannot be updated.")

    def delete(self) -> NoReturn:
        raise AppendOnlyError("Feedback events are append-only: they cannot be deleted.")

    def bulk_update(self, objs: Any, fields: Any, batch_size: Any = None) -> NoReturn:
        raise AppendOnlyError("Feedback events are append-only: they cannot be updated.")

    def update_or_create(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise AppendOnlyError("Feedback events are append-only: they cannot be updated.")


class FeedbackEvent(models.Model):
    """One observed signal from any surface. Written only by ``feedback.services``."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    # PROTECT: an append-only stream cannot cascade-delete or set null by itself; erasing a user
    # (``feedback.services.erasure``) or deleting a project (``feedback.services.detach``) clears
    # the reference first, audited.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # No index of its own: fe_project_family_created leads with it and serves every read by project
    # (one index less for each appended event to maintain).
    project = models.ForeignKey(
        "accounts.Project", null=True, blank=True, on_delete=models.PROTECT, related_name="+", db_index=False
    )
    target_id = models.CharField(max_length=255, blank=True, default="")
    session_id = models.CharField(max_length=255, blank=True, default="")
    source_table = models.CharField(max_length=100, blank=True, default="")
    source_record_id = models.CharField(max_length=255, blank=True, default="")
    event_type = models.CharField(max_length=100)
    event_family = models.CharField(max_length=32, choices=EventFamily.choices)
    surface = models.CharField(max_length=100, blank=True, default="")
    subject_type = models.CharField(max_length=100, blank=True, default="")
    subject_id = models.CharField(max_length=255, blank=True, default="")
    signal = models.CharField(max_length=32, choices=Signal.choices)
    reason_category = models.CharField(max_length=100, blank=True, default="")
    free_text = models.TextField(blank=True, default="")
    # {} when a surface sends none (null only on rows written before that default).
    before_snapshot = models.JSONField(default=dict, null=True, blank=True)
    after_snapshot = models.JSONField(default=dict, null=True, blank=True)
    source_context = models.JSONField(default=dict, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    # Beyond the source design: access and idempotency.
    private = models.BooleanField(default=False)
    writer = models.CharField(max_length=64, editable=False)
    idempotency_key = models.CharField(max_length=255, null=True, blank=True, editable=False)

    objects = AppendOnlyQuerySet.as_manager()

    class Meta:
        db_table = "ai_feedback_events"
        ordering = ["-created_at"]
        indexes = [
            models.Index("project", "event_family", models.F("created_at").desc(), name="fe_project_family_created"),
            models.Index("target_id", "event_family", models.F("created_at").desc(), name="fe_target_family_created"),
            models.Index("subject_type", "subject_id", models.F("created_at").desc(), name="fe_subject_created"),
            models.Index(fields=["source_table", "source_record_id"], name="fe_source_record"),
            models.Index("event_type", "signal", models.F("created_at").desc(), name="fe_type_signal_created"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(event_family__in=EventFamily.values), name="fe_event_family_valid"),
            models.CheckConstraint(condition=Q(signal__in=Signal.values), name="fe_signal_valid"),
            models.CheckConstraint(condition=~Q(event_type=""), name="fe_event_type_not_empty"),
            models.UniqueConstraint(
                fields=["writer", "idempotency_key"],
                condition=Q(idempotency_key__isnull=False),
                name="fe_writer_idempotency_key_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event_family}/{self.event_type}: {self.signal}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AppendOnlyError("Feedback events are append-only: they cannot be updated.")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise AppendOnlyError("Feedback events are append-only: they cannot be deleted.")


class TaskFeedback(models.Model):
    """A user's rating of a generated task; the evidence behind task examples."""

    class Rating(models.TextChoices):
        GOOD = "good"
        BAD = "bad"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    # A rating outlives its project (the evidence stays, unscoped).
    project = models.ForeignKey("accounts.Project", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    task_snapshot = models.JSONField()
    rating = models.CharField(max_length=8, choices=Rating.choices)
    reason = models.TextField(blank=True, default="")
    completed = models.BooleanField(default=False)
    # Set only by the promotion ledger once an admin approved this as a task example.
    promoted = models.BooleanField(default=False)

    class Meta:
        db_table = "ai_task_feedback"
        ordering = ["-created_at"]
        verbose_name_plural = "task feedback"
        indexes = [models.Index("user", models.F("created_at").desc(), name="tf_user_created")]
        constraints = [
            models.CheckConstraint(condition=Q(rating__in=["good", "bad"]), name="tf_rating_valid"),
        ]

    def __str__(self) -> str:
        return f"task feedback {self.id} ({self.rating})"
