"""Context is served from a cached snapshot that every write of learned items invalidates."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from learning.context.build import context_build
from learning.context.cache import cache_is_shared, context_versions, context_warm, user_ingredients
from learning.models import Memory, Preference
from learning.services import messages, preferences
from tests.factories import (
    LearnedWorkflowFactory,
    MembershipFactory,
    MemoryFactory,
    PreferenceFactory,
    ProjectFactory,
    TastePatternFactory,
    UserFactory,
)


def test_context_reads_the_cache_until_a_write_invalidates_it(
    db, django_assert_num_queries, django_capture_on_commit_callbacks
):
    user = UserFactory()
    with django_capture_on_commit_callbacks(execute=True):
        row, _ = preferences.preference_add_manual(user=user, category="length", description="Short")
    assert context_build(user=user).preferences[0]["preference"] == row.preference
    with django_assert_num_queries(0):
        context_build(user=user, message="anything")
    with django_capture_on_commit_callbacks(execute=True):
        preferences.preference_set_active(preference=row, active=False)
    assert context_build(user=user).preferences == []


def test_decay_invalidates_every_users_cached_context(db, django_capture_on_commit_callbacks, settings):
    user = UserFactory()
    with django_capture_on_commit_callbacks(execute=True):
        row, _ = preferences.preference_add_manual(user=user, category="length", description="Short")
    Preference.objects.filter(pk=row.pk).update(source="learned", confidence=0.2)
    context_build(user=user)  # cached: still lists it
    preferences.preferences_decay()
    assert context_build(user=user).preferences == []


def _taught_by_the_worker(monkeypatch, user, content):
    """Store a message as the request does, then analyse it as the worker does (each message's
    transaction commits, so its invalidation runs before the batch ends)."""
    monkeypatch.setattr(messages, "_enqueue_analysis", lambda message_id: None)
    message, _ = messages.message_observe(user=user, session_id="s", content=content)  # caches the context
    return messages.messages_analyze(message_ids=[str(message.pk)])[str(message.pk)]


@pytest.mark.django_db(transaction=True)
def test_the_worker_rebuilds_the_cached_context_of_the_users_it_taught(analyzer, monkeypatch):
    """Refresh ahead: the request after a lesson reads the cache, not the tables."""
    user = UserFactory()
    analysis = _taught_by_the_worker(monkeypatch, user, "From now on, please answer in British English.")
    assert analysis.detected == "preference"
    with CaptureQueriesContext(connection) as queries:
        built = context_build(user=user, message="anything")
    assert [q["sql"] for q in queries] == []
    assert [p["description"] for p in built.preferences] == [Preference.objects.get(user=user).description]


@pytest.mark.django_db(transaction=True)
def test_a_worker_with_a_cache_of_its_own_warms_nothing(analyzer, monkeypatch, settings):
    """A worker's local-memory cache reaches no web process: rebuilding there would be wasted."""
    monkeypatch.setattr(messages, "analysis_in_process", lambda: False)
    warmed = []
    monkeypatch.setattr(messages, "context_warm", lambda users: warmed.append(users))
    _taught_by_the_worker(monkeypatch, UserFactory(), "From now on, please answer in British English.")
    assert warmed == []
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://x"}}
    assert cache_is_shared()


def test_warming_without_a_cache_reads_nothing(db, settings, django_assert_num_queries):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}
    with django_assert_num_queries(0):
        assert context_warm(users=[UserFactory.build(pk=1)]) == 0


def test_warming_a_batch_of_users_reads_the_tables_once_and_caches_what_each_would_build(
    db, settings, django_assert_num_queries
):
    """The worker warms every user of a batch with five statements in all; each user's cached
    ingredients are what building their context alone reads, within the per-user limits."""
    settings.CONTEXT_MAX_PREFERENCES = 2
    settings.CONTEXT_MAX_MEMORIES = 2
    users = UserFactory.create_batch(3)
    rich, plain, empty = users
    for confidence in (0.5, 0.9, 0.7):
        PreferenceFactory(user=rich, confidence=confidence, description=f"Rule at {confidence}")
    PreferenceFactory(user=plain, confidence=0.6)
    PreferenceFactory(user=rich, confidence=0.95, candidate=True)  # never injected
    for confidence in (0.3, 0.8, 0.6):
        MemoryFactory(owner=rich, confidence=confidence)
    MemoryFactory(owner=plain)
    LearnedWorkflowFactory(user=rich, confidence=0.4)
    LearnedWorkflowFactory(user=rich, confidence=0.9)
    TastePatternFactory(user=plain)
    project = ProjectFactory()
    MembershipFactory(user=rich, project=project)

    with django_assert_num_queries(5):
        assert context_warm(users=[*users, rich]) == 3
    with django_assert_num_queries(0):
        warmed = {u.pk: user_ingredients(user=u, versions=context_versions(user_id=u.pk)) for u in users}
    cache.clear()
    alone = {u.pk: user_ingredients(user=u, versions=context_versions(user_id=u.pk)) for u in users}
    assert warmed == alone
    assert [p["description"] for p in warmed[rich.pk]["preferences"]] == ["Rule at 0.9", "Rule at 0.7"]
    assert [m["content"] for m in warmed[rich.pk]["memories"]] == [
        Memory.objects.get(owner=rich, confidence=c).content for c in (0.8, 0.6)
    ]
    assert [w["confidence"] for w in warmed[rich.pk]["workflows"]] == [0.9, 0.4]
    assert warmed[rich.pk]["project_ids"] == {project.pk}
    assert len(warmed[plain.pk]["taste_patterns"]) == 1
    assert warmed[plain.pk]["project_ids"] == set()
    assert warmed[empty.pk] == {
        "preferences": [],
        "workflows": [],
        "taste_patterns": [],
        "memories": [],
        "project_ids": set(),
    }
    with django_assert_num_queries(0):  # all three cached under their versions: nothing to rebuild
        assert context_warm(users=users) == 3
