"""The promotion ledger: evidence becomes durable behaviour only through review."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q


class PromotionStatus(models.TextChoices):
    CANDIDATE = "candidate"
    APPROVED = "approved"
    REJECTED = "rejected"
    APPLIED = "applied"
    PAUSED = "paused"
    SUPERSEDED = "superseded"
    EXPIRED = "expired"


# A subject has at most one promotion in these states at a time.
OPEN_STATUSES = (PromotionStatus.CANDIDATE, PromotionStatus.APPROVED)
# States a promotion can be superseded from.
LIVE_STATUSES = (PromotionStatus.CANDIDATE, PromotionStatus.APPROVED, PromotionStatus.APPLIED, PromotionStatus.PAUSED)


class RiskLevel(models.TextChoices):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"


class PromotionPath(models.TextChoices):
    """How a promotion came to be (the design's four paths); its ``rule`` says which rule fired."""

    HUMAN_REVIEW = "human_review"  # proposed for a person to decide
    REPEATED_FAILURE = "repeated_failure"  # the same failure, at least twice, with similar signatures
    WORKFLOW_OUTCOME = "workflow_outcome"  # a high-confidence workflow outcome
    EVAL_FAILURE = "eval_failure"  # a deterministic eval failure that maps to a prevention rule


# Paths that may approve and apply by themselves (at low risk only); human review never does.
AUTOMATIC_PATHS = (PromotionPath.REPEATED_FAILURE, PromotionPath.WORKFLOW_OUTCOME, PromotionPath.EVAL_FAILURE)


class LearningPromotion(models.Model):
    """One proposed change of behaviour, from the evidence that suggested it to where it was applied."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    status = models.CharField(max_length=16, choices=PromotionStatus.choices, default=PromotionStatus.CANDIDATE)
    promotion_type = models.CharField(max_length=50)
    # Set null on delete: the ledger and its audit outlive the project and target they describe.
    project = models.ForeignKey("accounts.Project", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    target = models.ForeignKey(
        "intelligence.IntelligenceTarget", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    promotion_path = models.CharField(max_length=20, choices=PromotionPath.choices, default=PromotionPath.HUMAN_REVIEW)
    rule = models.TextField(blank=True, default="")  # the rule that fired, in words (thresholds included)
    # What the promotion is about ("chunk" 42, "task_feedback" <uuid>): one open promotion each.
    subject_type = models.CharField(max_length=50)
    subject_id = models.CharField(max_length=255)
    source_event_ids = models.JSONField(default=list, blank=True)
    destination_table = models.CharField(max_length=100, blank=True, default="")
    destination_record_id = models.CharField(max_length=255, blank=True, default="")
    confidence = models.FloatField(default=0.5)
    risk_level = models.CharField(max_length=8, choices=RiskLevel.choices, default=RiskLevel.LOW)
    proposed_learning = models.JSONField(default=dict, blank=True)
    review_notes = models.TextField(blank=True, default="")
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)
    applied_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    superseded_by = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        db_table = "ai_learning_promotions"
        ordering = ["-created_at"]
        indexes = [
            models.Index("status", models.F("created_at").desc(), name="promo_status_created"),
            models.Index("promotion_type", "status", name="promo_type_status"),
            models.Index("subject_type", "subject_id", name="promo_subject"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=PromotionStatus.values), name="promo_status_valid"),
            models.CheckConstraint(condition=Q(risk_level__in=RiskLevel.values), name="promo_risk_valid"),
            models.CheckConstraint(condition=Q(confidence__gte=0, confidence__lte=1), name="promo_confidence_range"),
            models.CheckConstraint(condition=Q(promotion_path__in=PromotionPath.values), name="promo_path_valid"),
            # Never a second open candidate for the same subject, even under concurrent scans.
            models.UniqueConstraint(
                fields=["promotion_type", "subject_type", "subject_id"],
                condition=Q(status__in=["candidate", "approved"]),
                name="promo_one_open_per_subject",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.promotion_type} {self.subject_type}:{self.subject_id} ({self.status})"


class Scanner(models.TextChoices):
    """What one scan runs: every scanner, or one of them."""

    ALL = "all"
    RETRIEVAL = "retrieval"
    AGENT_LEARNING = "agent_learning"
    TASK_EXAMPLE = "task_example"
    PACKET_RULE = "packet_rule"
    ATTRIBUTION = "attribution"
    TOOL_FAILURE = "tool_failure"
    TASK_RATING = "task_rating"
    WORKFLOW_OUTCOME = "workflow_outcome"
    EVAL_FAILURE = "eval_failure"


class ScanStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


# A scanner has at most one run in these states at a time.
OPEN_SCAN_STATUSES = (ScanStatus.QUEUED, ScanStatus.RUNNING)


class ScanRun(models.Model):
    """One scan, queued by the API, the console or the schedule and run by a worker: its progress,
    then each scanner's report (or the error that stopped it)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    scanner = models.CharField(max_length=20, choices=Scanner.choices, default=Scanner.ALL)
    status = models.CharField(max_length=10, choices=ScanStatus.choices, default=ScanStatus.QUEUED)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Progress: the scanner running now, as step (0-based) of total.
    current = models.CharField(max_length=20, blank=True, default="")
    step = models.PositiveSmallIntegerField(default=0)
    total = models.PositiveSmallIntegerField(default=0)
    report = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "ai_promotion_scan_runs"
        ordering = ["-created_at"]
        indexes = [models.Index(models.F("created_at").desc(), name="scan_run_created")]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=ScanStatus.values), name="scan_run_status_valid"),
            models.CheckConstraint(condition=Q(scanner__in=Scanner.values), name="scan_run_scanner_valid"),
            # Asking again while a scan of that kind is open returns it; never two at once.
            models.UniqueConstraint(
                fields=["scanner"], condition=Q(status__in=["queued", "running"]), name="scan_run_one_open_per_scanner"
            ),
        ]

    def __str__(self) -> str:
        return f"scan {self.scanner} ({self.status})"

    @property
    def is_open(self) -> bool:
        return self.status in OPEN_SCAN_STATUSES


class RetrievalScanState(models.Model):
    """What the retrieval scan's stored judgements are of (one row, locked while they change): the
    trace rollups at ``generation``, judged under ``reference`` (the propensity model, global rates,
    relevance priors, the prior's sample and a fingerprint of the settings they were fitted with)."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    generation = models.BigIntegerField(default=0)
    reference = models.JSONField(default=dict, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "ai_retrieval_scan_state"

    def __str__(self) -> str:
        return f"judged at rollup generation {self.generation}"


class RetrievalScanJudgement(models.Model):
    """One query neighbourhood's judgement by the retrieval scan: how many of its (chunk) groups had
    the evidence to be judged, the boosts left out because the chunk is already first there, and the
    boosts and penalties it decided (each with its figures). Redone when the neighbourhood's rollups
    change; read by every scan, which proposes from them."""

    ident = models.CharField(max_length=40, unique=True)  # a digest of (project, terms)
    project_id = models.BigIntegerField(null=True, blank=True)  # a plain id, like the rollups' keys
    terms = models.TextField()
    groups = models.IntegerField(default=0)
    already_first = models.IntegerField(default=0)
    decided = models.IntegerField(default=0)  # how many decisions
    decisions = models.JSONField(default=list, blank=True)

    class Meta:
        db_table = "ai_retrieval_scan_judgements"
        indexes = [models.Index(fields=["decided"], name="retrieval_judgement_decided")]

    def __str__(self) -> str:
        return f"{self.project_id or '-'} [{self.terms}]: {self.decided} of {self.groups}"
