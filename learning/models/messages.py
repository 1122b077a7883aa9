"""The chat history the analyzer reads, and each user prompt's pattern (the workflow window)."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from core.fields import EmbeddingField


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
    # What the analysis taught ([{kind, id, text}]), kept so "what did this message teach?" is one read.
    learned = models.JSONField(default=list, blank=True)
    # The caller's id for this message (body client_message_id or Idempotency-Key): a retry with it
    # returns this message and the context it was answered with (kept only for such messages).
    client_message_id = models.CharField(max_length=255, null=True, blank=True)
    replay_context = models.JSONField(null=True, blank=True)

    class Meta:
        db_table = "chat_history"
        ordering = ["created_at"]
        indexes = [
            models.Index("user", "session_id", "created_at", name="chat_user_session_created"),
            models.Index("created_at", name="chat_unanalyzed", condition=Q(analyzed_at__isnull=True, role="user")),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(role__in=["user", "assistant", "system"]), name="chat_role_valid"),
            models.UniqueConstraint(
                fields=["user", "client_message_id"],
                condition=Q(client_message_id__isnull=False),
                name="chat_unique_client_message_id",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:60]}"

    @property
    def analysis_state(self) -> str:
        """ "done" once analysed (assistant and system messages have nothing to analyse), else "pending"."""
        return "done" if self.analyzed_at is not None or self.role != self.Role.USER else "pending"


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
