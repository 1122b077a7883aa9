"""Taste: command runs, the user's one decision on each, and the patterns learned from them."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


class TastePattern(models.Model):
    """A direction a user keeps correcting one tool's output in, distilled into an instruction
    for its future runs ("Keep email draft outputs concise: under 150 words")."""

    class Status(models.TextChoices):
        CANDIDATE = "candidate"  # applied on trial, with a visible notice
        ACTIVE = "active"  # confirmed by accepted outputs
        REJECTED = "rejected"  # overridden three times in a row, or "stop applying this"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    plugin = models.CharField(max_length=100)
    command = models.CharField(max_length=100, null=True, blank=True)  # None: every command of the plugin
    pattern_type = models.CharField(max_length=16, default="taste")
    correction_type = models.CharField(max_length=32)
    direction = models.CharField(max_length=120)
    description = models.CharField(max_length=500)
    instruction = models.CharField(max_length=500)
    evidence = models.JSONField(default=dict, blank=True)
    confidence = models.FloatField(default=0.0)
    observations = models.PositiveIntegerField(default=0)
    confirmations = models.PositiveIntegerField(default=0)
    rejections = models.PositiveIntegerField(default=0)
    consecutive_rejections = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.CANDIDATE)
    rejected_reason = models.CharField(max_length=32, blank=True, default="")
    last_applied_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "taste_patterns"
        ordering = ["-confidence", "-observations"]
        indexes = [models.Index("user", "plugin", "status", name="taste_user_plugin_status")]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "plugin", "command", "correction_type", "direction"], name="taste_unique_direction"
            ),
            # The constraint above lets NULLs differ: a plugin-wide pattern (command NULL) needs its own.
            models.UniqueConstraint(
                fields=["user", "plugin", "correction_type", "direction"],
                condition=Q(command__isnull=True),
                name="taste_unique_plugin_direction",
            ),
            models.CheckConstraint(
                condition=Q(status__in=["candidate", "active", "rejected"]), name="taste_status_valid"
            ),
            models.CheckConstraint(condition=Q(confidence__gte=0, confidence__lte=1), name="taste_confidence_range"),
        ]

    def __str__(self) -> str:
        return f"{self.plugin}/{self.command or '*'}: {self.instruction[:60]}"


class CommandRun(models.Model):
    """One run of a tool (a plugin's command) and the output it showed: what a decision is about.
    Its id is the run_id the API returns; the ``post_command`` event it wrote is its trace in the
    feedback stream."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # Indexed by command_run_user_tool, which starts with it.
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", db_index=False)
    project = models.ForeignKey("accounts.Project", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    session_id = models.CharField(max_length=255, blank=True, default="")
    plugin = models.CharField(max_length=100)
    command = models.CharField(max_length=100)
    parameters = models.JSONField(default=dict, blank=True)
    output = models.TextField(blank=True, default="")
    # The ids of the taste patterns in force when it ran: its decision confirms or overrides them.
    applied_patterns = models.JSONField(default=list, blank=True)
    # What the tool reported (None: not said). A success the user did not correct before the next
    # run of the command confirms the patterns applied to it.
    succeeded = models.BooleanField(null=True, blank=True)
    # When the applied patterns were judged, by its decision or by its uncorrected success: once.
    judged_at = models.DateTimeField(null=True, blank=True)
    event = models.OneToOneField("feedback.FeedbackEvent", on_delete=models.PROTECT, related_name="+")
    # Not auto_now_add: runs copied from older events keep the time they ran.
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        db_table = "command_runs"
        ordering = ["-created_at"]
        indexes = [
            models.Index("user", "plugin", "command", models.F("created_at").desc(), name="command_run_user_tool"),
        ]

    def __str__(self) -> str:
        return f"{self.plugin}/{self.command} run {self.id}"


class CommandDecision(models.Model):
    """What the user did with one run's output, and the corrections derived from it. One per run:
    the one-to-one column's unique constraint is that rule."""

    class Decision(models.TextChoices):
        ACCEPTED = "accepted"
        EDITED = "edited"
        REJECTED = "rejected"
        RERUN = "rerun"

    run = models.OneToOneField(CommandRun, on_delete=models.CASCADE, related_name="decision")
    decision = models.CharField(max_length=16, choices=Decision.choices)
    edited_output = models.TextField(null=True, blank=True)  # an edited decision's text
    parameters = models.JSONField(null=True, blank=True)  # a rerun's new parameters
    corrections = models.JSONField(default=list, blank=True)  # [{type, direction, detail}]
    event = models.OneToOneField("feedback.FeedbackEvent", on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        db_table = "command_decisions"
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(decision__in=["accepted", "edited", "rejected", "rerun"]), name="command_decision_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.decision} on run {self.run_id}"
