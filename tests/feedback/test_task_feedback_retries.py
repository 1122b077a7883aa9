"""Retried task ratings are idempotent: an identical retry returns the original (also when it
races the original), a different rating under the same key is a 409, never a 500."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.db import connection

from feedback.models import FeedbackEvent, TaskFeedback
from feedback.services import task_feedback as task_feedback_service
from tests.concurrency import at_once

URL = "/api/v1/feedback/tasks"
EVENTS = "/api/v1/feedback/events"
TASK = {"id": "task-9", "title": "Call Acme about renewal", "due": "2026-12-01"}


def rate(client, **overrides):
    body = {"task_snapshot": TASK, "rating": "good", "reason": "spot on", "idempotency_key": "rate-1"}
    body.update(overrides)
    return client.post(URL, body, format="json")


def test_a_retry_that_lost_the_race_returns_the_original(world, monkeypatch):
    first = rate(world.client("owner"))
    assert first.status_code == 201
    # The retry checked for the key before the original committed: it saw nothing, stored its
    # own row, and only its event insert meets the original's key.
    nothing = SimpleNamespace(first=lambda: None)
    monkeypatch.setattr(
        task_feedback_service, "FeedbackEvent", SimpleNamespace(objects=SimpleNamespace(filter=lambda **kw: nothing))
    )
    retry = rate(world.client("owner"))
    assert retry.status_code == 200
    assert retry.json()["id"] == first.json()["id"]
    assert TaskFeedback.objects.count() == 1
    assert FeedbackEvent.objects.count() == 1


@pytest.mark.parametrize("change", [{"rating": "bad"}, {"reason": "changed my mind"}, {"completed": True}])
def test_a_different_rating_under_the_same_key_is_a_conflict(world, change):
    assert rate(world.client("owner")).status_code == 201
    response = rate(world.client("owner"), **change)
    assert response.status_code == 409
    assert "idempotency_key" in response.json()["error"]["fields"]
    assert TaskFeedback.objects.count() == 1


def test_reusing_an_events_key_for_a_rating_is_a_conflict_not_a_crash(world):
    event = {"event_type": "x", "event_family": "assistant_response", "signal": "positive"}
    assert world.client("owner").post(EVENTS, {**event, "idempotency_key": "k"}, format="json").status_code == 201
    response = rate(world.client("owner"), idempotency_key="k")
    assert response.status_code == 409
    assert "idempotency_key" in response.json()["error"]["fields"]
    assert TaskFeedback.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_identical_parallel_retries_all_get_the_original(world):
    if connection.vendor != "postgresql":
        pytest.skip("concurrent writers are PostgreSQL's; the PostgreSQL run covers this")
    # 80 retries in all, 20 at a time (each thread holds a connection of its own).
    statuses: list[int] = []
    for round_ in range(4):
        key = f"parallel-{round_}"
        responses = at_once(lambda key=key: rate(world.client("owner"), idempotency_key=key), times=20)
        assert not [r for r in responses if isinstance(r, Exception)]
        statuses += [r.status_code for r in responses]
        assert len({r.json()["id"] for r in responses}) == 1
    assert sorted(set(statuses)) == [200, 201]
    assert statuses.count(201) == 4
    assert TaskFeedback.objects.count() == 4
    assert FeedbackEvent.objects.filter(event_type="task_rated").count() == 4


@pytest.mark.django_db(transaction=True)
def test_identical_parallel_event_retries_all_get_the_original(world):
    if connection.vendor != "postgresql":
        pytest.skip("concurrent writers are PostgreSQL's; the PostgreSQL run covers this")
    event = {"event_type": "x", "event_family": "assistant_response", "signal": "positive", "idempotency_key": "e-1"}
    responses = at_once(lambda: world.client("service").post(EVENTS, event, format="json"), times=20)
    assert sorted(r.status_code for r in responses) == [200] * 19 + [201]
    assert len({r.json()["id"] for r in responses}) == 1
    assert FeedbackEvent.objects.count() == 1
