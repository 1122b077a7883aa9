"""Deleting a user, a project or an intelligence target: the ledger, the stream and retrieval's
traces and marks outlive what they describe, with the reference set to null (an audit event first)."""

from __future__ import annotations

import pytest

from config.exceptions import AccessDenied
from feedback.models import FeedbackEvent, TaskFeedback
from intelligence.models import IntelligenceTarget, TargetKind
from promotions.deletions import project_delete, target_delete
from promotions.erasure import user_erase
from promotions.models import LearningPromotion
from retrieval.models import RetrievalFeedback, RetrievalQuery
from tests.factories import (
    FeedbackEventFactory,
    IntelligenceTargetFactory,
    LearningPromotionFactory,
    ProjectFactory,
    RetrievalFeedbackFactory,
    RetrievalQueryFactory,
    TaskFeedbackFactory,
)
from tests.promotions.conftest import promote


@pytest.fixture
def scene(world):
    root = IntelligenceTargetFactory(project=world.project)
    tower = IntelligenceTargetFactory(project=world.project, kind=TargetKind.BUILDING, slug="tower-b")
    promotion = LearningPromotionFactory(project=world.project, target=tower)
    event = FeedbackEventFactory(user=world.owner, project=world.project, target_id=str(tower.pk), free_text="kept")
    rating = TaskFeedbackFactory(user=world.owner, project=world.project)
    trace = RetrievalQueryFactory(user=world.owner, project=world.project, target_id=str(tower.pk))
    mark = RetrievalFeedbackFactory(trace=trace, target_id=str(tower.pk))
    return {
        "root": root,
        "tower": tower,
        "promotion": promotion,
        "event": event,
        "rating": rating,
        "trace": trace,
        "mark": mark,
    }


def test_deleting_a_target_keeps_what_named_it(world, scene):
    tower = scene["tower"]
    report = target_delete(actor=world.actor("admin"), target_id=tower.pk)
    assert not IntelligenceTarget.objects.filter(pk=tower.pk).exists()
    promotion = LearningPromotion.objects.get(pk=scene["promotion"].pk)
    assert (promotion.target_id, promotion.project_id) == (None, world.project.pk)
    event = FeedbackEvent.objects.get(pk=scene["event"].pk)
    assert (event.target_id, event.project_id, event.free_text) == ("", world.project.pk, "kept")
    assert RetrievalQuery.objects.get(pk=scene["trace"].pk).target_id == ""
    assert RetrievalFeedback.objects.get(pk=scene["mark"].pk).target_id == ""
    [deletion] = report.deletion_event_ids
    audit = FeedbackEvent.objects.get(pk=deletion)
    assert (audit.event_type, audit.subject_id, audit.user) == ("target_deleted", str(tower.pk), world.admin)
    assert report.rows["ai_feedback_events (target detached)"] == 1


def test_deleting_a_project_keeps_its_ledger_events_ratings_and_traces(world, scene):
    applied = promote(world, scene["promotion"], "approve")  # reviewed, so it has an audit trail
    report = project_delete(actor=world.actor("admin"), project_id=world.project.pk)
    promotion = LearningPromotion.objects.get(pk=applied.pk)  # no longer cascaded away
    assert (promotion.project_id, promotion.target_id, promotion.status) == (None, None, "approved")
    approve = FeedbackEvent.objects.get(subject_type="promotion", subject_id=str(promotion.pk))
    assert (approve.event_type, approve.project_id) == ("promotion_approve", None)  # the audit stays, detached
    assert not FeedbackEvent.objects.exclude(project=None).exists()
    event = FeedbackEvent.objects.get(pk=scene["event"].pk)
    assert (event.project_id, event.target_id, event.free_text) == (None, "", "kept")
    assert TaskFeedback.objects.get(pk=scene["rating"].pk).project_id is None
    trace = RetrievalQuery.objects.get(pk=scene["trace"].pk)
    assert (trace.project_id, trace.target_id) == (None, "")
    types = sorted(FeedbackEvent.objects.filter(pk__in=report.deletion_event_ids).values_list("event_type", flat=True))
    assert types == ["project_deleted", "target_deleted", "target_deleted"]


def test_only_an_admin_deletes(world, scene):
    for role in ("owner", "member", "service"):
        with pytest.raises(AccessDenied):
            project_delete(actor=world.actor(role), project_id=world.project.pk)
        with pytest.raises(AccessDenied):
            target_delete(actor=world.actor(role), target_id=scene["tower"].pk)
    assert IntelligenceTarget.objects.count() == 2
    assert not FeedbackEvent.objects.filter(event_type__in=["project_deleted", "target_deleted"]).exists()


def test_another_projects_rows_are_untouched(world, scene):
    zeus = ProjectFactory(slug="zeus")
    theirs = LearningPromotionFactory(project=zeus)
    their_event = FeedbackEventFactory(user=world.other, project=zeus, target_id=str(scene["root"].pk + 1000))
    project_delete(actor=world.actor("admin"), project_id=world.project.pk)
    assert LearningPromotion.objects.get(pk=theirs.pk).project_id == zeus.pk
    assert FeedbackEvent.objects.get(pk=their_event.pk).project_id == zeus.pk


def test_erasing_a_user_keeps_the_promotions_they_reviewed(world, scene):
    reviewed = promote(world, scene["promotion"], "approve")
    user_erase(actor=world.actor("admin"), user=world.admin)
    promotion = LearningPromotion.objects.get(pk=reviewed.pk)
    assert (promotion.reviewed_by_id, promotion.status) == (None, "approved")
    approve = FeedbackEvent.objects.get(event_type="promotion_approve")
    assert (approve.user_id, approve.writer, approve.before_snapshot, approve.after_snapshot) == (
        None,
        "erased",
        {},
        {},
    )
