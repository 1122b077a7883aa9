"""Every API route refuses anonymous callers (only /healthz and the docs are public)."""

from __future__ import annotations

import re
import uuid

import pytest
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.test import APIClient


def api_routes() -> list[tuple[str, str]]:
    """(path, method) for every API view (/api/v1/ and the /api/pdb/ mount), path parameters filled in."""
    routes = []

    def walk(patterns, prefix: str) -> None:
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, route)
            elif isinstance(pattern, URLPattern) and route.startswith(("api/v1/", "api/pdb/")):
                view = pattern.callback.view_class  # type: ignore[attr-defined]
                path = re.sub(r"<uuid:\w+>", str(uuid.uuid4()), "/" + route)
                path = re.sub(r"<int:\w+>", "1", path)
                assert "<" not in path, f"add a converter for {path}"
                for method in ("get", "post", "patch", "put", "delete"):
                    if hasattr(view, method):
                        routes.append((path, method))

    walk(get_resolver().url_patterns, "")
    return routes


ROUTES = api_routes()


def test_the_route_table_is_not_empty():
    assert len(ROUTES) >= 8


@pytest.mark.parametrize(("path", "method"), ROUTES)
def test_anonymous_is_refused(db, path, method):
    response = getattr(APIClient(), method)(path, {}, format="json")
    assert response.status_code in (401, 403), (path, method, response.status_code)
    assert "error" in response.json()


@pytest.mark.parametrize("path", ["/healthz", "/api/schema/", "/api/docs/", "/"])
def test_public_pages(db, path):
    assert APIClient().get(path).status_code == 200
