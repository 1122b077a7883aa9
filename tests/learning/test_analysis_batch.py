"""A batch of messages is read once and applied one short transaction per message, and each message
reads what it would read alone: its session's earlier turns and its user's prompt window."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from learning import selectors
from learning.models import ChatMessage, Memory, PromptPattern
from learning.services import messages
from tests.factories import UserFactory

QUESTION = "What is the capital of Peru?"  # teaches nothing: only the batch's own statements run


def _stored(user, content, session_id="s"):
    return ChatMessage.objects.create(user=user, session_id=session_id, role=ChatMessage.Role.USER, content=content)


def _queued(monkeypatch, users):
    monkeypatch.setattr(messages, "_enqueue_analysis", lambda message_id: None)
    return [str(messages.message_observe(user=user, session_id="s", content=QUESTION)[0].pk) for user in users]


@pytest.mark.django_db
def test_a_message_that_teaches_nothing_costs_its_own_transaction_only(analyzer, monkeypatch):
    """Windows, earlier turns, stored vectors and the prune are read once per batch: each further
    message adds its transaction (begin, the guarded update, its prompt's vector, commit)."""
    counts = []
    for size in (2, 6):
        ids = _queued(monkeypatch, UserFactory.create_batch(size))
        with CaptureQueriesContext(connection) as queries:
            results = messages.messages_analyze(message_ids=ids)
        assert [results[i].detected for i in ids] == ["none"] * size
        counts.append(len(queries))
    assert counts[1] - counts[0] <= 4 * 4
    assert ChatMessage.objects.filter(analyzed_at__isnull=True).count() == 0
    assert PromptPattern.objects.filter(embedding__isnull=True).count() == 0


@pytest.mark.django_db
def test_a_message_analysed_meanwhile_keeps_what_the_first_delivery_learned(analyzer, monkeypatch):
    user = UserFactory()
    monkeypatch.setattr(messages, "_enqueue_analysis", lambda message_id: None)
    message, _ = messages.message_observe(user=user, session_id="s", content="I have two cats.")
    apply, taught = messages._apply, []

    def analysed_meanwhile(locked, *args):
        learned = apply(locked, *args)
        taught.extend(item["kind"] for item in learned)
        # Another delivery stamps the message while this one applies it.
        ChatMessage.objects.filter(pk=locked.pk).update(analyzed_at=timezone.now(), learned=[])
        return learned

    monkeypatch.setattr(messages, "_apply", analysed_meanwhile)
    assert messages.messages_analyze(message_ids=[str(message.pk)]) == {}
    assert taught == ["memory"]
    assert not Memory.objects.filter(owner=user).exists()  # this delivery's writes were rolled back
    assert ChatMessage.objects.get(pk=message.pk).learned == []


@pytest.mark.django_db
def test_each_message_of_a_batch_reads_its_own_earlier_turns(db):
    alice, bob = UserFactory(), UserFactory()
    turns = [_stored(alice, f"turn {i}") for i in range(10)]
    other_session = [_stored(alice, f"other {i}", session_id="t") for i in range(2)]
    bobs = [_stored(bob, f"bob {i}") for i in range(3)]
    # turns[2] and turns[9] are of one session with six messages between them: the first is read
    # on its own; the others come from the one query.
    batch = [turns[2], turns[9], other_session[1], bobs[0], bobs[2]]
    many = selectors.recent_messages_many(messages=batch)
    for message in batch:
        alone = selectors.recent_messages(message=message)
        assert [m.pk for m in many[message.pk]] == [m.pk for m in alone], message.content
    assert [m.content for m in many[turns[9].pk]] == ["turn 5", "turn 6", "turn 7", "turn 8"]
    assert many[bobs[0].pk] == []


@pytest.mark.django_db
def test_the_prompt_windows_of_several_users_are_theirs_alone(monkeypatch):
    monkeypatch.setattr(selectors, "PATTERN_WINDOW_ROWS", 3)
    alice, bob, carol = UserFactory(), UserFactory(), UserFactory()
    for user, count in ((alice, 5), (bob, 2)):
        for i in range(count):
            message = _stored(user, f"request {i}")
            PromptPattern.objects.create(
                user=user, session_id="s", message=message, prompt_hash=str(i), prompt_summary=f"request {i}"
            )
    PromptPattern.objects.filter(user=alice).exclude(prompt_summary="request 4").update(embedding=b"\0" * 1536)
    PromptPattern.objects.filter(user=bob).update(embedding=b"\0" * 1536)
    windows = selectors.pattern_windows(user_ids=[alice.pk, bob.pk, carol.pk])
    for user in (alice, bob, carol):
        assert [p.pk for p in windows[user.pk]] == [p.pk for p in selectors.pattern_window(user_id=user.pk)]
    assert [p.prompt_summary for p in windows[alice.pk]] == ["request 3", "request 2", "request 1"]
    assert windows[carol.pk] == []


@pytest.mark.django_db
def test_a_batch_keeps_the_newest_prompt_patterns_of_each_user(analyzer, monkeypatch, settings):
    settings.PROMPT_WINDOW = 2
    users = UserFactory.create_batch(2)
    monkeypatch.setattr(messages, "_enqueue_analysis", lambda message_id: None)
    ids = [
        str(messages.message_observe(user=user, session_id="s", content=f"{QUESTION} ({i})")[0].pk)
        for i in range(3)
        for user in users
    ]
    messages.messages_analyze(message_ids=ids)
    for user in users:
        kept = PromptPattern.objects.filter(user=user).order_by("created_at")
        assert [p.prompt_summary for p in kept] == [f"{QUESTION} (1)", f"{QUESTION} (2)"]
