"""Any failure of the OpenAI-compatible analyzer falls back to the local one with an ``eval_failure``
event, and a task never dies holding a claim.

The model server is the local fake (tests/learning/fake_openai.py) answering in each malformed mode;
the worker's task runs as the worker would run it (claim, analyse, apply).
"""

from __future__ import annotations

import json

import pytest
from celery.exceptions import Retry
from django.db import OperationalError

from feedback.models import FeedbackEvent
from learning import tasks
from learning.analyzer import get_analyzer, openai_analyzer
from learning.analyzer.base import AnalyzerInput
from learning.models import ChatMessage, Preference
from learning.services import messages
from tests.factories import UserFactory
from tests.learning.fake_openai import Reply
from tests.learning.test_openai_analyzer import GOOD


def _completion(**fields) -> bytes:
    return json.dumps({"id": "c", "object": "chat.completion", "created": 0, "model": "m", **fields}).encode()


MALFORMED = {
    "not-json": Reply(content="this is not json"),
    "content-is-a-list": Reply(content="[1, 2, 3]"),
    "content-is-null-json": Reply(content="null"),
    "content-missing": Reply(raw_body=_completion(choices=[{"index": 0, "finish_reason": "stop", "message": {}}])),
    "bad-enum": Reply(content=json.dumps({**GOOD, "detected": "maybe"})),
    "missing-fields": Reply(content=json.dumps({"detected": "preference"})),
    "wrong-nested-type": Reply(content=json.dumps({**GOOD, "preference": "short"})),
    "empty-choices": Reply(raw_body=_completion(choices=[])),
    "choices-not-a-list": Reply(raw_body=_completion(choices="nope")),
    "choice-without-message": Reply(raw_body=_completion(choices=[{"index": 0, "finish_reason": "stop"}])),
    "message-is-null": Reply(raw_body=_completion(choices=[{"index": 0, "finish_reason": "stop", "message": None}])),
    "body-is-a-list": Reply(raw_body=b"[]"),
    "body-is-a-number": Reply(raw_body=b"42"),
    "empty-body": Reply(raw_body=b""),
    "html": Reply(raw_body=b"<html>bad gateway</html>"),
    "server-error": Reply(status=500),
    "slow": Reply(content=json.dumps(GOOD), delay=3.0),  # slower than the 2 s timeout
}


def _stored(user, content: str, django_capture_on_commit_callbacks) -> ChatMessage:
    with django_capture_on_commit_callbacks(execute=False):  # the worker runs it below
        message, _ = messages.message_observe(user=user, session_id="s", content=content)
    return message


@pytest.mark.parametrize("mode", list(MALFORMED))
def test_every_malformed_answer_falls_back_with_an_event_and_releases_nothing_stuck(
    configured, db, mode, django_capture_on_commit_callbacks
):
    user = UserFactory()
    configured.replies.append(MALFORMED[mode])
    message = _stored(user, "From now on keep your answers short please.", django_capture_on_commit_callbacks)
    assert tasks.analyze_message(str(message.pk)) == 1
    message.refresh_from_db()
    assert message.analyzed_at is not None  # nothing left claimed and waiting
    assert message.analysis["analyzer"] == "fallback:openai"
    event = FeedbackEvent.objects.get(event_family="eval_failure", source_record_id=str(message.pk))
    assert (event.event_type, event.signal) == ("analyzer_fallback", "failed")
    assert "OpenAI analyzer failed" in event.free_text
    assert Preference.objects.filter(user=user, axis="length:short").exists()  # learned locally
    assert len(configured.requests) == 1  # the server was really asked


@pytest.fixture
def poisoned(monkeypatch):
    """Applying what the analysis found fails for messages mentioning "poison" (a bug, not the model)."""
    apply = messages._apply

    def failing_apply(message, *args, **kwargs):
        if "poison" in message.content:
            raise RuntimeError("cannot apply this one")
        return apply(message, *args, **kwargs)

    monkeypatch.setattr(messages, "_apply", failing_apply)


def test_a_failing_message_is_released_and_spares_its_batch(
    analyzer, db, poisoned, settings, django_capture_on_commit_callbacks
):
    settings.ANALYSIS_MAX_ATTEMPTS = 3
    user = UserFactory()
    poison = _stored(user, "poison: keep it short from now on", django_capture_on_commit_callbacks)
    others = [_stored(user, text, django_capture_on_commit_callbacks) for text in ("Be concise.", "I have two cats.")]
    assert tasks.analyze_message(str(poison.pk)) == 2  # the batch held all three; two were analysed
    assert all(ChatMessage.objects.get(pk=m.pk).analyzed_at is not None for m in others)
    poison.refresh_from_db()
    assert (poison.analyzed_at, poison.analysis_claimed_until) == (None, None)  # released, not stuck
    assert poison.analysis["failed_attempts"] == 1
    assert "RuntimeError" in poison.analysis["error"]

    assert tasks.analyze_message(str(poison.pk)) == 0  # the next delivery takes it at once
    assert tasks.analyze_message(str(poison.pk)) == 0  # third failure: given up
    poison.refresh_from_db()
    assert poison.analyzed_at is not None
    assert poison.analysis == {"failed_attempts": 3, "error": "RuntimeError: cannot apply this one"}
    event = FeedbackEvent.objects.get(event_type="analysis_failed", source_record_id=str(poison.pk))
    assert (event.event_family, event.signal) == ("eval_failure", "failed")
    assert tasks.analyze_message(str(poison.pk)) == 0  # never claimed again
    assert FeedbackEvent.objects.filter(event_type="analysis_failed").count() == 1


def test_a_transient_failure_releases_the_claims_without_counting(
    analyzer, db, monkeypatch, django_capture_on_commit_callbacks
):
    user = UserFactory()
    message = _stored(user, "Be concise.", django_capture_on_commit_callbacks)

    def database_gone(**kwargs):
        raise OperationalError("server closed the connection")

    monkeypatch.setattr(messages, "messages_analyze", database_gone)
    with pytest.raises((OperationalError, Retry)):
        tasks.analyze_message.apply(args=[str(message.pk)])  # Celery retries it (autoretry_for)
    message.refresh_from_db()
    assert (message.analyzed_at, message.analysis_claimed_until, message.analysis) == (None, None, None)
    monkeypatch.undo()
    assert tasks.analyze_message(str(message.pk)) == 1  # the database is back: analysed


def test_after_a_failure_the_server_is_not_asked_again_for_a_while(configured, settings, monkeypatch):
    monkeypatch.setattr(openai_analyzer, "_cache", {})  # a new client, with its breaker closed
    settings.ANALYZER_BREAKER_SECONDS = 600.0
    configured.replies += [Reply(status=500), Reply(content=json.dumps(GOOD))]
    first = get_analyzer().analyze(AnalyzerInput(current_message="From now on keep your answers short."))
    second = get_analyzer().analyze(AnalyzerInput(current_message="Be brief."))
    assert (first.analyzer, second.analyzer) == ("fallback:openai", "fallback:openai")
    assert "CircuitOpen" in second.reasoning
    assert "InternalServerError" in second.reasoning
    assert len(configured.requests) == 1  # the batch did not wait on the failing server again

    monkeypatch.setattr(get_analyzer(), "_open_until", 0.0)  # the breaker's time is up
    assert get_analyzer().analyze(AnalyzerInput(current_message="Be brief.")).analyzer == "openai"
    assert len(configured.requests) == 2
