"""Typed per-app tunables: a value of the wrong type or out of range fails the system check."""

import pytest
from django.core.exceptions import ImproperlyConfigured

from core.conf import AppSettings, Tunable, check_tunables


class _Example(AppSettings):
    CORE_TEST_SHARE = Tunable(0.5, minimum=0.0, maximum=1.0, doc="a share")
    CORE_TEST_COUNT = Tunable(3, minimum=1)


example = _Example()


def test_defaults_are_read_when_unset():
    assert example.CORE_TEST_SHARE == 0.5
    assert example.CORE_TEST_COUNT == 3


def test_settings_override_the_default(settings):
    settings.CORE_TEST_SHARE = 1
    assert example.CORE_TEST_SHARE == 1


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("CORE_TEST_SHARE", 1.5, "at most 1.0"),
        ("CORE_TEST_SHARE", "0.3", "must be float"),
        ("CORE_TEST_COUNT", 0, "at least 1"),
        ("CORE_TEST_COUNT", True, "must be int"),
    ],
)
def test_a_bad_value_fails_the_check_and_the_read(settings, name, value, says):
    setattr(settings, name, value)
    errors = [e for e in check_tunables() if e.obj == "_Example"]
    assert len(errors) == 1
    assert says in errors[0].msg
    with pytest.raises(ImproperlyConfigured, match=says):
        getattr(example, name)


def test_the_environment_is_read_when_settings_do_not_say(monkeypatch):
    monkeypatch.setenv("CORE_TEST_COUNT", "7")
    assert example.CORE_TEST_COUNT == 7
    monkeypatch.setenv("CORE_TEST_COUNT", "seven")
    with pytest.raises(ImproperlyConfigured, match="must be int"):
        _ = example.CORE_TEST_COUNT
