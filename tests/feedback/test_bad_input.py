"""Bad input to the event stream: a 4xx naming the field, and nothing written."""

from __future__ import annotations

import json

import pytest
from django.test import override_settings

from feedback.models import FeedbackEvent

URL = "/api/v1/feedback/events"
VALID = {"event_type": "response_rated", "event_family": "assistant_response", "signal": "positive"}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"event_family": "gossip"}, "event_family"),
        ({"signal": "meh"}, "signal"),
        ({"event_type": None}, "event_type"),
        ({"event_type": ""}, "event_type"),
        ({"event_type": 5}, "event_type"),
        ({"event_type": "x" * 101}, "event_type"),
        ({"user_id": "abc"}, "user_id"),
        ({"user_id": True}, "user_id"),
        ({"metadata": ["not", "an", "object"]}, "metadata"),
        ({"source_context": "text"}, "source_context"),
        ({"private": "perhaps"}, "private"),
        ({"free_text": 12}, "free_text"),
        ({"free_text": "x" * 10_001}, "free_text"),
        ({"before_snapshot": {"blob": "x" * 70_000}}, "before_snapshot"),
        ({"sigal": "positive"}, "sigal"),
    ],
)
def test_bad_field_is_named_and_nothing_written(world, change, field):
    body = {**VALID, **change}
    body = {k: v for k, v in body.items() if not (k == "event_type" and v is None)}
    response = world.client("owner").post(URL, body, format="json")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert field in error["fields"], error
    assert error["message"]
    assert FeedbackEvent.objects.count() == 0


@pytest.mark.parametrize("missing", ["event_type", "event_family", "signal"])
def test_missing_required_field_is_named(world, missing):
    body = {k: v for k, v in VALID.items() if k != missing}
    response = world.client("owner").post(URL, body, format="json")
    assert response.status_code == 400
    assert missing in response.json()["error"]["fields"]
    assert FeedbackEvent.objects.count() == 0


def test_malformed_json(world):
    response = world.client("owner").post(URL, '{"event_type": "x", ', content_type="application/json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "parse_error"
    assert "body" in error["fields"]
    assert FeedbackEvent.objects.count() == 0


def test_json_that_is_not_an_object(world):
    response = world.client("owner").post(URL, "[1, 2]", content_type="application/json")
    assert response.status_code == 400
    assert FeedbackEvent.objects.count() == 0


def test_wrong_content_type(world):
    response = world.client("owner").post(URL, "event_type=x", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 415
    assert FeedbackEvent.objects.count() == 0


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=1024)
def test_oversize_body_is_refused_before_parsing(world):
    body = json.dumps({**VALID, "free_text": "x" * 2000})
    response = world.client("owner").post(URL, body, content_type="application/json")
    assert response.status_code == 413
    assert "body" in response.json()["error"]["fields"]
    assert FeedbackEvent.objects.count() == 0


def test_unknown_api_path_is_json_404(world):
    response = world.client("owner").get("/api/v1/nothing-here")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
