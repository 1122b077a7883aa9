"""What analysis stores: preferences, workflows, corrections, pain points, memories; decay; the sweep."""

from __future__ import annotations

import itertools
import threading
from datetime import timedelta

import numpy as np
import pytest
from django.db import OperationalError, connection, connections, transaction
from django.utils import timezone

from core.embeddings import get_embedder
from feedback.models import FeedbackEvent
from learning.analyzer.base import AnalyzerInput, PreferenceFinding, WorkflowFinding
from learning.conf import learning_settings
from learning.models import ChatMessage, LearnedWorkflow, Memory, Preference, PromptPattern
from learning.services import messages, preferences, workflows
from learning.services.common import user_writer_lock
from learning.tasks import analyze_message, analyze_pending_messages
from tests.factories import ChatMessageFactory, UserFactory


@pytest.fixture
def user(db):
    return UserFactory()


def test_rewording_reinforces_one_preference(user, observe):
    observe(user, "Be concise.")
    first = Preference.objects.get(user=user)
    # Other days, other sessions (within one session a repeat reads as the user re-explaining).
    # ("keep it short please" alone may be about the answer at hand: the analyzer is not sure enough.)
    observe(user, "keep your replies short please", session_id="s2")
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


def test_messages_stored_while_a_task_waits_share_it(user, analyzer, monkeypatch, django_capture_on_commit_callbacks):
    queued = []
    monkeypatch.setattr(analyze_message, "delay", queued.append)  # the broker takes it; no worker yet
    ids = []
    for text in ["Be concise.", "I have two cats.", "What's the capital of Peru?"]:
        with django_capture_on_commit_callbacks(execute=True):
            ids.append(str(messages.message_observe(user=user, session_id="s", content=text)[0].pk))
    assert queued == [ids[0]]  # the waiting task will claim the others too: no task per message
    monkeypatch.undo()
    assert analyze_message(queued[0]) == 3
    assert ChatMessage.objects.filter(analyzed_at__isnull=True).count() == 0
    # Once the task started, a new message queues its own (eager here: analysed at once).
    with django_capture_on_commit_callbacks(execute=True):
        later, _ = messages.message_observe(user=user, session_id="s", content="I follow a vegan diet.")
    assert ChatMessage.objects.get(pk=later.pk).analyzed_at is not None


def test_a_full_batch_queues_the_next_one(user, analyzer, monkeypatch, settings, django_capture_on_commit_callbacks):
    settings.ANALYSIS_BATCH_SIZE = 2
    queued = []
    monkeypatch.setattr(analyze_message, "delay", queued.append)
    for i in range(5):
        with django_capture_on_commit_callbacks(execute=True):
            messages.message_observe(user=user, session_id="s", content=f"What is {i} plus {i}?")
    assert len(queued) == 1
    monkeypatch.undo()  # eager again: each full batch runs the next at once
    assert analyze_message(queued[0]) == 2
    assert ChatMessage.objects.filter(analyzed_at__isnull=True).count() == 0


def test_a_failed_enqueue_holds_no_later_message_back(user, analyzer, monkeypatch, django_capture_on_commit_callbacks):
    def broker_down(*args, **kwargs):
        raise ConnectionError("broker down")

    monkeypatch.setattr(analyze_message, "delay", broker_down)
    with django_capture_on_commit_callbacks(execute=True):
        first, _ = messages.message_observe(user=user, session_id="s", content="Be concise.")
    monkeypatch.undo()
    with django_capture_on_commit_callbacks(execute=True):
        second, _ = messages.message_observe(user=user, session_id="s", content="I have two cats.")
    # The broker is back: the second message queued a task, which claimed the first one too.
    assert ChatMessage.objects.filter(pk__in=[first.pk, second.pk], analyzed_at__isnull=False).count() == 2


def test_a_batch_reads_each_message_as_one_by_one(user, analyzer, monkeypatch):
    """Analysed together, the batch's earlier requests are in the window of the later ones (a
    workflow forms on the third) and an earlier turn of the session is read as context."""
    monkeypatch.setattr(messages, "_enqueue_analysis", lambda message_id: None)
    texts = [
        "Summarize the weekly sales report for the leadership team",
        "Can you summarize this week's sales report for leadership?",
        "Summarize the sales report of this week for the leadership team please",
    ]
    ids = [str(messages.message_observe(user=user, session_id="s", content=text)[0].pk) for text in texts]
    results = messages.messages_analyze(message_ids=ids)
    assert [results[i].detected for i in ids][2] == "workflow"
    assert LearnedWorkflow.objects.get(user=user).times_detected == 3
    assert PromptPattern.objects.filter(user=user, embedding__isnull=True).count() == 0


class _Counting:
    """An embedder that records what it was asked to embed."""

    dimensions = 384

    def __init__(self, inner) -> None:
        self.inner, self.texts = inner, []

    def embed(self, texts):
        self.texts += list(texts)
        return self.inner.embed(texts)

    def embed_one(self, text):
        return self.embed([text])[0]

    def embed_with_layer(self, texts):
        self.texts += list(texts)
        return self.inner.embed_with_layer(texts)


