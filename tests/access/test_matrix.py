"""The access matrix expanded: every API operation of tests/access/matrix.py, called by every caller.

Each case checks the declared status (and, for a list, whether the owner's item is in it); a
refused call answers the one error shape and leaves the database exactly as it was. The route
table is checked against the URL resolver, so a new endpoint without declared access rules
fails here.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from django.apps import apps
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.test import APIClient

from tests.access.conftest import CALLERS, AccessWorld
from tests.access.matrix import BLIND, OPERATIONS, SEES, Op

API = "/api/v1/"
PDB = "/api/pdb/v1/reggie/"
OUR_APPS = ("accounts", "feedback", "learning", "retrieval", "intelligence", "promotions")
# Written by authentication itself on every call (when a key was last used), refused or not.
BOOKKEEPING = {"accounts.ApiKey": {"last_used_at"}}
HTTP_METHODS = ("get", "post", "put", "patch", "delete")
# GETs that write (a GET must be safe): none. The context preview writes nothing; POST records.
# Issue 9 (6) makes it write nothing; then this set is empty.
GETS_THAT_WRITE: set[str] = set()


def fill(value, ids: dict[str, str]):
    """A body or path with each ``{name}`` replaced by the world's id of that name."""
    if isinstance(value, str):
        return value.format(**ids)
    if isinstance(value, dict):
        return {k: fill(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, ids) for v in value]
    return value


def database_state() -> dict[str, list[tuple]]:
    """Every row of the five apps' tables, comparable before and after a call."""
    state = {}
    for label in OUR_APPS:
        for model in apps.get_app_config(label).get_models():
            name = f"{model._meta.app_label}.{model.__name__}"
            columns = [f.attname for f in model._meta.concrete_fields if f.attname not in BOOKKEEPING.get(name, ())]
            rows = model._base_manager.order_by("pk").values_list(*columns)
            state[name] = [tuple(v.tobytes() if isinstance(v, np.ndarray) else v for v in row) for row in rows]
    return state


def call(client: APIClient, op: Op, ids: dict[str, str]):
    path = API + fill(op.path, ids)
    body = fill(op.body, ids)
    if op.method == "GET":
        return client.get(path, body)
    return getattr(client, op.method.lower())(path, body, format="json")


CASES = [pytest.param(op, caller, id=f"{op.name} as {caller}") for op in OPERATIONS for caller in CALLERS]


@pytest.mark.parametrize(("op", "caller"), CASES)
def test_access(access_world: AccessWorld, op: Op, caller: str):
    expected = op.expect[caller]
    before = database_state()
    response = call(access_world.client(caller), op, access_world.ids)
    status = 200 if expected in (SEES, BLIND) else expected
    assert response.status_code == status, (op.name, caller, response.content[:500])
    if expected in (SEES, BLIND):
        assert op.sees is not None, f"{op.name}: SEES/BLIND needs sees="
        body = response.json()
        items = body[op.sees.key] if op.sees.key else body
        found = {str(item[op.sees.field]) for item in items}
        assert (access_world.ids[op.sees.item] in found) == (expected == SEES), (op.name, caller, found)
    if response.status_code == 401:  # no credentials: a challenge naming the scheme, never a bare 403
        assert response["WWW-Authenticate"] == 'Bearer realm="api"'
    if response.status_code >= 400:
        assert "error" in response.json(), response.content
        assert database_state() == before, f"{op.name} refused to {caller} but wrote"
    elif op.method == "GET" and op.name not in GETS_THAT_WRITE:
        assert database_state() == before, f"{op.name} wrote for {caller}"


def test_the_state_check_sees_inserts_and_updates(access_world: AccessWorld):
    """The guard above can fail: a write and an update both change the compared state."""
    owner = access_world.client("owner")
    before = database_state()
    assert (
        owner.post(
            API + "preferences", {"category": "tone", "description": "Write formally"}, format="json"
        ).status_code
        == 201
    )
    inserted = database_state()
    assert inserted != before
    path = API + fill("preferences/{preference}/toggle", access_world.ids)
    assert owner.patch(path, {"active": False}, format="json").status_code == 200
    assert database_state() != inserted


def test_the_matrix_size():
    """The number of (operation x caller) cases; a shrinking table is a lost rule."""
    assert len(CASES) == len(OPERATIONS) * len(CALLERS) >= 300


def _routes(prefix: str) -> set[str]:
    """``METHOD path`` of every API view under ``prefix``, each path parameter written ``{}``."""
    routes = set()

    def walk(patterns, route: str) -> None:
        for pattern in patterns:
            here = route + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, here)
            elif isinstance(pattern, URLPattern) and ("/" + here).startswith(prefix):
                view = pattern.callback.view_class  # type: ignore[attr-defined]
                path = re.sub(r"<[^>]+>", "{}", ("/" + here)[len(prefix) :])
                routes.update(f"{m.upper()} {path}" for m in HTTP_METHODS if hasattr(view, m))

    walk(get_resolver().url_patterns, "")
    return routes


def _declared() -> set[str]:
    return {f"{op.method} {re.sub(r'{[^}]+}', '{}', op.path)}" for op in OPERATIONS}


def test_every_route_has_rows():
    """A new endpoint needs its access rules declared in tests/access/matrix.py."""
    assert _routes(API) - _declared() == set()


def test_every_row_is_a_route():
    assert _declared() - _routes(API) == set()


def test_the_pdb_mount_mirrors_api_v1():
    """/api/pdb/v1/reggie/ serves the learning routes of /api/v1/ (same views, same rules)."""
    mirrored = _routes(PDB)
    assert len(mirrored) >= 10
    assert mirrored - _routes(API) == set()


@pytest.mark.parametrize("path", ["preferences", "memories", "workflows", "taste-patterns", "context"])
def test_the_pdb_mount_refuses_anonymous_and_serves_the_owner(access_world: AccessWorld, path):
    assert APIClient().get(PDB + path).status_code == 401
    assert access_world.client("owner").get(PDB + path).status_code == 200


@pytest.mark.parametrize("path", ["/healthz", "/api/schema/", "/api/docs/", "/"])
def test_public_pages(db, path):
    assert APIClient().get(path).status_code == 200
