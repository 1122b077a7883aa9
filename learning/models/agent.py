"""Agent learnings (prevention prompts) and the record of every learning injected into a response."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q


class AgentLearning(models.Model):
    """A prevention prompt learned from repeated thumbs-down on similar responses; exists only as
    the destination of an applied promotion, scoped by project, tool and tags."""

    class Status(models.TextChoices):
        ACTIVE = "active"
        PAUSED = "paused"
        RETIRED = "retired"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey("accounts.Project", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    tool_name = models.CharField(max_length=100, blank=True, default="")  # "": every tool
    tags = models.JSONField(default=list, blank=True)
    title = models.CharField(max_length=200)
    prevention_prompt = models.TextField()
    evidence = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    promotion_id = models.UUIDField(unique=True)  # the promotion that made it (a plain id, as on Memory)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "agent_learnings"
        ordering = ["-created_at"]
        indexes = [models.Index("status", "project", name="agent_learning_scope")]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["active", "paused", "retired"]), name="agent_learning_status_valid"
            ),
        ]

    def __str__(self) -> str:
        return self.title


class LearningUsage(models.Model):
    """One learned item injected into one context: which, for whom, where, and (once feedback on
    the response arrives) whether it helped. Agent learnings link their row; every other kind
    (preference, workflow, taste pattern, memory, task example) names itself by type and id."""

    class Outcome(models.TextChoices):
        PENDING = "pending"
        HELPED = "helped"
        HURT = "hurt"

    learning = models.ForeignKey(AgentLearning, null=True, blank=True, on_delete=models.CASCADE, related_name="usages")
    item_type = models.CharField(max_length=32)
    item_id = models.CharField(max_length=64)
    # Written on every context: no index of its own beyond what its reads need (by response, by item).
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", db_index=False)
    project = models.ForeignKey(
        "accounts.Project", null=True, blank=True, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    surface = models.CharField(max_length=50, blank=True, default="")
    plugin = models.CharField(max_length=100, blank=True, default="")
    command = models.CharField(max_length=100, blank=True, default="")
    tool_name = models.CharField(max_length=100, blank=True, default="")
    response_id = models.CharField(max_length=255, blank=True, default="")
    outcome = models.CharField(max_length=16, choices=Outcome.choices, default=Outcome.PENDING)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "agent_learning_usages"
        ordering = ["-created_at"]
        indexes = [
            models.Index("response_id", name="usage_response"),
            models.Index("item_type", "item_id", name="usage_item"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(outcome__in=["pending", "helped", "hurt"]), name="usage_outcome_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.item_type} {self.item_id} → {self.response_id or '-'} ({self.outcome})"
