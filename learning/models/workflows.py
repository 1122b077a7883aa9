"""Workflows: the same kind of request, seen three or more times."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from core.fields import EmbeddingField


class LearnedWorkflow(models.Model):
    """A kind of request a user makes again and again, and how they want it answered."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    workflow_name = models.CharField(max_length=200)
    trigger_pattern = models.CharField(max_length=500)
    learned_steps = models.JSONField(default=list, blank=True)
    preferred_output = models.CharField(max_length=500, blank=True, default="")
    example_input = models.TextField(blank=True, default="")
    example_output = models.TextField(blank=True, default="")
    times_detected = models.PositiveIntegerField(default=1)
    last_used_at = models.DateTimeField(null=True, blank=True)
    confidence = models.FloatField(default=0.5)
    active = models.BooleanField(default=True)
    # Mean embedding of the prompts that made it: how later prompts are matched to it.
    embedding = EmbeddingField(null=True, blank=True)
    # A private workflow is its user's; a shared copy (made by an applied ``workflow`` promotion)
    # reaches the members of its project (or everyone, for ``team``) and keeps its source.
    visibility = models.CharField(
        max_length=10, choices=[("private", "private"), ("team", "team"), ("project", "project")], default="private"
    )
    project = models.ForeignKey(
        "accounts.Project", null=True, blank=True, on_delete=models.CASCADE, related_name="shared_workflows"
    )
    shared_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="copies")
    promotion_id = models.UUIDField(null=True, blank=True, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "user_learned_workflows"
        ordering = ["-confidence", "-times_detected"]
        indexes = [models.Index("user", "active", name="workflow_user_active")]
        constraints = [
            models.CheckConstraint(condition=Q(confidence__gte=0, confidence__lte=1), name="workflow_confidence_range"),
        ]

    def __str__(self) -> str:
        return self.workflow_name
