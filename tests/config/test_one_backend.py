"""scripts/test runs the tests marked one_backend in its SQLite run only: the PostgreSQL run sets
TEST_SKIP_ONE_BACKEND=1 and tests/conftest.py reports them as deselected."""

from __future__ import annotations

from types import SimpleNamespace

from tests.conftest import pytest_collection_modifyitems


class _Item:
    def __init__(self, name: str, *markers: str) -> None:
        self.name, self.markers = name, markers

    def get_closest_marker(self, name: str):
        return SimpleNamespace(name=name) if name in self.markers else None


def _collected(monkeypatch, value: str | None) -> tuple[list[str], list[str]]:
    if value is None:
        monkeypatch.delenv("TEST_SKIP_ONE_BACKEND", raising=False)
    else:
        monkeypatch.setenv("TEST_SKIP_ONE_BACKEND", value)
    deselected: list[_Item] = []
    config = SimpleNamespace(hook=SimpleNamespace(pytest_deselected=lambda items: deselected.extend(items)))
    items = [_Item("a"), _Item("slow", "one_backend"), _Item("b", "django_db"), _Item("slower", "one_backend")]
    pytest_collection_modifyitems(config, items)
    return [i.name for i in items], [i.name for i in deselected]


def test_the_postgresql_run_leaves_out_the_tests_marked_one_backend_and_says_so(monkeypatch):
    assert _collected(monkeypatch, "1") == (["a", "b"], ["slow", "slower"])


def test_any_other_run_keeps_every_test(monkeypatch):
    for value in (None, "", "0", "true"):
        assert _collected(monkeypatch, value) == (["a", "slow", "b", "slower"], [])
