"""Project intelligence: the targets learning is scoped to, documents attributed to them, the
signals compiled from those documents into evidence-backed insight cards, the per-target packets
that order the cards, the human reviews of corrections, the durable job ledger of the compiler,
and the attribution and packet rules that only applied promotions create."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q


class TargetKind(models.TextChoices):
    PROJECT = "project"  # the project itself: every project has one
    PACKAGE = "package"
    BUILDING = "building"
    CONTRACT = "contract"
    SCOPE = "scope"  # any other named scope inside a project


class IntelligenceTarget(models.Model):
    """A learning scope anchor: a project, or a named scope inside one. Its profile (aliases, client
    names, addresses, people, explicit ids) is what attribution matches documents against."""

    project = models.ForeignKey("accounts.Project", on_delete=models.CASCADE, related_name="intelligence_targets")
    kind = models.CharField(max_length=16, choices=TargetKind.choices, default=TargetKind.PROJECT)
    slug = models.SlugField(max_length=100)
    name = models.CharField(max_length=200)
    # Free text as people write it; matching normalises (case, spacing, punctuation).
    aliases = models.JSONField(default=list, blank=True)
    client_names = models.JSONField(default=list, blank=True)
    addresses = models.JSONField(default=list, blank=True)
    participants = models.JSONField(default=list, blank=True)  # e-mail addresses or names
    external_ids = models.JSONField(default=list, blank=True)  # job numbers, contract ids ("P-1042")
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "intelligence_targets"
        ordering = ["project_id", "slug"]
        constraints = [
            models.UniqueConstraint(fields=["project", "slug"], name="target_unique_project_slug"),
            models.UniqueConstraint(
                fields=["project"], condition=Q(kind="project"), name="target_one_project_root_per_project"
            ),
            models.CheckConstraint(condition=Q(kind__in=TargetKind.values), name="target_kind_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.project_id}/{self.slug}"


class CardType(models.TextChoices):
    RISK = "risk"
    BLOCKER = "blocker"
    DECISION = "decision"
    TASK = "task"
    UPDATE = "update"
    FINANCIAL = "financial"
    SCHEDULE = "schedule"
    COMMITMENT = "commitment"
    OPEN_QUESTION = "open_question"


class CardStatus(models.TextChoices):
    ACTIVE = "active"
    RESOLVED = "resolved"
    CONTRADICTED = "contradicted"
    STALE = "stale"
    DISMISSED = "dismissed"


class CardOrigin(models.TextChoices):
    """Where a card's statement comes from: documents (evidence) or a remembered fact."""

    SOURCE = "source"
    MEMORY = "memory"


