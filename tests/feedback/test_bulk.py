"""Bulk ingestion: up to the limit, all or nothing, with a per-item error report."""

from __future__ import annotations

import pytest
from django.test import override_settings

from feedback.models import FeedbackEvent

URL = "/api/v1/feedback/events/bulk"


def item(i, **overrides):
    body = {"event_type": "chunk_cited", "event_family": "retrieval", "signal": "positive", "subject_id": str(i)}
    body.update(overrides)
    return body


def test_service_writes_a_batch_in_order(world):
    events = [item(i, user_id=world.owner.pk if i % 2 else world.member.pk, project="apollo") for i in range(50)]
    response = world.client("service").post(URL, {"events": events}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["created"] == 50
    assert body["replayed"] == 0
    stored = {str(e.id): e.subject_id for e in FeedbackEvent.objects.all()}
    assert [stored[i] for i in body["ids"]] == [str(i) for i in range(50)]


def test_user_batch_is_written_as_themself(world):
    response = world.client("owner").post(URL, {"events": [item(0), item(1)]}, format="json")
    assert response.status_code == 201
    assert set(FeedbackEvent.objects.values_list("user_id", flat=True)) == {world.owner.pk}


def test_one_bad_item_writes_nothing_and_is_reported(world):
    events = [item(0), item(1, signal="meh"), item(2), item(3, event_family="gossip", event_type="")]
    response = world.client("service").post(URL, {"events": events}, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert "2 of 4" in error["message"]
    assert [entry["index"] for entry in error["items"]] == [1, 3]
    assert "signal" in error["items"][0]["fields"]
    assert {"event_family", "event_type"} <= set(error["items"][1]["fields"])
    assert FeedbackEvent.objects.count() == 0


def test_access_rule_failure_in_one_item_writes_nothing(world):
    events = [item(0), item(1, user_id=world.member.pk)]
    response = world.client("owner").post(URL, {"events": events}, format="json")
    assert response.status_code == 403
    assert response.json()["error"]["items"][0]["index"] == 1
    assert "user_id" in response.json()["error"]["items"][0]["fields"]
    assert FeedbackEvent.objects.count() == 0


def test_format_errors_are_reported_before_access_errors(world):
    events = [item(0, signal="meh"), item(1, project="apollo")]
    response = world.client("other").post(URL, {"events": events}, format="json")
    assert response.status_code == 400
    assert [e["index"] for e in response.json()["error"]["items"]] == [0]
    assert FeedbackEvent.objects.count() == 0


def test_a_mix_of_rule_failures_is_a_400(world):
    events = [item(0, user_id=world.member.pk), item(1, project="nope")]
    response = world.client("owner").post(URL, {"events": events}, format="json")
    assert response.status_code == 400
    assert [e["index"] for e in response.json()["error"]["items"]] == [0, 1]


@override_settings(FEEDBACK_BULK_MAX_EVENTS=10)
def test_over_the_limit_is_refused_naming_events(world):
    response = world.client("service").post(URL, {"events": [item(i) for i in range(11)]}, format="json")
    assert response.status_code == 400
    assert "events" in response.json()["error"]["fields"]
    assert FeedbackEvent.objects.count() == 0


def test_default_limit_is_one_thousand(world):
    response = world.client("service").post(URL, {"events": [item(i) for i in range(1001)]}, format="json")
    assert response.status_code == 400
    assert "1000" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    "body",
    [{}, {"events": []}, {"events": "no"}, {"events": [1, 2]}, {"events": [item(0)], "extra": 1}],
)
def test_malformed_envelope(world, body):
    response = world.client("service").post(URL, body, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["fields"]
    assert FeedbackEvent.objects.count() == 0


def test_retried_batch_replays_and_adds_only_new_events(world):
    client = world.client("service")
    first = client.post(URL, {"events": [item(i, idempotency_key=f"k{i}") for i in range(3)]}, format="json")
    second = client.post(URL, {"events": [item(i, idempotency_key=f"k{i}") for i in range(5)]}, format="json")
    assert second.status_code == 201
    assert second.json()["created"] == 2
    assert second.json()["replayed"] == 3
    assert second.json()["ids"][:3] == first.json()["ids"]
    assert FeedbackEvent.objects.count() == 5


def test_a_key_repeated_inside_one_batch_is_an_item_error(world):
    events = [item(0, idempotency_key="dup"), item(1, idempotency_key="dup")]
    response = world.client("service").post(URL, {"events": events}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["items"][0]["index"] == 1
    assert FeedbackEvent.objects.count() == 0


def test_a_replayed_key_with_a_changed_payload_is_a_conflict(world):
    client = world.client("service")
    client.post(URL, {"events": [item(0, idempotency_key="k")]}, format="json")
    response = client.post(URL, {"events": [item(1), item(0, idempotency_key="k", signal="negative")]}, format="json")
    assert response.status_code == 409
    assert response.json()["error"]["items"][0]["index"] == 1
    assert FeedbackEvent.objects.count() == 1
