"""Every admin page loads for a superuser, with rows; changelists read a fixed number of queries
whatever the number of rows, and never the heavy columns (embeddings, raw text)."""

from __future__ import annotations

import re

import pytest
from django.contrib import admin
from django.contrib.admin.utils import quote
from django.db import connection, models
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from core.admin import BaseAdmin
from feedback.models import FeedbackEvent
from tests.admin.rows import BUILD, SINGLE_ROW

MODELS = sorted(BUILD, key=lambda m: m._meta.label)


def url(model, view, *args):
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


@pytest.fixture
def staff(world):
    return world.session_client("admin")


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m._meta.label)
def test_changelist_change_and_add_pages_load(staff, model):
    rows = [BUILD[model]() for _ in range(1 if model in SINGLE_ROW else 3)]
    model_admin = admin.site._registry[model]

    listing = staff.get(url(model, "changelist"))
    assert listing.status_code == 200
    shown = listing.context["cl"].result_count
    assert shown >= len(rows)
    if model_admin.search_fields:
        assert staff.get(url(model, "changelist"), {"q": "nothing-matches-this"}).status_code == 200
    change = staff.get(url(model, "change", quote(rows[0].pk)))
    assert change.status_code == 200, change.content[:500]
    if model_admin.has_add_permission(change.wsgi_request):
        assert staff.get(url(model, "add")).status_code == 200


def test_read_only_json_is_pretty_and_escaped(staff):
    event = BUILD[FeedbackEvent]()
    page = staff.get(url(FeedbackEvent, "change", event.pk)).content.decode()
    assert '"nested": {\n    "rank": 2\n  }' in page.replace("&quot;", '"')
    assert "&lt;b&gt;not markup&lt;/b&gt;" in page
    assert "<b>not markup</b>" not in page


def _heavy_columns(model_admin: BaseAdmin) -> list[str]:
    """Quoted "table"."column" names a changelist must not read whole."""
    model = model_admin.model
    pairs = [(model, f.column) for f in model._meta.concrete_fields if isinstance(f, models.BinaryField)]
    for path in model_admin.list_defer:
        owner, name = model, path
        if "__" in path:
            *relations, name = path.split("__")
            for relation in relations:
                owner = owner._meta.get_field(relation).related_model
        pairs.append((owner, owner._meta.get_field(name).column))
    for path in model_admin.list_select_related or ():
        owner = model
        for relation in path.split("__"):
            owner = owner._meta.get_field(relation).related_model
        pairs += [(owner, f.column) for f in owner._meta.concrete_fields if isinstance(f, models.BinaryField)]
    return [f'"{owner._meta.db_table}"."{column}"' for owner, column in pairs]


def _selects(queries, column: str) -> bool:
    """Whether a query reads ``column`` whole (a SUBSTR of it is a preview, allowed)."""
    pattern = re.compile(r"(?<!SUBSTR\()(?<!SUBSTRING\()" + re.escape(column))
    return any(pattern.search(q["sql"]) for q in queries)


@pytest.mark.parametrize("model", [m for m in MODELS if m not in SINGLE_ROW], ids=lambda m: m._meta.label)
def test_changelist_queries_are_constant_in_rows_and_skip_heavy_columns(staff, model):
    page = url(model, "changelist")
    BUILD[model]()
    staff.get(page)  # warm: sessions, content types, permissions
    with CaptureQueriesContext(connection) as one:
        assert staff.get(page).status_code == 200
    for _ in range(6):
        BUILD[model]()
    with CaptureQueriesContext(connection) as seven:
        response = staff.get(page)
    assert response.context["cl"].result_count >= 7
    assert len(seven) == len(one), "\n".join(q["sql"] for q in seven)
    model_admin = admin.site._registry[model]
    if isinstance(model_admin, BaseAdmin):
        for column in _heavy_columns(model_admin):
            assert not _selects(seven, column), f"the changelist reads {column}"
