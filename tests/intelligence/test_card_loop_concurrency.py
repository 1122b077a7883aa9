"""The packet/card loop under concurrent writers (PostgreSQL: SQLite serialises its writers)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from config.exceptions import Conflict
from feedback.models import FeedbackEvent
from intelligence.models import IntelligenceReview, PacketRefreshJob
from intelligence.services.cards import card_feedback_record
from intelligence.services.reviews import review_decide
from tests.concurrency import at_once
from tests.intelligence.loop_world import loop_build

pytestmark = pytest.mark.django_db(transaction=True)


def _postgresql_only() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("concurrent writers need PostgreSQL; the PostgreSQL run covers this")


def test_two_readers_reporting_at_once_share_one_review(world):
    _postgresql_only()
    loop = loop_build(world.project)
    actors = [world.actor("owner"), world.actor("member")]
    lock = threading.Lock()

    def report():
        with lock:
            actor = actors.pop()
        return card_feedback_record(actor=actor, card=loop.blocker, signal="wrong", note="not true")

    results = at_once(report)
    assert not [r for r in results if isinstance(r, Exception)], results
    review = IntelligenceReview.objects.get()
    assert review.reports == 2
    assert sorted(review.source_event_ids) == sorted(str(r.event.pk) for r in results)
    assert FeedbackEvent.objects.filter(event_type="card_feedback").count() == 2


def test_two_reviewers_deciding_at_once_decide_once(world):
    _postgresql_only()
    loop = loop_build(world.project)
    review = card_feedback_record(actor=world.actor("owner"), card=loop.blocker, signal="stale").review
    results = at_once(lambda: review_decide(actor=world.actor("admin"), review_id=str(review.pk), decision="approve"))
    assert sorted(type(r).__name__ for r in results) == ["Conflict", "ReviewDecision"]
    assert isinstance(next(r for r in results if isinstance(r, Exception)), Conflict)
    assert FeedbackEvent.objects.filter(event_type="card_review_approved").count() == 1
    assert PacketRefreshJob.objects.count() == 1
