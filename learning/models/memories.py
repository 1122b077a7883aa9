"""Memories: durable facts about a user (private), or shared copies made by applied promotions."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from learning.models.messages import ChatMessage


class Memory(models.Model):
    """A durable statement about a person ("I follow a strict gluten-free diet")."""

    class Visibility(models.TextChoices):
        PRIVATE = "private"
        TEAM = "team"
        PROJECT = "project"

    class Kind(models.TextChoices):
        FACT = "fact"
        PREFERENCE = "preference"
        COMMITMENT = "commitment"
        LESSON = "lesson"
        CONTEXT = "context"

    class Status(models.TextChoices):
        ACTIVE = "active"
        ARCHIVED = "archived"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    project = models.ForeignKey("accounts.Project", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    visibility = models.CharField(max_length=16, choices=Visibility.choices, default=Visibility.PRIVATE)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.FACT)
    content = models.TextField()
    content_hash = models.CharField(max_length=64)
    confidence = models.FloatField(default=0.5)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    source_message = models.ForeignKey(ChatMessage, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # Team and project memories exist only as the destination of an applied promotion. A plain id:
    # the ledger points here (destination_record_id); learning does not depend on promotions.
    promotion_id = models.UUIDField(null=True, blank=True, unique=True)
    # Text that reads like instructions to the assistant: kept, quoted, never shared.
    needs_review = models.BooleanField(default=False)
    expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    edited_at = models.DateTimeField(null=True, blank=True)  # last changed by its owner

    class Meta:
        db_table = "ai_memories"
        ordering = ["-created_at"]
        verbose_name_plural = "memories"
        indexes = [
            models.Index("owner", "status", name="memory_owner_status"),
            models.Index("visibility", "status", "project", name="memory_shared"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "content_hash"], condition=Q(visibility="private"), name="memory_unique_owner_content"
            ),
            models.CheckConstraint(
                condition=Q(visibility="private") | Q(promotion_id__isnull=False) | Q(status="archived"),
                name="memory_shared_only_by_promotion",
            ),
            models.CheckConstraint(
                condition=Q(visibility__in=["private", "team", "project"]), name="memory_visibility_valid"
            ),
            models.CheckConstraint(
                condition=Q(kind__in=["fact", "preference", "commitment", "lesson", "context"]),
                name="memory_kind_valid",
            ),
            models.CheckConstraint(condition=Q(confidence__gte=0, confidence__lte=1), name="memory_confidence_range"),
        ]

    def __str__(self) -> str:
        return f"{self.kind}: {self.content[:60]}"
