"""What analysis stores: preferences, workflows, corrections, pain points, memories; decay; the sweep."""

from __future__ import annotations

import itertools
from datetime import timedelta

import pytest
from django.utils import timezone

from feedback.models import FeedbackEvent
from learning.conf import learning_settings
from learning.models import ChatMessage, LearnedWorkflow, Memory, Preference, PromptPattern
from learning.services import messages, preferences
from learning.tasks import analyze_message, analyze_pending_messages
from tests.factories import UserFactory


@pytest.fixture
def user(db):
    return UserFactory()


def test_rewording_reinforces_one_preference(user, observe):
    observe(user, "Be concise.")
    first = Preference.objects.get(user=user)
    # Other days, other sessions (within one session a repeat reads as the user re-explaining).
    observe(user, "keep it short please", session_id="s2")
    observe(user, "could u keep ur answers brief pls", session_id="s3")
    row = Preference.objects.get(user=user)  # one row: the paraphrases reinforced it
    assert (row.pk, row.description, row.axis) == (first.pk, "Be concise.", "length:short")
    assert row.times_reinforced == 3
    assert first.confidence < row.confidence < 1.0


def test_confidence_rises_with_diminishing_returns(user, observe):
    seen = []
    for _ in range(4):
        observe(user, "Please keep your answers short.", session_id=str(len(seen)))
        seen.append(Preference.objects.get(user=user).confidence)
    steps = [b - a for a, b in itertools.pairwise(seen)]
    assert all(step > 0 for step in steps)
    assert steps == sorted(steps, reverse=True)


def test_a_contradiction_deactivates_the_older_preference(user, observe):
    observe(user, "Be concise.")
    observe(user, "Actually, give me detailed explanations from now on.")
    concise = Preference.objects.get(user=user, axis="length:short")
    detailed = Preference.objects.get(user=user, axis="length:long")
    assert detailed.description == "Give me detailed explanations."  # the user's words, not a canned phrase
    assert detailed.active
    assert not concise.active
    assert (concise.inactive_reason, concise.superseded_by_id) == ("contradicted", detailed.pk)


def test_preference_events_are_private_and_linked(user, observe):
    message, _ = observe(user, "Please use bullet points in your answers.")
    event = FeedbackEvent.objects.get(event_type="preference_learned")
    assert event.private
    assert (event.source_table, event.source_record_id) == ("chat_history", str(message.pk))
    assert event.user_id == user.pk


def test_a_correction_of_the_previous_answer_writes_an_event(user, observe):
    observe(user, "List the crew for Monday's shift.")
    messages.message_observe(
        user=user,
        session_id="s1",
        content="Monday: Ana Ruiz, Ben Okafor, Chloe Lind, Dev Patel (sorted by surname).",
        role=ChatMessage.Role.ASSISTANT,
    )
    message, analysis = observe(user, "Not like that. Sort them by start time.")
    assert analysis.detected == "correction"  # read against the answer it refers to
    assert FeedbackEvent.objects.filter(event_type="correction", source_record_id=str(message.pk)).exists()
    assert not Preference.objects.filter(user=user).exists()  # a one-off correction is no standing preference


def test_pain_point_writes_a_negative_event(user, observe):
    message, _ = observe(user, "I've told you three times already, why do you keep ignoring me?")
    event = FeedbackEvent.objects.get(event_type="pain_point")
    assert event.signal == "negative"
    assert event.source_record_id == str(message.pk)


def test_personal_statement_becomes_a_private_memory(user, observe):
    observe(user, "I follow a strict gluten-free diet.")
    memory = Memory.objects.get(owner=user)
    assert memory.visibility == "private"
    assert "gluten-free" in memory.content
    observe(user, "I follow a strict gluten-free diet.")
    assert Memory.objects.filter(owner=user).count() == 1


def test_three_similar_requests_make_a_workflow_two_do_not(user, observe):
    observe(user, "Summarize the weekly sales report for the leadership team")
    observe(user, "Can you summarize this week's sales report for leadership?")
    assert not LearnedWorkflow.objects.filter(user=user).exists()
    observe(user, "Summarize the sales report of this week for the leadership team please")
    workflow = LearnedWorkflow.objects.get(user=user)
    assert workflow.times_detected == 3
    assert workflow.example_input
    observe(user, "Please summarize the weekly sales report for leadership")
    workflow.refresh_from_db()
    assert workflow.times_detected == 4
    assert LearnedWorkflow.objects.filter(user=user).count() == 1