def test_earlier_turns_are_read_with_their_stored_vectors(user, analyzer, monkeypatch, observe):
    observe(user, "What's the capital of Peru?")
    observe(user, "And its population?")
    counting = _Counting(analyzer.embedder)
    monkeypatch.setattr(messages, "get_embedder", lambda: counting)
    monkeypatch.setattr(analyzer, "embedder", counting)
    text = "No, I asked about Peru, not Lima."
    _, analysis = observe(user, text)
    assert counting.texts == [text]  # the two earlier turns were embedded when they were analysed
    monkeypatch.undo()
    fresh = analyzer.analyze(
        AnalyzerInput(
            current_message=text,
            recent_context=[
                {"role": "user", "content": "What's the capital of Peru?"},
                {"role": "user", "content": "And its population?"},
            ],
        )
    )
    assert analysis.detected == fresh.detected  # the same reading as with everything embedded afresh
    assert analysis.confidence == pytest.approx(fresh.confidence, abs=1e-4)


# What the analysis of a request for the weekly report finds (the tests below need no model for it).
WEEKLY_REPORT = WorkflowFinding(
    workflow_name="Write the weekly report",
    trigger_pattern="weekly report",
    learned_steps=[],
    preferred_output="",
    confidence=0.7,
)


def _while_the_writer_lock_is_held(user, action):
    """Run ``action`` on this connection, with a 1 s lock timeout, while another connection holds
    the user's writer lock (``user_writer_lock``) in an open transaction."""
    _while_another_transaction_holds(lambda: user_writer_lock(user.pk), action)


def _while_another_transaction_holds(holding, action):
    """Run ``action`` on this connection, with a 1 s lock timeout, while another connection has run
    ``holding`` in a transaction it keeps open (and commits afterwards)."""
    taken, release = threading.Event(), threading.Event()

    def hold():
        try:
            with transaction.atomic():
                holding()
                taken.set()
                release.wait(10)
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold)
    holder.start()
    assert taken.wait(10)
    try:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '1s'")
            action()
    finally:
        release.set()
        holder.join()


@pytest.mark.django_db(transaction=True)
def test_storing_what_a_message_taught_holds_up_other_writers_but_not_the_users_next_message():
    """The worker storing what one message taught must not make the user's next request wait on it
    (every insert naming the user takes a key-share lock on their row); two writers of the user's
    preferences or workflows still take turns, so two workers cannot both create the same new one."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL; the PostgreSQL run covers this")
    user = UserFactory()
    _while_the_writer_lock_is_held(
        user, lambda: ChatMessage.objects.create(user=user, session_id="s", role="user", content="next")
    )
    assert ChatMessage.objects.filter(user=user, content="next").exists()
    stated = PreferenceFinding(category="format", preference="no_emoji", description="No emoji.", confidence=0.9)
    request = ChatMessageFactory(user=user, content="Write the weekly report for the Harbour site")
    vector = np.ones(384, dtype=np.float32) / np.sqrt(384)
    writers = [
        lambda: preferences.preference_learn(user=user, finding=stated, source_message=None, vector=vector),
        lambda: workflows.workflow_learn(user=user, finding=WEEKLY_REPORT, message=request, vector=vector, past=[]),
    ]
    for write in writers:
        with pytest.raises(OperationalError, match="lock timeout"):
            _while_the_writer_lock_is_held(user, write)
    assert not Preference.objects.filter(user=user).exists()
    assert not LearnedWorkflow.objects.filter(user=user).exists()


def _weekly_report_workflows(user):
    """The user's workflow for a weekly report (three times seen) and an unrelated one, embedded as
    the worker embeds requests; and a new request for the first."""
    texts = ["Write the weekly report for the Harbour site", "Translate the safety induction into Polish"]
    names = ["Write the weekly report", "Translate the induction"]
    vectors = np.asarray(get_embedder().embed(texts), dtype=np.float32)
    report, other = (
        LearnedWorkflow.objects.create(
            user=user,
            workflow_name=name,
            trigger_pattern=text,
            example_input=text,
            times_detected=3,
            confidence=0.7,
            embedding=vector,
        )
        for name, text, vector in zip(names, texts, vectors, strict=True)
    )
    request = ChatMessageFactory(user=user, content=texts[0])
    return (
        report,
        other,
        lambda: workflows.workflow_learn(user=user, finding=WEEKLY_REPORT, message=request, vector=vectors[0], past=[]),
    )


@pytest.mark.django_db(transaction=True)
def test_reinforcing_a_workflow_holds_up_only_that_workflow():
    """A request injecting a workflow writes its last_used_at: it must not wait on the worker comparing
    a new request with the user's other workflows, only on the one being reinforced."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL; the PostgreSQL run covers this")
    user = UserFactory()
    report, other, reinforce = _weekly_report_workflows(user)
    _while_another_transaction_holds(reinforce, lambda: workflows.workflows_mark_used(workflow_ids=[other.pk]))
    other.refresh_from_db()
    assert other.last_used_at is not None
    with pytest.raises(OperationalError, match="lock timeout"):
        _while_another_transaction_holds(reinforce, lambda: workflows.workflows_mark_used(workflow_ids=[report.pk]))
    report.refresh_from_db()
    assert (report.times_detected, report.last_used_at) == (5, None)


def test_a_workflow_deleted_while_compared_is_not_reinforced_or_recreated(user, monkeypatch):
    report, _, reinforce = _weekly_report_workflows(user)
    compare = workflows.detection.task_similarity

    def deleted_meanwhile(*args, **kwargs):
        LearnedWorkflow.objects.filter(pk=report.pk).delete()  # the user's delete, between read and lock
        return compare(*args, **kwargs)

    monkeypatch.setattr(workflows.detection, "task_similarity", deleted_meanwhile)
    assert reinforce() is None
    assert LearnedWorkflow.objects.filter(user=user).count() == 1  # the other one; nothing re-created
