"""0007: rows from the catalogue keep their slug and description and get the axis they lie on."""

from __future__ import annotations

import importlib

from django.apps import apps

from learning.models import Preference
from tests.factories import PreferenceFactory, UserFactory

migration = importlib.import_module("learning.migrations.0007_open_set_preferences")


def test_catalogue_slugs_get_their_axis_and_supersessions_their_time(db):
    user = UserFactory()
    concise = PreferenceFactory(user=user, preference="concise", description="Keep responses short and to the point")
    detailed = PreferenceFactory(user=user, preference="detailed", description="Give thorough, detailed explanations")
    emoji = PreferenceFactory(user=user, category="tone", preference="no_emoji", description="Do not use emoji")
    Preference.objects.filter(pk=concise.pk).update(active=False, superseded_by=detailed)
    migration.axes_from_slugs(apps, None)
    rows = {row.preference: row for row in Preference.objects.all()}
    assert (rows["concise"].axis, rows["detailed"].axis, rows["no_emoji"].axis) == ("length:short", "length:long", "")
    assert rows["concise"].description == "Keep responses short and to the point"
    assert rows["concise"].superseded_at is not None
    assert rows["detailed"].superseded_at is None
    assert emoji.embedding is None  # computed on first comparison, not in the migration
