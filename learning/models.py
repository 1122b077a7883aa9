"""Chat history, learned preferences, prompt patterns, workflows, memories, taste patterns and
agent learnings (with the record of where each learning was injected), and command runs with their
decisions (what taste is learned from)."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from core.fields import EmbeddingField

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
