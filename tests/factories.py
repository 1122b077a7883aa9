"""Test data factories: one per model a test needs rows of, valid against the model's constraints.

Factories write rows directly, as fixtures do; behaviour under test goes through the services.
The feedback stream is append-only, so its factory only ever inserts (``FeedbackEvent.save`` on
a new row). Rows that name a promotion set ``promotion_id`` (the column), so they do not depend
on whether that column is a foreign key or a plain id.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict

import factory
import numpy as np
from django.utils import timezone

from accounts.models import ApiKey, Project, ProjectMembership, User
from accounts.selectors import api_key_digest
from feedback.models import EventFamily, FeedbackEvent, Signal, TaskFeedback
from intelligence.models import (
    AttributionRule,
    CardType,
    DocumentAttributionCandidate,
    InsightCard,
    InsightCardEvidence,
    InsightCardTarget,
    IntelligencePacket,
    IntelligencePacketCard,
    IntelligenceReview,
    IntelligenceTarget,
    PacketRefreshJob,
    PacketRule,
    ReviewKind,
    SourceIntelligenceJob,
    SourceSignalCandidate,
    TargetKind,
)
from learning.models import (
    AgentLearning,
    ChatMessage,
    CommandDecision,
    CommandRun,
    LearnedWorkflow,
    LearningUsage,
    Memory,
    Preference,
    PromptPattern,
    TastePattern,
    UndoEntry,
)
from promotions.models import LearningPromotion, Scanner, ScanRun, ScanStatus
from promotions.scanners.task_example import TaskExampleScanReport
from retrieval.index import DIMENSIONS, bump_generation
from retrieval.models import (
    Chunk,
    Document,
    RetrievalFeedback,
    RetrievalProjectSettings,
    RetrievalQuery,
    RetrievalWeight,
    TraceRollup,
    TraceRollupState,
)


def embedding(seed: int) -> np.ndarray:
    """A unit float32 vector of the index's size, the same for the same seed."""
    vector = np.random.default_rng(seed).standard_normal(DIMENSIONS).astype(np.float32)
    return vector / np.linalg.norm(vector)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# --- accounts -----------------------------------------------------------------------------------


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.com")
    password = factory.PostGenerationMethodCall("set_password", "pw-for-tests")

    @factory.post_generation
    def _save(obj, create, extracted, **kwargs):
        if create:
            obj.save()


class ProjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Project

    slug = factory.Sequence(lambda n: f"project-{n}")
    name = factory.LazyAttribute(lambda p: p.slug.title())


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ProjectMembership

    project = factory.SubFactory(ProjectFactory)
    user = factory.SubFactory(UserFactory)
    role = ProjectMembership.Role.MEMBER


class ApiKeyFactory(factory.django.DjangoModelFactory):
    """A key row; its raw key is ``raw`` (set it to authenticate with the key)."""

    class Meta:
        model = ApiKey
        exclude = ("raw",)

    raw = factory.Sequence(lambda n: f"llk_test{n:08d}{'x' * 32}")
    name = "test"
    kind = ApiKey.Kind.USER
    owner = factory.SubFactory(UserFactory)
    prefix = factory.LazyAttribute(lambda k: k.raw[:12])
    hashed_key = factory.LazyAttribute(lambda k: api_key_digest(k.raw))


# --- feedback -----------------------------------------------------------------------------------


class FeedbackEventFactory(factory.django.DjangoModelFactory):
    """An event row as ``feedback.services`` would append it (tests of the rules use the service)."""

    class Meta:
        model = FeedbackEvent

    user = factory.SubFactory(UserFactory)
    event_type = "response_feedback"
    event_family = EventFamily.ASSISTANT_RESPONSE
    signal = Signal.POSITIVE
    writer = factory.LazyAttribute(lambda e: f"user:{e.user.pk}" if e.user else "system")


class TaskFeedbackFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = TaskFeedback

    user = factory.SubFactory(UserFactory)
    task_snapshot = factory.Sequence(lambda n: {"id": f"task-{n}", "title": f"Task {n}", "description": "Do it."})
    rating = TaskFeedback.Rating.GOOD
    completed = True


