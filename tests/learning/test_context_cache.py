"""Context is served from a cached snapshot that every write of learned items invalidates."""

from __future__ import annotations

from learning.context.build import context_build
from learning.models import Preference
from learning.services import preferences
from tests.factories import UserFactory


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
