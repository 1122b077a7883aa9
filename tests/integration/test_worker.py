"""End to end through PostgreSQL, the Redis broker and a real Celery worker process."""

from __future__ import annotations

import time

import pytest
from rest_framework.test import APIClient

from accounts.models import ApiKey
from accounts.services import api_key_create
from learning.models import ChatMessage, Preference
from promotions.models import LearningPromotion
from promotions.tasks import agent_learning_scan
from tests.factories import UserFactory

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


def wait_for(predicate, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def test_a_request_is_stamped_by_the_worker(real_broker):
    user = UserFactory()
    key, raw = api_key_create(owner=user, name="worker-test")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    trace = f"worker-test-{key.pk}"
    assert client.get("/api/v1/me", HTTP_X_REQUEST_ID=trace).status_code == 200
    # Nothing ran in-process: the stamp appears only once the worker has run the task.
    assert wait_for(lambda: ApiKey.objects.get(pk=key.pk).last_used_at is not None), real_broker["log"].read_text()[
        -3000:
    ]
    # The worker's lines for the task name the request that queued it.
    assert wait_for(
        lambda: any(
            "accounts.api_key_mark_used" in line and f"[{trace}]" in line
            for line in real_broker["log"].read_text().splitlines()
        ),
        timeout=10,
    ), real_broker["log"].read_text()[-3000:]


def test_healthz_sees_the_real_broker(real_broker):
    staff = UserFactory(is_staff=True)
    client = APIClient()
    client.force_login(staff)
    response = client.get("/healthz")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["checks"]["broker"] == {**body["checks"]["broker"], "status": "ok", "mode": "broker"}
    assert body["checks"]["database"]["vendor"] == "postgresql"


def test_a_message_is_analysed_by_the_worker(real_broker):
    """The production path: the request stores and enqueues; the worker embeds, analyses and learns."""
    user = UserFactory()
    _, raw = api_key_create(owner=user, name="chat")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    response = client.post(
        "/api/v1/messages", {"session_id": "s", "content": "Keep your answers short from now on."}, format="json"
    )
    assert response.status_code == 201
    message_id = response.json()["message_id"]
    assert ChatMessage.objects.get(pk=message_id).analyzed_at is None  # nothing ran in the request
    # The worker loads the embedding model and fits the analyzer on its first task: allow for that. The bound only
    # catches a worker that never answers (on a loaded 2-core machine loading and fitting took over 80 s once).
    learned = Preference.objects.filter(user=user, description="Keep your answers short.", axis="length:short")
    assert wait_for(learned.exists, timeout=300), real_broker["log"].read_text()[-3000:]
    assert ChatMessage.objects.get(pk=message_id).analyzed_at is not None


def test_the_agent_learning_scan_runs_on_the_worker(real_broker):
    """Two thumbs-down on alike responses, posted through the API; the worker's scan proposes one
    prevention prompt with both as evidence."""
    user = UserFactory()
    _, raw = api_key_create(owner=user, name="feedback")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    for response_id, text in (("r1", "The Q3 budget was 40k."), ("r2", "The Q3 budget is about 40k.")):
        body = {
            "response_id": response_id,
            "rating": "down",
            "reason": "made up the budget figure",
            "response_text": text,
            "tool_name": "finance",
        }
        assert client.post("/api/v1/responses/feedback", body, format="json").status_code == 201
    agent_learning_scan.delay()
    assert wait_for(lambda: LearningPromotion.objects.filter(promotion_type="agent_learning").exists(), timeout=300), (
        real_broker["log"].read_text()[-3000:]
    )
    promotion = LearningPromotion.objects.get(promotion_type="agent_learning")
    assert len(promotion.source_event_ids) == 2
    assert promotion.proposed_learning["tool_name"] == "finance"