class InsightCard(models.Model):
    """One statement about a target (a risk, a decision, a commitment…), backed by evidence."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey("accounts.Project", on_delete=models.CASCADE, related_name="+")
    target = models.ForeignKey(IntelligenceTarget, on_delete=models.CASCADE, related_name="cards")
    card_type = models.CharField(max_length=16, choices=CardType.choices)
    status = models.CharField(max_length=16, choices=CardStatus.choices, default=CardStatus.ACTIVE)
    origin = models.CharField(max_length=8, choices=CardOrigin.choices, default=CardOrigin.SOURCE)
    title = models.CharField(max_length=300)
    summary = models.TextField(blank=True, default="")
    # Normalised key of what the card says: a similar signal updates this card instead of a new one.
    fingerprint = models.CharField(max_length=64, db_index=True)
    owner = models.CharField(max_length=200, blank=True, default="")
    due_at = models.DateTimeField(null=True, blank=True)
    details = models.JSONField(default=dict, blank=True)  # amounts, dates, anything type-specific
    confidence = models.FloatField(default=0.5)
    first_evidence_at = models.DateTimeField(null=True, blank=True)
    last_evidence_at = models.DateTimeField(null=True, blank=True)
    evidence_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "insight_cards"
        ordering = ["-last_evidence_at", "-created_at"]
        indexes = [
            models.Index("target", "status", "card_type", name="card_target_status_type"),
            models.Index("project", "status", name="card_project_status"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(card_type__in=CardType.values), name="card_type_valid"),
            models.CheckConstraint(condition=Q(status__in=CardStatus.values), name="card_status_valid"),
            models.CheckConstraint(condition=Q(origin__in=CardOrigin.values), name="card_origin_valid"),
            models.CheckConstraint(condition=Q(confidence__gte=0, confidence__lte=1), name="card_confidence_range"),
            models.CheckConstraint(condition=~Q(title=""), name="card_title_not_empty"),
        ]

    def __str__(self) -> str:
        return f"{self.card_type}: {self.title}"


class InsightCardEvidence(models.Model):
    """An excerpt of a source that supports a card. A card exists only with evidence."""

    card = models.ForeignKey(InsightCard, on_delete=models.CASCADE, related_name="evidence")
    # The document and chunk may go (a re-import, a deletion); the excerpt and the id stay.
    document = models.ForeignKey(
        "retrieval.Document", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    chunk = models.ForeignKey("retrieval.Chunk", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    document_ref = models.CharField(max_length=255)
    source_system = models.CharField(max_length=100, blank=True, default="")
    excerpt = models.TextField()
    excerpt_hash = models.CharField(max_length=64)
    observed_at = models.DateTimeField(null=True, blank=True)  # the source's own time
    useful_count = models.PositiveIntegerField(default=0)
    not_useful_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "insight_card_evidence"
        ordering = ["card_id", "-observed_at"]
        verbose_name_plural = "insight card evidence"
        indexes = [models.Index("document_ref", name="card_evidence_document")]
        constraints = [
            models.UniqueConstraint(fields=["card", "excerpt_hash"], name="card_evidence_unique_excerpt"),
            models.CheckConstraint(condition=~Q(excerpt=""), name="card_evidence_excerpt_not_empty"),
        ]

    def __str__(self) -> str:
        return f"evidence of {self.card_id} from {self.document_ref}"


class ReviewState(models.TextChoices):
    PROPOSED = "proposed"
    APPROVED = "approved"
    REJECTED = "rejected"


class InsightCardTarget(models.Model):
    """A reviewable attribution of a card to a target (beyond its own)."""

    card = models.ForeignKey(InsightCard, on_delete=models.CASCADE, related_name="target_links")
    target = models.ForeignKey(IntelligenceTarget, on_delete=models.CASCADE, related_name="card_links")
    status = models.CharField(max_length=10, choices=ReviewState.choices, default=ReviewState.PROPOSED)
    score = models.FloatField(default=0.0)
    reason = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "insight_card_targets"
        constraints = [
            models.UniqueConstraint(fields=["card", "target"], name="card_target_unique"),
            models.CheckConstraint(condition=Q(status__in=ReviewState.values), name="card_target_status_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.card_id} -> {self.target_id} ({self.status})"


class IntelligencePacket(models.Model):
    """One version of a target's packet: its cards in sections, and which sources fed it."""

    target = models.ForeignKey(IntelligenceTarget, on_delete=models.CASCADE, related_name="packets")
    version = models.PositiveIntegerField()
    current = models.BooleanField(default=True)
    # [{"key": "blockers", "title": "Active blockers", "cards": [card ids in order]}]
    sections = models.JSONField(default=list, blank=True)
    # {"fed": [...], "stale": [...], "missing": [...]}: source systems and documents behind it.
    source_coverage = models.JSONField(default=dict, blank=True)
    reason = models.CharField(max_length=200, blank=True, default="")
    built_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "intelligence_packets"
        ordering = ["target_id", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["target", "version"], name="packet_unique_target_version"),
            models.UniqueConstraint(fields=["target"], condition=Q(current=True), name="packet_one_current_per_target"),
        ]

    def __str__(self) -> str:
        return f"packet {self.target_id} v{self.version}"


class IntelligencePacketCard(models.Model):
    """A card's place in one packet version, and why it is there."""

    packet = models.ForeignKey(IntelligencePacket, on_delete=models.CASCADE, related_name="entries")
    card = models.ForeignKey(InsightCard, on_delete=models.CASCADE, related_name="packet_entries")
    section = models.CharField(max_length=50)
    position = models.PositiveIntegerField()
    why = models.TextField(blank=True, default="")

    class Meta:
        db_table = "intelligence_packet_cards"
        ordering = ["packet_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["packet", "card"], name="packet_card_unique"),
            models.UniqueConstraint(fields=["packet", "position"], name="packet_card_unique_position"),
        ]

    def __str__(self) -> str:
        return f"{self.packet_id}#{self.position}: {self.card_id}"


class ReviewKind(models.TextChoices):
    WRONG = "wrong"
    STALE = "stale"
    WRONG_TARGET = "wrong_target"
    MERGE = "merge"
    EDIT = "edit"


class ReviewStatus(models.TextChoices):
    OPEN = "open"
    APPROVED = "approved"
    REJECTED = "rejected"


