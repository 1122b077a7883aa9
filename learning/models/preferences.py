"""Learned response-style preferences, in the user's own terms."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from core.fields import EmbeddingField
from learning.models.messages import ChatMessage

PREFERENCE_CATEGORIES = ("tone", "length", "format", "expertise", "output", "behavior")


class Preference(models.Model):
    """A response-style preference of one user, learned or added by hand: what they asked for in
    their own words (``description``), under a key (``preference``) that paraphrases reinforce."""

    class Source(models.TextChoices):
        LEARNED = "learned"
        MANUAL = "manual"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    category = models.CharField(max_length=16, choices=[(c, c) for c in PREFERENCE_CATEGORIES])
    # A stable key: a slug of the first wording plus a short digest (older rows: a catalogue slug).
    preference = models.SlugField(max_length=100)
    description = models.CharField(max_length=500)
    # "name:pole" ("length:short") when it lies on a canonical axis: only to detect contradictions.
    axis = models.CharField(max_length=64, blank=True, default="")
    # The description's embedding: how a paraphrase finds this row (computed on first comparison).
    embedding = EmbeddingField(null=True, blank=True)
    # Learned at low confidence: kept and listed, never injected until said again with confidence.
    candidate = models.BooleanField(default=False)
    source_message = models.ForeignKey(ChatMessage, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    confidence = models.FloatField(default=0.5)
    times_reinforced = models.PositiveIntegerField(default=1)
    active = models.BooleanField(default=True)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.LEARNED)
    # The user's words read like instructions to the assistant: rendered quoted, flagged for review.
    needs_review = models.BooleanField(default=False)
    # Why an inactive preference is inactive: "user", "contradicted", "decayed".
    inactive_reason = models.CharField(max_length=32, blank=True, default="")
    superseded_by = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    superseded_at = models.DateTimeField(null=True, blank=True)
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
