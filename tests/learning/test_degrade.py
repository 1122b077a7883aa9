"""Degrade, don't fail: a cache or broker outage never fails or loses a message.

The cache is the real Redis backend pointed at a port nothing listens on; the broker outage is the
real publish to such a Redis (eager mode off), and, for the worst case, an ``apply_async`` that raises.
After the outage the sweep (``learning.analyze_pending_messages``) analyses what was stored meanwhile.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.utils import timezone

from config.celery import SWEEP_TASK, SweepOnConnect, app
from learning import tasks
from learning.conf import learning_settings
from learning.context import cache as context_cache
from learning.models import ChatMessage, Preference, PromptPattern
from learning.services import messages as messages_service
from learning.services import preferences
from tests.conftest import DOWN_REDIS

MESSAGES = "/api/v1/messages"


@pytest.fixture
def broker_down(settings, monkeypatch):
    """Tasks go to a broker that is down (the production path, not eager)."""
    # Read the app's configuration before the setting changes (it is loaded lazily from the settings).
    saved = (app.conf.task_always_eager, app.conf.broker_url, app._pool, app.amqp._producer_pool)
    settings.CELERY_TASK_ALWAYS_EAGER = False
    monkeypatch.setenv("CELERY_BROKER_URL", DOWN_REDIS)  # Celery reads the environment before its settings
    app.conf.task_always_eager, app.conf.broker_url = False, DOWN_REDIS
    # Connection and producer pools made for the in-memory broker are not reused.
    app._pool, app.amqp._producer_pool = None, None
    try:
        yield DOWN_REDIS
    finally:
        # Kombu's pools are shared by URL: the one made for the dead broker is left alone, not closed.
        app.conf.task_always_eager, app.conf.broker_url, app._pool, app.amqp._producer_pool = saved


def _post(client, content: str, **extra):
    return client.post(MESSAGES, {"session_id": "s1", "content": content, **extra}, format="json")


def _sweep_later() -> int:
    """Run the sweep as the beat schedule would, once the stored messages are old enough."""
    ChatMessage.objects.update(created_at=timezone.now() - timedelta(minutes=5))
    return tasks.analyze_pending_messages()


def test_a_cache_outage_gives_uncached_context_not_a_failure(
    world, analyzer, broken_cache, caplog, monkeypatch, django_capture_on_commit_callbacks
):
    preferences.preference_add_manual(user=world.owner, category="output", description="Answer in Spanish.")
    monkeypatch.setattr(context_cache, "cache_failures", Counter())
    with (
        caplog.at_level(logging.WARNING, logger="learning.context.cache"),
        django_capture_on_commit_callbacks(execute=True),
    ):
        response = _post(world.client("owner"), "From now on keep your answers short.")
    assert response.status_code == 201, response.content
    body = response.json()
    # The context was read from the tables: the user's preference is there, uncached.
    assert [p["description"] for p in body["context"]["preferences"]] == ["Answer in Spanish."]
    message = ChatMessage.objects.get(pk=body["message_id"])
    assert PromptPattern.objects.filter(message=message).exists()
    # Eager here: the analysis ran after commit, and its cache invalidation failed quietly too.
    assert message.analyzed_at is not None
    assert Preference.objects.filter(user=world.owner, axis="length:short").exists()
    assert context_cache.cache_failures["versions"] >= 1  # counted
    assert any("serving uncached context" in r.getMessage() for r in caplog.records)  # and logged


def test_writes_that_drop_cached_context_survive_a_cache_outage(
    world, broken_cache, django_capture_on_commit_callbacks
):
    preference, _ = preferences.preference_add_manual(user=world.owner, category="tone", description="Be formal.")
    with django_capture_on_commit_callbacks(execute=True):
        response = world.client("owner").patch(
            f"/api/v1/preferences/{preference.pk}/toggle", {"active": False}, format="json"
        )
    assert response.status_code == 200, response.content
    context = world.client("owner").get("/api/v1/context").json()
    assert context["preferences"] == []  # the tables were read: the toggle is seen at once


def test_a_client_message_id_replays_during_a_cache_outage(world, analyzer, broken_cache):
    first = _post(world.client("owner"), "Hello there.", client_message_id="c-1")
    again = _post(world.client("owner"), "Hello there.", client_message_id="c-1")
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["message_id"] == first.json()["message_id"]
    assert ChatMessage.objects.filter(user=world.owner).count() == 1


def test_a_broker_outage_stores_the_message_and_the_sweep_recovers_it(
    world, analyzer, broker_down, caplog, django_capture_on_commit_callbacks
):
    with (
        caplog.at_level(logging.WARNING, logger="learning.services.messages"),
        django_capture_on_commit_callbacks(execute=True),
    ):
        response = _post(world.client("owner"), "From now on keep your answers short.")
    assert response.status_code == 201, response.content
    message = ChatMessage.objects.get(pk=response.json()["message_id"])
    assert message.analyzed_at is None  # stored, waiting
    assert response.json()["analysis"] == "pending"
    assert any("could not enqueue analysis" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("cache_down", [False, True], ids=["broker-down", "broker-and-cache-down"])
def test_an_enqueue_that_raises_is_recovered_by_the_sweep(
    world, analyzer, settings, monkeypatch, request, cache_down, django_capture_on_commit_callbacks
):
    if cache_down:
        request.getfixturevalue("broken_cache")

    def publish_fails(*args, **kwargs):
        raise OSError("broker down")

    monkeypatch.setattr(tasks.analyze_message, "apply_async", publish_fails)
    with django_capture_on_commit_callbacks(execute=True):
        responses = [_post(world.client("owner"), text) for text in ("From now on keep your answers short.", "Hi.")]
    assert [r.status_code for r in responses] == [201, 201]
    assert ChatMessage.objects.filter(user=world.owner, analyzed_at__isnull=True).count() == 2
    # The broker is back (eager here: the sweep's enqueue runs the analysis); the cache may still be down.
    monkeypatch.undo()
    assert _sweep_later() == 2
    assert ChatMessage.objects.filter(user=world.owner, analyzed_at__isnull=True).count() == 0
    assert Preference.objects.filter(user=world.owner, axis="length:short").exists()
    assert _sweep_later() == 0


def test_a_worker_that_connects_to_the_broker_sweeps_every_waiting_message(
    world, analyzer, monkeypatch, caplog, django_capture_on_commit_callbacks
):
    """A broker that restarts without persistence loses the queued tasks, and messages stored during
    the outage have none: the worker's consumer step, run at every (re)connection, queues the sweep
    for all of them at once instead of leaving them to beat's sweep of messages over a minute old."""

    def publish_fails(*args, **kwargs):
        raise OSError("broker down")

    monkeypatch.setattr(tasks.analyze_message, "apply_async", publish_fails)
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(world.client("owner"), "From now on keep your answers short.")
    assert response.status_code == 201, response.content
    monkeypatch.undo()
    assert tasks.analyze_pending_messages() == 0  # beat's sweep: too young yet

    sent = []

    def send_task(name, kwargs):  # the broker is back; eager here, so the task runs in-process
        sent.append((name, kwargs))
        return app.tasks[name].apply(kwargs=kwargs)

    consumer = SimpleNamespace(app=SimpleNamespace(send_task=send_task))
    step = SweepOnConnect(consumer)
    assert SweepOnConnect in app.steps["consumer"]
    step.start(consumer)
    assert sent == [(SWEEP_TASK, {"older_than_seconds": 0})]
    assert ChatMessage.objects.get(pk=response.json()["message_id"]).analyzed_at is not None
    assert Preference.objects.filter(user=world.owner, axis="length:short").exists()

    def broker_gone(name, kwargs):
        raise OSError("broker down again")

    with caplog.at_level(logging.WARNING, logger="config.celery"):
        SweepOnConnect(consumer).start(SimpleNamespace(app=SimpleNamespace(send_task=broker_gone)))  # no raise
    assert any("could not queue the analysis sweep" in r.getMessage() for r in caplog.records)