class IntelligenceReview(models.Model):
    """The human gate for a correction of a card: opened by a user's report, decided by a reviewer."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    card = models.ForeignKey(InsightCard, on_delete=models.CASCADE, related_name="reviews")
    project = models.ForeignKey("accounts.Project", on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=16, choices=ReviewKind.choices)
    status = models.CharField(max_length=10, choices=ReviewStatus.choices, default=ReviewStatus.OPEN)
    # What the correction would change: {"target": slug}, {"merge_into": card id}, {"title": ...}.
    proposed = models.JSONField(default=dict, blank=True)
    reason = models.TextField(blank=True, default="")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reports = models.PositiveIntegerField(default=1)  # users who asked for this same correction
    source_event_ids = models.JSONField(default=list, blank=True)
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decision_notes = models.TextField(blank=True, default="")
    decided_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "intelligence_reviews"
        ordering = ["-created_at"]
        indexes = [models.Index("status", models.F("created_at").desc(), name="review_status_created")]
        constraints = [
            models.CheckConstraint(condition=Q(kind__in=ReviewKind.values), name="review_kind_valid"),
            models.CheckConstraint(condition=Q(status__in=ReviewStatus.values), name="review_status_valid"),
            models.UniqueConstraint(
                fields=["card", "kind"], condition=Q(status="open"), name="review_one_open_per_card_kind"
            ),
        ]

    def __str__(self) -> str:
        return f"review {self.kind} of {self.card_id} ({self.status})"


class AttributionStatus(models.TextChoices):
    CANDIDATE = "candidate"
    APPROVED = "approved"
    REJECTED = "rejected"


class DocumentAttributionCandidate(models.Model):
    """A document that may belong to a target, below the auto-apply threshold: a reviewer decides.

    ``evidence`` lists what matched: [{"kind": "alias"|"participant"|"path"|"title"|"explicit_id"|
    "client"|"address"|"rule", "value": "...", "weight": 0.4}]."""

    document = models.ForeignKey("retrieval.Document", on_delete=models.CASCADE, related_name="+")
    target = models.ForeignKey(IntelligenceTarget, on_delete=models.CASCADE, related_name="attribution_candidates")
    score = models.FloatField()
    evidence = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=10, choices=AttributionStatus.choices, default=AttributionStatus.CANDIDATE)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    notes = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "document_attribution_candidates"
        ordering = ["-created_at"]
        indexes = [models.Index("status", models.F("created_at").desc(), name="attr_cand_status_created")]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=AttributionStatus.values), name="attr_cand_status_valid"),
            models.CheckConstraint(condition=Q(score__gte=0, score__lte=1), name="attr_cand_score_range"),
            models.UniqueConstraint(
                fields=["document", "target"], condition=Q(status="candidate"), name="attr_cand_one_open_per_pair"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.document_id} -> {self.target_id} ({self.status}, {self.score:.2f})"


class JobKind(models.TextChoices):
    ATTRIBUTION = "attribution"
    SIGNAL_EXTRACTION = "signal_extraction"
    CARD_UPSERT = "card_upsert"
    PACKET_REFRESH = "packet_refresh"


class JobStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class SourceIntelligenceJob(models.Model):
    """The compiler's durable job ledger: one row per piece of work on a document, with its
    attempts and last error, so a lost task is found and run again."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    kind = models.CharField(max_length=20, choices=JobKind.choices)
    status = models.CharField(max_length=10, choices=JobStatus.choices, default=JobStatus.QUEUED)
    document = models.ForeignKey(
        "retrieval.Document", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    document_ref = models.CharField(max_length=255, blank=True, default="")
    target = models.ForeignKey(IntelligenceTarget, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # The document version the job is for: a re-import with new content queues a new job.
    content_hash = models.CharField(max_length=64, blank=True, default="")
    attempts = models.PositiveSmallIntegerField(default=0)
    last_error = models.TextField(blank=True, default="")
    result = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "source_intelligence_jobs"
        ordering = ["-created_at"]
        indexes = [models.Index("status", "created_at", name="source_job_status_created")]
        constraints = [
            models.CheckConstraint(condition=Q(kind__in=JobKind.values), name="source_job_kind_valid"),
            models.CheckConstraint(condition=Q(status__in=JobStatus.values), name="source_job_status_valid"),
            models.UniqueConstraint(
                fields=["kind", "document_ref", "content_hash"],
                condition=Q(status__in=["queued", "running"]),
                name="source_job_one_open_per_document_version",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.document_ref} ({self.status})"


class SignalStatus(models.TextChoices):
    STAGED = "staged"  # extracted, not (yet) a card
    CARDED = "carded"  # created or updated a card
    DISCARDED = "discarded"  # no evidence excerpt, no target, or below confidence


class SourceSignalCandidate(models.Model):
    """A signal extracted from a document, staged before it becomes (or updates) a card."""

    document = models.ForeignKey("retrieval.Document", on_delete=models.CASCADE, related_name="+")
    chunk = models.ForeignKey("retrieval.Chunk", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    job = models.ForeignKey(
        SourceIntelligenceJob, null=True, blank=True, on_delete=models.SET_NULL, related_name="signals"
    )
    target = models.ForeignKey(IntelligenceTarget, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    signal_type = models.CharField(max_length=16, choices=CardType.choices)
    statement = models.TextField()
    excerpt = models.TextField(blank=True, default="")
    fingerprint = models.CharField(max_length=64)
    owner = models.CharField(max_length=200, blank=True, default="")
    details = models.JSONField(default=dict, blank=True)
    confidence = models.FloatField(default=0.5)
    extractor = models.CharField(max_length=100, default="local")  # "local" or "openai:<model>"
    status = models.CharField(max_length=10, choices=SignalStatus.choices, default=SignalStatus.STAGED)
    card = models.ForeignKey(InsightCard, null=True, blank=True, on_delete=models.SET_NULL, related_name="signals")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "source_signal_candidates"
        ordering = ["-created_at"]
        indexes = [models.Index("status", "created_at", name="signal_status_created")]
        constraints = [
            models.CheckConstraint(condition=Q(signal_type__in=CardType.values), name="signal_type_valid"),
            models.CheckConstraint(condition=Q(status__in=SignalStatus.values), name="signal_status_valid"),
            models.CheckConstraint(condition=Q(confidence__gte=0, confidence__lte=1), name="signal_confidence_range"),
            models.UniqueConstraint(
                fields=["document", "signal_type", "fingerprint"], name="signal_unique_per_document"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.signal_type} from {self.document_id} ({self.status})"


class PacketRefreshJob(models.Model):
    """A queued rebuild of one target's packet: at most one queued per target, whatever asked."""

    target = models.ForeignKey(IntelligenceTarget, on_delete=models.CASCADE, related_name="refresh_jobs")
    status = models.CharField(max_length=10, choices=JobStatus.choices, default=JobStatus.QUEUED)
    reasons = models.JSONField(default=list, blank=True)  # every request merged into this one
    packet = models.ForeignKey(IntelligencePacket, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    attempts = models.PositiveSmallIntegerField(default=0)
    last_error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "packet_refresh_jobs"
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=JobStatus.values), name="packet_job_status_valid"),
            models.UniqueConstraint(
                fields=["target"], condition=Q(status="queued"), name="packet_job_one_queued_per_target"
            ),
        ]

    def __str__(self) -> str:
        return f"refresh {self.target_id} ({self.status})"


class RuleStatus(models.TextChoices):
    ACTIVE = "active"
    PAUSED = "paused"
    SUPERSEDED = "superseded"


class AttributionRule(models.Model):
    """A learned attribution: documents whose ``match_kind`` (alias, participant, path, title,
    domain…) matches ``pattern`` belong to ``target``. Created only by applying a promotion."""

    target = models.ForeignKey(IntelligenceTarget, on_delete=models.CASCADE, related_name="attribution_rules")
    match_kind = models.CharField(max_length=20)
    pattern = models.CharField(max_length=300)  # normalised as the matcher compares it
    status = models.CharField(max_length=12, choices=RuleStatus.choices, default=RuleStatus.ACTIVE)
    # The promotion that made it, as a plain value (the ledger sits above this app).
    promotion_id = models.UUIDField(unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "intelligence_attribution_rules"
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=RuleStatus.values), name="attr_rule_status_valid"),
            models.CheckConstraint(condition=~Q(pattern=""), name="attr_rule_pattern_not_empty"),
            models.UniqueConstraint(
                fields=["match_kind", "pattern"], condition=Q(status="active"), name="attr_rule_one_active_per_pattern"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.match_kind}={self.pattern!r} -> {self.target_id} ({self.status})"


class PacketRule(models.Model):
    """A learned packet rule (section order, a card type raised or lowered, a confirming source
    required…) for one project, or every project when ``project`` is null. Created only by
    applying a promotion."""

    project = models.ForeignKey("accounts.Project", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    rule_type = models.CharField(max_length=40)
    parameters = models.JSONField(default=dict, blank=True)
    description = models.TextField()
    status = models.CharField(max_length=12, choices=RuleStatus.choices, default=RuleStatus.ACTIVE)
    promotion_id = models.UUIDField(unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "intelligence_packet_rules"
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=RuleStatus.values), name="packet_rule_status_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.rule_type} ({self.status})"
