"""Chat history, learned preferences, prompt patterns, workflows and memories."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from retrieval.fields import EmbeddingField

PREFERENCE_CATEGORIES = ("tone", "length", "format", "expertise", "output", "behavior")


class ChatMessage(models.Model):
    """One message of a conversation: the evidence the analyzer reads."""

    class Role(models.TextChoices):
        USER = "user"
        ASSISTANT = "assistant"
        SYSTEM = "system"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    session_id = models.CharField(max_length=255)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    project = models.ForeignKey("accounts.Project", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    role = models.CharField(max_length=16, choices=Role.choices)
    content = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    # Set once the analysis ran (or was skipped): a second delivery of the task is a no-op.
    analyzed_at = models.DateTimeField(null=True, blank=True)
    analysis = models.JSONField(null=True, blank=True)
    # A worker that took this message into its batch; others skip it until this passes.
    analysis_claimed_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "chat_history"
        ordering = ["created_at"]
        indexes = [
            models.Index("user", "session_id", "created_at", name="chat_user_session_created"),
            models.Index("created_at", name="chat_unanalyzed", condition=Q(analyzed_at__isnull=True, role="user")),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(role__in=["user", "assistant", "system"]), name="chat_role_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:60]}"


class Preference(models.Model):
    """A response-style preference of one user, learned or added by hand."""

    class Source(models.TextChoices):
        LEARNED = "learned"
        MANUAL = "manual"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    category = models.CharField(max_length=16, choices=[(c, c) for c in PREFERENCE_CATEGORIES])
    preference = models.SlugField(max_length=100)
    description = models.CharField(max_length=500)
    source_message = models.ForeignKey(ChatMessage, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    confidence = models.FloatField(default=0.5)
    times_reinforced = models.PositiveIntegerField(default=1)
    active = models.BooleanField(default=True)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.LEARNED)
    # Why an inactive preference is inactive: "user", "contradicted", "decayed".
    inactive_reason = models.CharField(max_length=32, blank=True, default="")
    superseded_by = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    last_reinforced_at = models.DateTimeField(auto_now_add=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "user_llm_preferences"
        ordering = ["-confidence", "-last_reinforced_at"]
        indexes = [models.Index("user", "active", name="pref_user_active")]
        constraints = [
            models.UniqueConstraint(fields=["user", "category", "preference"], name="pref_unique_user_category_slug"),
            models.CheckConstraint(condition=Q(category__in=PREFERENCE_CATEGORIES), name="pref_category_valid"),
            models.CheckConstraint(condition=Q(confidence__gte=0, confidence__lte=1), name="pref_confidence_range"),
            models.CheckConstraint(condition=Q(source__in=["learned", "manual"]), name="pref_source_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.category}/{self.preference}"


class PromptPattern(models.Model):
    """One user prompt, hashed and embedded: the rolling window workflows are found in."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    session_id = models.CharField(max_length=255)
    message = models.OneToOneField(ChatMessage, on_delete=models.CASCADE, related_name="pattern")
    prompt_hash = models.CharField(max_length=64)
    prompt_summary = models.CharField(max_length=300)
    prompt_category = models.CharField(max_length=32, blank=True, default="")
    embedding = EmbeddingField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "user_prompt_patterns"
        ordering = ["-created_at"]
        indexes = [models.Index("user", models.F("created_at").desc(), name="pattern_user_created")]

    def __str__(self) -> str:
        return self.prompt_summary


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
    expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "ai_memories"
        ordering = ["-created_at"]
        indexes = [models.Index("owner", "status", name="memory_owner_status")]
        constraints = [
            models.UniqueConstraint(fields=["owner", "content_hash"], name="memory_unique_owner_content"),
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