def test_after_a_failed_publish_requests_leave_the_broker_alone_until_the_breaker_expires(
    world, analyzer, settings, monkeypatch, request, django_capture_on_commit_callbacks
):
    """A broker that hangs costs one request its publish timeouts, not every request: for
    ANALYSIS_PUBLISH_BREAKER_SECONDS the messages are stored and left to the sweep."""
    settings.CELERY_TASK_ALWAYS_EAGER = False
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = False
    request.addfinalizer(lambda: setattr(app.conf, "task_always_eager", eager))
    publishes = []

    def publish_fails(*args, **kwargs):
        publishes.append(1)
        raise OSError("broker down")

    monkeypatch.setattr(tasks.analyze_message, "apply_async", publish_fails)
    clock = [1000.0]
    monkeypatch.setattr(messages_service.time, "monotonic", lambda: clock[0])
    client = world.client("owner")
    with django_capture_on_commit_callbacks(execute=True):
        statuses = [_post(client, text).status_code for text in ("One.", "Two.", "Three.")]
    assert statuses == [201, 201, 201]
    assert len(publishes) == 1  # the first request tried; the next two did not wait on the broker
    clock[0] += learning_settings.ANALYSIS_PUBLISH_BREAKER_SECONDS + 0.1
    with django_capture_on_commit_callbacks(execute=True):
        assert _post(client, "Four.").status_code == 201
    assert len(publishes) == 2  # the breaker expired: the broker is tried again
    # The sweep is the retry: it tries the broker at once, breaker or not.
    messages_service.analysis_sweep(older_than_seconds=0)
    assert len(publishes) == 3
    assert ChatMessage.objects.filter(user=world.owner, analyzed_at__isnull=True).count() == 4


def test_with_the_cache_down_a_process_publishes_one_analysis_task_at_a_time(monkeypatch):
    """Without the cache's mark, the task of a publish in flight claims the messages stored meanwhile:
    they are not published again (with the broker hanging too, each would wait out its timeout)."""

    class DownCache:
        def add(self, *args, **kwargs):
            raise ConnectionError("cache down")

        def delete(self, *args, **kwargs):
            raise ConnectionError("cache down")

    monkeypatch.setattr(messages_service, "cache", DownCache())
    started, release = threading.Event(), threading.Event()
    published = []

    def slow_publish(message_id):
        published.append(message_id)
        started.set()
        release.wait(10)

    monkeypatch.setattr(tasks.analyze_message, "delay", slow_publish)
    first = threading.Thread(target=messages_service._enqueue_analysis, args=("a",))
    first.start()
    assert started.wait(10)
    messages_service._enqueue_analysis("b")  # returns at once: a's task claims b when it runs
    release.set()
    first.join(10)
    messages_service._enqueue_analysis("c")  # nothing in flight: published
    assert published == ["a", "c"]
