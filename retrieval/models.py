"""Documents, their chunks and embeddings, and the traces of what search returned."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import Now

from core.fields import EmbeddingField, VectorEmbeddingField
from retrieval.conf import WEIGHT_MAX, WEIGHT_MIN

OUTCOMES = ("helpful", "unhelpful", "wrong_project", "stale", "unsupported", "unknown")


class Document(models.Model):
    """A source document; ``id`` is the caller's own (text) id."""

    id = models.CharField(primary_key=True, max_length=255)
    project = models.ForeignKey("accounts.Project", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    source_type = models.CharField(max_length=50, default="text")
    source_system = models.CharField(max_length=100, blank=True, default="")
    title = models.CharField(max_length=500, blank=True, default="")
    url = models.CharField(max_length=1000, blank=True, default="")
    participants = models.JSONField(default=list, blank=True)
    source_created_at = models.DateTimeField(null=True, blank=True)
    source_updated_at = models.DateTimeField(null=True, blank=True)
    raw_text = models.TextField()
    metadata = models.JSONField(default=dict, blank=True)
    # Of title and text: an import with the same hash does no work.
    content_hash = models.CharField(max_length=64)
    imported_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "document_metadata"
        ordering = ["id"]
        indexes = [models.Index("project", name="document_project")]

    def __str__(self) -> str:
        return self.title or self.id


class Chunk(models.Model):
    """A passage of a document, embedded; search ranks these."""

    id = models.BigAutoField(primary_key=True)  # also the id in the vector index
    chunk_id = models.CharField(max_length=300, unique=True)
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks")
    # The document's project, copied so that a filtered HNSW scan checks visibility on the row the
    # index returns instead of looking up each candidate's document. The database keeps it equal to
    # the document's, whoever writes (triggers, migration 0015): code never sets it. No constraint or
    # index of its own: the document's foreign key guards the value, and no read selects by it alone.
    project = models.ForeignKey(
        "accounts.Project",
        null=True,
        blank=True,
        editable=False,
        on_delete=models.DO_NOTHING,  # a project's documents, and so their chunks, go with it
        related_name="+",
        db_index=False,
        db_constraint=False,
    )
    position = models.PositiveIntegerField()
    content = models.TextField()
    content_hash = models.CharField(max_length=64, db_index=True)
    # On PostgreSQL a pgvector column with an HNSW index (migration 0005), elsewhere bytes.
    embedding = VectorEmbeddingField(dimensions=384)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "document_chunks"
        ordering = ["document_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["document", "position"], name="chunk_unique_document_position"),
        ]

    def __str__(self) -> str:
        return self.chunk_id


def _token() -> str:
    return uuid.uuid4().hex


class IndexGeneration(models.Model):
    """A counter bumped in the same transaction as any change of chunks: a vector index built
    at an older generation is stale and is rebuilt before it answers."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    generation = models.PositiveBigIntegerField(default=0)
    # Names this database's index files: a new database never reads another one's index.
    token = models.CharField(max_length=32, default=_token)

    class Meta:
        db_table = "retrieval_index_generation"

    def __str__(self) -> str:
        return f"generation {self.generation}"


class RetrievalQuery(models.Model):
    """One search: the trace id its results share, and the query's embedding (what weights are
    later scoped by)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    project = models.ForeignKey("accounts.Project", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    tool_name = models.CharField(max_length=100, blank=True, default="")
    session_id = models.CharField(max_length=255, blank=True, default="")
    target_id = models.CharField(max_length=255, blank=True, default="")
    query_text = models.TextField()
    embedding = EmbeddingField()
    k = models.PositiveSmallIntegerField()
    # Exploration (retrieval/exploration.py): the chance this search had of being explored, whether
    # it was, and, when it was, the policy it followed: ranks exploration_first..k were drawn
    # uniformly from the results ranked exploration_first..k + exploration_pool, with the seed
    # that reproduces the draw (null when not explored).
    exploration_share = models.FloatField(default=0.0)
    explored = models.BooleanField(default=False)
    exploration_seed = models.BigIntegerField(null=True, blank=True)
    exploration_first = models.PositiveSmallIntegerField(null=True, blank=True)
    exploration_pool = models.PositiveSmallIntegerField(null=True, blank=True)
    # When feedback on this search last arrived (even feedback that used nothing): from then on its
    # results that were not used count as skipped, and the scan's rollups re-count it.
    feedback_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "retrieval_queries"
        ordering = ["-created_at"]
        verbose_name_plural = "retrieval queries"
        indexes = [models.Index("feedback_at", name="retrieval_query_feedback_at")]

    def __str__(self) -> str:
        return self.query_text[:60]


class RetrievalFeedback(models.Model):
    """What search returned for one query, chunk by chunk, and what became of each result."""

    # Every search writes k rows here, each into every index of the table: trace, user and chunk have
    # no index of their own (db_index=False) because an index leads with each already (the unique
    # (trace, chunk), (user, created_at), (chunk, outcome) and (chunk, project, id)), which serves
    # their lookups and the deletes that cascade through them (retrieval 0014).
    trace = models.ForeignKey(RetrievalQuery, on_delete=models.CASCADE, related_name="results", db_index=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    project = models.ForeignKey("accounts.Project", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    target_id = models.CharField(max_length=255, blank=True, default="")
    session_id = models.CharField(max_length=255, blank=True, default="")
    tool_name = models.CharField(max_length=100, blank=True, default="")
    query_text = models.TextField()
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    # NULL once a re-import changed or removed the passage: the row stays, since a trace records
    # what was shown at which rank (position-bias estimates read every rank of it), but it is
    # evidence about a passage that no longer exists and counts for no chunk.
    chunk = models.ForeignKey(Chunk, null=True, on_delete=models.SET_NULL, related_name="+", db_index=False)
    rank = models.PositiveSmallIntegerField()
    score = models.FloatField()
    weight = models.FloatField(default=1.0)
    cited = models.BooleanField(default=False)
    user_referenced = models.BooleanField(default=False)
    used_in_answer = models.BooleanField(default=False)
    outcome = models.CharField(max_length=16, default="unknown", choices=[(o, o) for o in OUTCOMES])
    # Exploration put this result at a randomised rank (not where its score would have put it):
    # the position-bias estimate reads these.
    explored = models.BooleanField(default=False)
    # Where its score ranked it for this query (the same as ``rank`` unless exploration moved it;
    # may be past k for a result exploration brought onto the page). Null on traces older than it.
    natural_rank = models.PositiveSmallIntegerField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        db_table = "ai_retrieval_feedback"
        ordering = ["trace", "rank"]
        verbose_name_plural = "retrieval feedback"
        indexes = [
            models.Index("chunk", "outcome", name="retrieval_fb_chunk_outcome"),
            models.Index("user", models.F("created_at").desc(), name="retrieval_fb_user_created"),
            # The scan's rollups find the results marked since their last run (retrieval/rollups.py).
            models.Index("updated_at", name="retrieval_fb_updated"),
            # The retrieval scan's anchors: a chunk's newest results in a project, read newest first by
            # walking this index (promotions/scanners/retrieval.py, _newest_results).
            models.Index(fields=["chunk", "project", "id"], name="retrieval_fb_chunk_project_id"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["trace", "chunk"], name="retrieval_fb_unique_trace_chunk"),
            models.CheckConstraint(condition=Q(outcome__in=OUTCOMES), name="retrieval_fb_outcome_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.trace_id} #{self.rank} {self.chunk_id}"


class RetrievalProjectSettings(models.Model):
    """A project's own retrieval settings; a null field means the deployment's default."""

    project = models.OneToOneField(
        "accounts.Project", primary_key=True, on_delete=models.CASCADE, related_name="retrieval_settings"
    )
    # The share of this project's searches that explore (RETRIEVAL_EXPLORE_SHARE when null).
    exploration_share = models.FloatField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "retrieval_project_settings"
        verbose_name_plural = "retrieval project settings"
        constraints = [
            models.CheckConstraint(
                condition=Q(exploration_share__isnull=True) | Q(exploration_share__gte=0.0, exploration_share__lte=1.0),
                name="retrieval_project_exploration_share_range",
            ),
        ]

    def __str__(self) -> str:
        return f"retrieval settings of {self.project_id}"


class TraceRollup(models.Model):
    """Search-trace evidence summed per chunk, query neighbourhood (its content words, see
    ``retrieval.scope.query_terms``), project, displayed rank and whether exploration placed it: what the
    retrieval scan reads instead of every trace. Kept in step with the traces by ``retrieval.rollups``.

    Only searches that got feedback count (see ``retrieval.rollups``): each of their results in exactly
    one of the counts, and in ``shown``."""

    # A digest of (chunk, project, terms, rank, explored): one row per combination, upserted.
    ident = models.CharField(max_length=40, unique=True)
    # A derived table written in bulk: Django cascades deletions (a chunk's rollups go with it), and
    # no database constraint checks every upserted row.
    chunk = models.ForeignKey(Chunk, on_delete=models.CASCADE, related_name="+", db_constraint=False)
    project = models.ForeignKey(
        "accounts.Project", null=True, blank=True, on_delete=models.CASCADE, related_name="+", db_constraint=False
    )
    terms = models.TextField()  # the neighbourhood: the query's content words, space-separated
    rank = models.PositiveSmallIntegerField()
    explored = models.BooleanField(default=False)
    shown = models.IntegerField(default=0)  # the sum of the counts below
    skipped = models.IntegerField(default=0)  # not used, no outcome
    clicked = models.IntegerField(default=0)  # cited, used or referenced (no explicit outcome)
    helpful = models.IntegerField(default=0)  # also: used in an answer that was voted up
    unhelpful = models.IntegerField(default=0)  # also: used in an answer that was voted down
    unsupported = models.IntegerField(default=0)
    stale = models.IntegerField(default=0)
    wrong_project = models.IntegerField(default=0)

    class Meta:
        db_table = "retrieval_trace_rollups"
        # The scan re-reads the neighbourhoods that changed: by terms.
        indexes = [models.Index("terms", name="retrieval_rollup_terms")]

    def __str__(self) -> str:
        return f"{self.chunk_id} [{self.terms}] #{self.rank}{'*' if self.explored else ''}: {self.shown} shown"


class TraceRollupMark(models.Model):
    """How one traced result was counted in the rollups (its category), so that it can be taken back
    exactly when its marks change, it leaves the window or it is erased. A plain id: it may outlive
    its trace row (a chunk's deletion cascades to the traces and to the rollups, not here), and
    nothing reads an orphan."""

    feedback_id = models.BigIntegerField(primary_key=True)
    category = models.PositiveSmallIntegerField()

    class Meta:
        db_table = "retrieval_trace_rollup_marks"

    def __str__(self) -> str:
        return f"{self.feedback_id}: {self.category}"


class TraceRollupState(models.Model):
    """The rollups' watermarks (one row, locked by whoever changes the rollups): every trace row with
    an id up to ``settled_id`` is counted unless its id is up to ``expired_id`` (older than the scan
    window); rows marked since ``changed_since`` are re-counted; ``keying`` fingerprints how queries were
    keyed (a change of ``query_terms`` rebuilds the rollups)."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    settled_id = models.BigIntegerField(default=0)
    expired_id = models.BigIntegerField(default=0)
    changed_since = models.DateTimeField(null=True, blank=True)
    keying = models.CharField(max_length=40, blank=True, default="")
    updated_at = models.DateTimeField(auto_now=True)
    # Counts every change of the rollups (a refresh or an erasure that changed a count); the
    # neighbourhoods each one changed are in TraceRollupChange. At reset_generation everything may have
    # changed (a rebuild, or rollups that went with their deleted passage): readers start over.
    generation = models.BigIntegerField(default=0)
    reset_generation = models.BigIntegerField(default=0)

    class Meta:
        db_table = "retrieval_trace_rollup_state"

    def __str__(self) -> str:
        return f"settled {self.settled_id}, expired {self.expired_id}"


class TraceRollupChange(models.Model):
    """A query neighbourhood (project, terms) whose rollups one generation changed: what a reader that
    judged the rollups at an earlier generation must look at again. The last CHANGE_LOG_GENERATIONS
    generations are kept (``retrieval.rollups``)."""

    generation = models.BigIntegerField(db_index=True)
    project_id = models.BigIntegerField(null=True, blank=True)  # a plain id, like the rollups' keys
    terms = models.TextField()

    class Meta:
        db_table = "retrieval_trace_rollup_changes"

    def __str__(self) -> str:
        return f"{self.generation}: {self.project_id or '-'} [{self.terms}]"


class TraceRollupOutside(models.Model):
    """A statement that deleted trace rows, or detached them from their passage, written by database
    triggers on ``ai_retrieval_feedback`` (migration retrieval 0011). The next refresh checks the rollups
    against the mark rows only when one is here, instead of on every refresh."""

    at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "retrieval_trace_rollup_outside"

    def __str__(self) -> str:
        return f"{self.pk} at {self.at}"


class WeightScope(models.TextChoices):
    GLOBAL = "global"  # every query (query-independent evidence: stale)
    PROJECT = "project"  # queries within one project (wrong_project)
    QUERY = "query"  # queries near those that produced the evidence


class WeightStatus(models.TextChoices):
    ACTIVE = "active"
    PAUSED = "paused"
    SUPERSEDED = "superseded"
    # Its passage changed or was removed by a re-import: it applies to nothing and cannot be paused
    # or resumed (the promotion that made it can only be superseded).
    ORPHANED = "orphaned"


class RetrievalWeight(models.Model):
    """A bounded ranking multiplier for one chunk, made only by applying an approved promotion."""

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    subject_type = models.CharField(max_length=16, default="chunk")
    # NULL once orphaned: the weight row and its history outlive the passage it was learned on,
    # which content_hash (and the document) still name.
    chunk = models.ForeignKey(Chunk, null=True, on_delete=models.SET_NULL, related_name="+")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    content_hash = models.CharField(max_length=64, blank=True, default="")
    scope = models.CharField(max_length=16, choices=WeightScope.choices)
    project = models.ForeignKey("accounts.Project", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    # For query-scoped weights: the embeddings of the queries behind the evidence (stacked);
    # the weight applies to a query at least min_similarity similar to one of them.
    query_anchors = EmbeddingField(null=True, blank=True)
    min_similarity = models.FloatField(null=True, blank=True)
    # The content words of each anchor query: a query must also share most of them (embeddings
    # put "theoretical" and "experimental studies of creep buckling" at 0.97).
    query_terms = models.JSONField(default=list, blank=True)
    multiplier = models.FloatField()
    status = models.CharField(max_length=16, choices=WeightStatus.choices, default=WeightStatus.ACTIVE)
    reason = models.CharField(max_length=32, blank=True, default="")
    # The promotion that made the weight: a plain id, since the ledger points outward to its
    # destinations and retrieval does not depend on it (one weight per promotion).
    promotion_id = models.UUIDField(null=True, unique=True)

    class Meta:
        db_table = "ai_retrieval_weights"
        indexes = [models.Index("chunk", "status", name="weight_chunk_status")]
        constraints = [
            models.CheckConstraint(
                condition=Q(multiplier__gte=WEIGHT_MIN, multiplier__lte=WEIGHT_MAX), name="weight_multiplier_bounds"
            ),
            models.CheckConstraint(condition=Q(status__in=WeightStatus.values), name="weight_status_valid"),
            models.CheckConstraint(condition=Q(scope__in=WeightScope.values), name="weight_scope_valid"),
        ]

    def __str__(self) -> str:
        return f"x{self.multiplier:.2f} {self.chunk_id} ({self.scope}, {self.status})"
