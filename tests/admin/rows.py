"""Rows of every model the admin shows, built with tests/factories.py: one builder per model, each
call a new row with its own related rows (users, projects, documents), so that a changelist that
queried per row would show it in its query count."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from django.db import models

from accounts.models import ApiKey, Project, ProjectMembership, User
from feedback.models import FeedbackEvent, TaskFeedback
from intelligence import models as intelligence
from learning import models as learning
from promotions.models import LearningPromotion, RetrievalScanJudgement, RetrievalScanState, ScanRun
from retrieval import models as retrieval
from retrieval.index import bump_generation
from tests import factories as f

PROJECT_APPS = ("core", "accounts", "feedback", "learning", "retrieval", "intelligence", "promotions")


def _event() -> FeedbackEvent:
    promotion = f.LearningPromotionFactory()
    return f.FeedbackEventFactory(
        project=f.ProjectFactory(),
        source_table=LearningPromotion._meta.db_table,
        source_record_id=str(promotion.pk),
        subject_type="promotion",
        subject_id=str(promotion.pk),
        metadata={"notes": "<b>not markup</b>", "nested": {"rank": 2}},
    )


def _promotion() -> LearningPromotion:
    return f.LearningPromotionFactory(
        project=f.ProjectFactory(),
        target=f.IntelligenceTargetFactory(),
        reviewed_by=f.UserFactory(),
        source_event_ids=[str(f.FeedbackEventFactory().pk)],
        proposed_learning={"title": "Use the template", "evidence": [{"why": "asked twice"}]},
    )


def _single(model: type[models.Model], build: Callable[[], object]) -> Callable[[], models.Model]:
    def one() -> models.Model:
        build()
        return model.objects.get()

    return one


BUILD: dict[type[models.Model], Callable[[], models.Model]] = {
    User: f.UserFactory,
    Project: f.ProjectFactory,
    ProjectMembership: f.MembershipFactory,
    ApiKey: f.ApiKeyFactory,
    FeedbackEvent: _event,
    TaskFeedback: lambda: f.TaskFeedbackFactory(project=f.ProjectFactory(), reason="Too long"),
    learning.AgentLearning: lambda: f.AgentLearningFactory(project=f.ProjectFactory(), evidence=[{"reason": "x"}]),
    learning.LearningUsage: lambda: f.LearningUsageFactory(
        project=f.ProjectFactory(), learning=f.AgentLearningFactory()
    ),
    learning.ChatMessage: lambda: f.ChatMessageFactory(project=f.ProjectFactory(), analysis={"preference": None}),
    learning.PromptPattern: f.PromptPatternFactory,
    learning.Memory: lambda: f.MemoryFactory(project=f.ProjectFactory()),
    learning.Preference: lambda: f.PreferenceFactory(embedding=f.embedding(7)),
    learning.TastePattern: lambda: f.TastePatternFactory(evidence={"runs": ["r1"]}),
    learning.UndoEntry: f.UndoEntryFactory,
    learning.CommandRun: lambda: f.CommandRunFactory(project=f.ProjectFactory(), parameters={"tone": "warm"}),
    learning.CommandDecision: f.CommandDecisionFactory,
    learning.LearnedWorkflow: lambda: f.LearnedWorkflowFactory(learned_steps=["outline", "draft"]),
    retrieval.Document: lambda: f.DocumentFactory(project=f.ProjectFactory(), metadata={"path": "a/b.txt"}),
    retrieval.Chunk: f.ChunkFactory,
    retrieval.IndexGeneration: _single(retrieval.IndexGeneration, bump_generation),
    retrieval.RetrievalQuery: lambda: f.RetrievalFeedbackFactory(trace__project=f.ProjectFactory()).trace,
    retrieval.RetrievalFeedback: lambda: f.RetrievalFeedbackFactory(trace__project=f.ProjectFactory()),
    retrieval.RetrievalProjectSettings: f.RetrievalProjectSettingsFactory,
    retrieval.TraceRollup: lambda: f.TraceRollupFactory(project=f.ProjectFactory()),
    retrieval.TraceRollupState: _single(retrieval.TraceRollupState, f.TraceRollupStateFactory),
    retrieval.RetrievalWeight: lambda: f.RetrievalWeightFactory(project=f.ProjectFactory(), query_terms=[["wing"]]),
    intelligence.IntelligenceTarget: f.IntelligenceTargetFactory,
    intelligence.InsightCard: lambda: f.InsightCardEvidenceFactory().card,
    intelligence.InsightCardEvidence: f.InsightCardEvidenceFactory,
    intelligence.InsightCardTarget: f.InsightCardTargetFactory,
    intelligence.IntelligencePacket: lambda: f.IntelligencePacketCardFactory().packet,
    intelligence.IntelligencePacketCard: f.IntelligencePacketCardFactory,
    intelligence.IntelligenceReview: lambda: f.IntelligenceReviewFactory(
        requested_by=f.UserFactory(), reviewer=f.UserFactory(), proposed={"title": "New"}
    ),
    intelligence.DocumentAttributionCandidate: lambda: f.DocumentAttributionCandidateFactory(
        decided_by=f.UserFactory()
    ),
    intelligence.SourceIntelligenceJob: f.SourceIntelligenceJobFactory,
    intelligence.SourceSignalCandidate: lambda: f.SourceSignalCandidateFactory(target=f.IntelligenceTargetFactory()),
    intelligence.PacketRefreshJob: f.PacketRefreshJobFactory,
    intelligence.AttributionRule: f.AttributionRuleFactory,
    intelligence.PacketRule: lambda: f.PacketRuleFactory(project=f.ProjectFactory()),
    LearningPromotion: _promotion,
    ScanRun: lambda: f.ScanRunFactory(requested_by=f.UserFactory()),
    RetrievalScanState: _single(RetrievalScanState, lambda: RetrievalScanState.objects.get_or_create(pk=1)),
    RetrievalScanJudgement: lambda: RetrievalScanJudgement.objects.create(
        ident=uuid.uuid4().hex,
        terms="flutter wing",
        groups=2,
        decided=1,
        decisions=[{"chunk": 1, "kind": "helpful", "multiplier": 1.2, "strength": 4.0, "figures": {}}],
    ),
}

# Tables of one row by design.
SINGLE_ROW = {retrieval.IndexGeneration, retrieval.TraceRollupState, RetrievalScanState}