# --- promotions ---------------------------------------------------------------------------------


class LearningPromotionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = LearningPromotion

    promotion_type = "task_example"
    subject_type = "task_feedback"
    subject_id = factory.Sequence(lambda n: f"subject-{n}")
    confidence = 0.8


class ScanRunFactory(factory.django.DjangoModelFactory):
    """A finished scan run, as the scan task leaves it."""

    class Meta:
        model = ScanRun

    scanner = Scanner.TASK_EXAMPLE
    status = ScanStatus.SUCCEEDED
    report = factory.LazyFunction(lambda: {"task_example": asdict(TaskExampleScanReport(eligible=1, proposed=1))})


def _promotion_id() -> object:
    return LearningPromotionFactory().pk


# --- learning -----------------------------------------------------------------------------------


class ChatMessageFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ChatMessage

    user = factory.SubFactory(UserFactory)
    session_id = "s1"
    role = ChatMessage.Role.USER
    content = factory.Sequence(lambda n: f"Please keep answer {n} short.")


class PromptPatternFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = PromptPattern

    message = factory.SubFactory(ChatMessageFactory)
    user = factory.SelfAttribute("message.user")
    session_id = factory.SelfAttribute("message.session_id")
    prompt_hash = factory.LazyAttribute(lambda p: sha256(p.message.content))
    prompt_summary = factory.LazyAttribute(lambda p: p.message.content[:300])
    embedding = factory.Sequence(embedding)


class PreferenceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Preference

    user = factory.SubFactory(UserFactory)
    category = "length"
    preference = factory.Sequence(lambda n: f"concise-{n}")
    description = "Keep responses short"
    confidence = 0.8


class LearnedWorkflowFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = LearnedWorkflow

    user = factory.SubFactory(UserFactory)
    workflow_name = factory.Sequence(lambda n: f"Weekly status report {n}")
    trigger_pattern = "weekly status report"
    example_input = "write my weekly status report"
    preferred_output = "three bullet points"
    confidence = 0.8


class MemoryFactory(factory.django.DjangoModelFactory):
    """A private memory (a shared one exists only through an applied promotion: pass ``promotion_id``)."""

    class Meta:
        model = Memory

    owner = factory.SubFactory(UserFactory)
    content = factory.Sequence(lambda n: f"My locker code word is marker{n}.")
    content_hash = factory.LazyAttribute(lambda m: sha256(m.content))
    confidence = 0.9


class TastePatternFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = TastePattern

    user = factory.SubFactory(UserFactory)
    plugin = "email"
    command = "draft"
    correction_type = "length"
    direction = factory.Sequence(lambda n: f"shorter-{n}")
    description = "Shortened drafts"
    instruction = "Keep email drafts short"
    confidence = 0.6
    observations = 3


class UndoEntryFactory(factory.django.DjangoModelFactory):
    """A switched-off preference's undo entry (services record them; see learning.services.undo)."""

    class Meta:
        model = UndoEntry

    user = factory.SubFactory(UserFactory)
    subject_type = "preference"
    subject_id = factory.Sequence(str)
    action = "switched_off"
    before = factory.LazyFunction(lambda: {"row": {"active": True, "inactive_reason": ""}, "others": []})


class AgentLearningFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = AgentLearning

    title = factory.Sequence(lambda n: f"Check the budget lines {n}")
    prevention_prompt = "Include every line of the spreadsheet when totalling a budget."
    promotion_id = factory.LazyFunction(_promotion_id)


class LearningUsageFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = LearningUsage

    user = factory.SubFactory(UserFactory)
    item_type = "preference"
    item_id = factory.Sequence(str)
    surface = "chat"
    response_id = factory.Sequence(lambda n: f"resp-{n}")


# --- retrieval ----------------------------------------------------------------------------------


class DocumentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Document

    id = factory.Sequence(lambda n: f"doc-{n}")
    title = factory.LazyAttribute(lambda d: d.id.title())
    raw_text = "Wind tunnel tests of wing flutter with control surfaces."
    content_hash = factory.LazyAttribute(lambda d: sha256(d.raw_text))


