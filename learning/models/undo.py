"""Undo entries: what a user's change to a learned item replaced, kept briefly so the change can be undone."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.db.models import Q
from django.utils import timezone

UNDO_SUBJECTS = ("preference", "workflow", "memory", "taste_pattern")


class UndoEncoder(DjangoJSONEncoder):
    """Django's encoder, but a datetime keeps its microseconds (Django's cuts them to
    milliseconds): an undo puts timestamps back exactly."""

    def default(self, o: Any) -> Any:
        if isinstance(o, datetime.datetime):
            return o.isoformat()
        return super().default(o)


class UndoEntry(models.Model):
    """One change a user made to one of their learned items (switched it off, edited it, deleted
    it, stopped it...) and the state it replaced: the fields it changed, or the whole row when the
    item was deleted. Undoing puts that state back and uses the entry up; entries older than
    ``LEARNING_UNDO_SECONDS`` are refused and purged (a deleted item is then gone for good)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    subject_type = models.CharField(max_length=16, choices=[(s, s) for s in UNDO_SUBJECTS])
    subject_id = models.CharField(max_length=64)
    # What was done: switched_off, switched_on, added, deleted, edited, stopped, resumed.
    action = models.CharField(max_length=16)
    # The state the change replaced (see learning.services.undo for its shape).
    before = models.JSONField(default=dict, encoder=UndoEncoder)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        db_table = "learning_undo_entries"
        ordering = ["-created_at"]
        indexes = [
            models.Index("user", "subject_type", "subject_id", models.F("created_at").desc(), name="undo_subject"),
            models.Index("created_at", name="undo_created"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(subject_type__in=UNDO_SUBJECTS), name="undo_subject_type_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.action} {self.subject_type} {self.subject_id}"