def test_unrelated_requests_make_no_workflow(user, observe):
    for text in ["What's the capital of Peru?", "Write a haiku about rain", "How do I boil an egg?"]:
        observe(user, text)
    assert not LearnedWorkflow.objects.filter(user=user).exists()


def test_analysis_delivered_twice_reinforces_once(user, analyzer):
    message, _ = messages.message_observe(user=user, session_id="s", content="Be concise.")
    analyze_message(str(message.pk))
    analyze_message(str(message.pk))
    assert Preference.objects.get(user=user).times_reinforced == 1
    assert analyze_message("00000000-0000-0000-0000-000000000000") == 0


def test_prompt_window_is_pruned(user, observe, settings):
    settings.PROMPT_WINDOW = 5
    for i in range(8):
        observe(user, f"question number {i} about tax forms", session_id=f"s{i}")
    patterns = PromptPattern.objects.filter(user=user)
    assert patterns.count() == 5
    assert all(p.embedding is not None for p in patterns)


def test_learning_switched_off_stores_but_does_not_learn(user, analyzer, settings):
    settings.REGGIE_PREFERENCE_LEARNING = False
    message, context = messages.message_observe(user=user, session_id="s", content="Be concise.")
    assert not context.enabled
    assert context.text == ""
    assert messages.message_analyze(message_id=str(message.pk)) is None
    assert not Preference.objects.exists()
    assert ChatMessage.objects.get(pk=message.pk).analyzed_at is not None


def test_decay_lowers_and_then_deactivates_stale_preferences(user, observe, settings):
    observe(user, "Be concise.")
    old = timezone.now() - timedelta(days=learning_settings.PREFERENCE_DECAY_AFTER_DAYS + 1)
    Preference.objects.filter(user=user).update(last_reinforced_at=old, confidence=0.32)
    manual, _ = preferences.preference_add_manual(user=user, category="tone", description="Formal")
    Preference.objects.filter(pk=manual.pk).update(last_reinforced_at=old)
    decayed, deactivated = preferences.preferences_decay()
    assert (decayed, deactivated) == (1, 1)
    row = Preference.objects.get(user=user, axis="length:short")
    assert (row.active, row.inactive_reason) == (False, "decayed")
    assert Preference.objects.get(pk=manual.pk).active  # what the user wrote does not fade
    observe(user, "Always keep answers brief.", session_id="s2")  # said again: back on
    row.refresh_from_db()
    assert row.active


def test_a_message_whose_enqueue_failed_is_swept_up(user, analyzer, monkeypatch, django_capture_on_commit_callbacks):
    def broker_down(*args, **kwargs):
        raise ConnectionError("broker down")

    monkeypatch.setattr(analyze_message, "delay", broker_down)
    with django_capture_on_commit_callbacks(execute=True):
        message, _ = messages.message_observe(user=user, session_id="s", content="Be concise.")
    assert ChatMessage.objects.get(pk=message.pk).analyzed_at is None  # stored, not analysed
    monkeypatch.undo()
    ChatMessage.objects.filter(pk=message.pk).update(created_at=timezone.now() - timedelta(minutes=5))
    assert analyze_pending_messages() == 1  # eager here: the sweep's enqueue runs the analysis
    assert ChatMessage.objects.get(pk=message.pk).analyzed_at is not None
    assert Preference.objects.filter(user=user, axis="length:short").exists()
    assert analyze_pending_messages() == 0


def test_one_task_analyses_a_batch_of_waiting_messages(user, analyzer, monkeypatch):
    monkeypatch.setattr(messages, "_enqueue_analysis", lambda message_id: None)  # as if the queue were busy
    ids = [
        str(messages.message_observe(user=user, session_id="s", content=text)[0].pk)
        for text in ["Be concise.", "I have two cats.", "What's the capital of Peru?"]
    ]
    assert messages.messages_claim(first_id=ids[2], limit=2)[0] == ids[2]  # the task's own message first
    assert messages.messages_claim(first_id=ids[2], limit=5) == [ids[1]]  # claimed ones are not handed out twice
    ChatMessage.objects.update(analysis_claimed_until=None)
    assert analyze_message(ids[1]) == 3
    assert ChatMessage.objects.filter(analyzed_at__isnull=True).count() == 0
    assert Preference.objects.filter(user=user, axis="length:short").exists()
    assert Memory.objects.filter(owner=user).count() == 1
    assert analyze_message(ids[0]) == 0  # its message was analysed in the batch