class ChunkFactory(factory.django.DjangoModelFactory):
    """A chunk with a unit embedding; the index generation moves, as every change of chunks must."""

    class Meta:
        model = Chunk

    document = factory.SubFactory(DocumentFactory)
    position = 0
    chunk_id = factory.LazyAttribute(lambda c: f"{c.document.id}#{c.position}")
    content = factory.SelfAttribute("document.raw_text")
    content_hash = factory.LazyAttribute(lambda c: sha256(c.content))
    embedding = factory.Sequence(embedding)

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        chunk = super()._create(model_class, *args, **kwargs)
        bump_generation()
        return chunk


class RetrievalQueryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = RetrievalQuery

    user = factory.SubFactory(UserFactory)
    query_text = "wing flutter tests"
    embedding = factory.Sequence(embedding)
    k = 10


class RetrievalFeedbackFactory(factory.django.DjangoModelFactory):
    """One traced result: the chunk search returned for the trace's query."""

    class Meta:
        model = RetrievalFeedback

    trace = factory.SubFactory(RetrievalQueryFactory)
    chunk = factory.SubFactory(ChunkFactory)
    document = factory.SelfAttribute("chunk.document")
    user = factory.SelfAttribute("trace.user")
    project = factory.SelfAttribute("trace.project")
    query_text = factory.SelfAttribute("trace.query_text")
    rank = 1
    score = 0.8


class RetrievalWeightFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = RetrievalWeight

    chunk = factory.SubFactory(ChunkFactory)
    document = factory.SelfAttribute("chunk.document")
    scope = "global"
    multiplier = 1.2
    reason = "helpful"
    promotion_id = factory.LazyFunction(_promotion_id)


class RetrievalProjectSettingsFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = RetrievalProjectSettings

    project = factory.SubFactory(ProjectFactory)
    exploration_share = 0.1


class TraceRollupFactory(factory.django.DjangoModelFactory):
    """A rollup row as ``retrieval.rollups`` upserts it: one chunk, neighbourhood and rank."""

    class Meta:
        model = TraceRollup

    ident = factory.Sequence(lambda n: sha256(f"rollup-{n}")[:40])
    chunk = factory.SubFactory(ChunkFactory)
    terms = "flutter wing"
    rank = 1
    shown = 3
    skipped = 1
    clicked = 2


class TraceRollupStateFactory(factory.django.DjangoModelFactory):
    """The rollups' one watermark row."""

    class Meta:
        model = TraceRollupState
        django_get_or_create = ("id",)

    id = 1
    settled_id = 10


class CommandRunFactory(factory.django.DjangoModelFactory):
    """A tool run with the post_command event the service writes beside it."""

    class Meta:
        model = CommandRun

    user = factory.SubFactory(UserFactory)
    plugin = "email"
    command = "draft"
    output = "Hi team, the report is attached."
    event = factory.LazyAttribute(
        lambda run: FeedbackEventFactory(
            user=run.user, event_type="post_command", event_family=EventFamily.TOOL_ACTION, signal=Signal.COMPLETED
        )
    )


class CommandDecisionFactory(factory.django.DjangoModelFactory):
    """The user's one decision on a run, with its decision_point event."""

    class Meta:
        model = CommandDecision

    run = factory.SubFactory(CommandRunFactory)
    decision = CommandDecision.Decision.ACCEPTED
    event = factory.LazyAttribute(
        lambda decision: FeedbackEventFactory(
            user=decision.run.user,
            event_type="decision_point",
            event_family=EventFamily.TOOL_ACTION,
            signal=Signal.ACCEPTED,
        )
    )


# --- intelligence -------------------------------------------------------------------------------


class IntelligenceTargetFactory(factory.django.DjangoModelFactory):
    """A project's root target (use ``kind`` and ``slug`` for a named scope inside it)."""

    class Meta:
        model = IntelligenceTarget
        django_get_or_create = ("project", "slug")

    project = factory.SubFactory(ProjectFactory)
    kind = TargetKind.PROJECT
    slug = factory.LazyAttribute(
        lambda t: t.project.slug if t.kind == TargetKind.PROJECT else f"scope-{t.project.slug}"
    )
    name = factory.LazyAttribute(lambda t: t.slug.replace("-", " ").title())


class InsightCardFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = InsightCard

    target = factory.SubFactory(IntelligenceTargetFactory)
    project = factory.SelfAttribute("target.project")
    card_type = CardType.RISK
    title = factory.Sequence(lambda n: f"Crane permit may slip, case {n}")
    fingerprint = factory.LazyAttribute(lambda c: sha256(c.title))
    confidence = 0.7
    last_evidence_at = factory.LazyFunction(timezone.now)
    first_evidence_at = factory.SelfAttribute("last_evidence_at")
    evidence_count = 1


class InsightCardEvidenceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = InsightCardEvidence

    card = factory.SubFactory(InsightCardFactory)
    document = factory.SubFactory(DocumentFactory, project=factory.SelfAttribute("..card.project"))
    document_ref = factory.SelfAttribute("document.id")
    source_system = "email"
    excerpt = factory.Sequence(lambda n: f"The crane permit is still pending with the city (note {n}).")
    excerpt_hash = factory.LazyAttribute(lambda e: sha256(e.excerpt))
    observed_at = factory.LazyFunction(timezone.now)


class InsightCardTargetFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = InsightCardTarget

    card = factory.SubFactory(InsightCardFactory)
    target = factory.SubFactory(
        IntelligenceTargetFactory, project=factory.SelfAttribute("..card.project"), kind=TargetKind.BUILDING
    )


class IntelligencePacketFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = IntelligencePacket

    target = factory.SubFactory(IntelligenceTargetFactory)
    version = factory.Sequence(lambda n: n + 1)
    current = False


class IntelligencePacketCardFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = IntelligencePacketCard

    packet = factory.SubFactory(IntelligencePacketFactory)
    card = factory.SubFactory(InsightCardFactory, target=factory.SelfAttribute("..packet.target"))
    section = "risks"
    position = factory.Sequence(lambda n: n)


class IntelligenceReviewFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = IntelligenceReview

    card = factory.SubFactory(InsightCardFactory)
    project = factory.SelfAttribute("card.project")
    kind = ReviewKind.WRONG
    status = "rejected"  # decided: any number of these may exist per card and kind


class DocumentAttributionCandidateFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = DocumentAttributionCandidate

    document = factory.SubFactory(DocumentFactory)
    target = factory.SubFactory(IntelligenceTargetFactory)
    score = 0.6
    evidence = factory.LazyFunction(lambda: [{"kind": "alias", "value": "harbour tower", "weight": 0.6}])


class SourceIntelligenceJobFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = SourceIntelligenceJob

    kind = "attribution"
    status = "succeeded"
    document = factory.SubFactory(DocumentFactory)
    document_ref = factory.SelfAttribute("document.id")
    content_hash = factory.SelfAttribute("document.content_hash")


class SourceSignalCandidateFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = SourceSignalCandidate

    document = factory.SubFactory(DocumentFactory)
    signal_type = CardType.DECISION
    statement = factory.Sequence(lambda n: f"We decided to use precast stairs (case {n}).")
    excerpt = factory.SelfAttribute("statement")
    fingerprint = factory.LazyAttribute(lambda s: sha256(s.statement))


class PacketRefreshJobFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = PacketRefreshJob

    target = factory.SubFactory(IntelligenceTargetFactory)
    status = "succeeded"
    reasons = factory.LazyFunction(lambda: ["import"])


class AttributionRuleFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = AttributionRule

    target = factory.SubFactory(IntelligenceTargetFactory)
    match_kind = "alias"
    pattern = factory.Sequence(lambda n: f"harbour tower {n}")
    promotion_id = factory.LazyFunction(_promotion_id)


class PacketRuleFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = PacketRule

    rule_type = "section_order"
    parameters = factory.LazyFunction(lambda: {"first": ["financial"]})
    description = "Financial exposure before schedule commentary."
    promotion_id = factory.LazyFunction(_promotion_id)
