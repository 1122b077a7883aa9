"""Task ratings: stored, mirrored into the event stream by the one writer, read under the access rules."""

from __future__ import annotations

import pytest

from feedback.models import FeedbackEvent, TaskFeedback

URL = "/api/v1/feedback/tasks"
TASK = {"id": "task-9", "title": "Call Acme about renewal", "due": "2026-12-01"}


def rate(client, **overrides):
    body = {"task_snapshot": TASK, "rating": "good", "reason": "spot on"}
    body.update(overrides)
    return client.post(URL, body, format="json")


def test_rating_writes_the_row_and_a_normalized_event(world):
    response = rate(world.client("owner"), project="apollo", completed=True)
    assert response.status_code == 201, response.content
    feedback = TaskFeedback.objects.get(pk=response.json()["id"])
    assert (feedback.user, feedback.rating, feedback.completed, feedback.promoted) == (world.owner, "good", True, False)
    event = FeedbackEvent.objects.get()
    assert event.event_family == "task_generation"
    assert event.signal == "positive"
    assert (event.source_table, event.source_record_id) == ("ai_task_feedback", str(feedback.pk))
    assert (event.subject_type, event.subject_id) == ("task", "task-9")
    assert event.before_snapshot == TASK
    assert event.free_text == "spot on"


def test_bad_rating_maps_to_a_negative_signal(world):
    rate(world.client("owner"), rating="bad", reason="too vague")
    assert FeedbackEvent.objects.get().signal == "negative"


def test_service_rates_on_behalf_of_a_user(world):
    response = rate(world.client("service", on_behalf_of="ext-member"))
    assert response.status_code == 201
    assert response.json()["user_id"] == world.member.pk


def test_service_rating_needs_a_user(world):
    response = rate(world.client("service"))
    assert response.status_code == 400
    assert "user_id" in response.json()["error"]["fields"]
    assert TaskFeedback.objects.count() == 0


def test_user_cannot_rate_as_someone_else(world):
    response = rate(world.client("owner"), user_id=world.member.pk)
    assert response.status_code == 403
    assert TaskFeedback.objects.count() == 0
    assert FeedbackEvent.objects.count() == 0


def test_outsider_cannot_rate_into_a_project(world):
    response = rate(world.client("other"), project="apollo")
    assert response.status_code == 403
    assert TaskFeedback.objects.count() == 0


def test_retried_rating_returns_the_original(world):
    client = world.client("owner")
    first = rate(client, idempotency_key="r-1")
    second = rate(client, idempotency_key="r-1")
    assert (first.status_code, second.status_code) == (201, 200)
    assert first.json()["id"] == second.json()["id"]
    assert TaskFeedback.objects.count() == 1
    assert FeedbackEvent.objects.count() == 1


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"rating": "meh"}, "rating"),
        ({"task_snapshot": {}}, "task_snapshot"),
        ({"task_snapshot": "a task"}, "task_snapshot"),
        ({"task_snapshot": {"blob": "x" * 70_000}}, "task_snapshot"),
        ({"completed": "sometimes"}, "completed"),
        ({"reason": "x" * 10_001}, "reason"),
        ({"project": "nope"}, "project"),
    ],
)
def test_bad_input_is_named_and_nothing_written(world, change, field):
    response = rate(world.client("owner"), **change)
    assert response.status_code == 400, response.content
    assert field in response.json()["error"]["fields"]
    assert TaskFeedback.objects.count() == 0
    assert FeedbackEvent.objects.count() == 0


def test_missing_rating_is_named(world):
    response = world.client("owner").post(URL, {"task_snapshot": TASK}, format="json")
    assert response.status_code == 400
    assert "rating" in response.json()["error"]["fields"]


@pytest.fixture
def ratings(world):
    return {
        "owner_project": rate(world.client("owner"), project="apollo").json()["id"],
        "owner_personal": rate(world.client("owner")).json()["id"],
        "member_project": rate(world.client("member"), project="apollo").json()["id"],
        "other_personal": rate(world.client("other")).json()["id"],
    }


VISIBLE = {
    "owner": {"owner_project", "owner_personal", "member_project"},
    "member": {"owner_project", "member_project"},
    "other": {"other_personal"},
    "admin": {"owner_project", "owner_personal", "member_project", "other_personal"},
    "service": {"owner_project", "owner_personal", "member_project", "other_personal"},
}


@pytest.mark.parametrize("role", sorted(VISIBLE))
def test_reads_apply_the_access_rules(world, ratings, role):
    client = world.client(role)
    listed = {row["id"] for row in client.get(URL).json()["results"]}
    assert listed == {ratings[name] for name in VISIBLE[role]}
    for name, rating_id in ratings.items():
        expected = 200 if name in VISIBLE[role] else 404
        assert client.get(f"{URL}/{rating_id}").status_code == expected


def test_filters(world, ratings):
    client = world.client("admin")
    assert len(client.get(URL, {"project": "apollo"}).json()["results"]) == 2
    assert client.get(URL, {"rating": "nope"}).status_code == 400
