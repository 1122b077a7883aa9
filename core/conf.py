"""Typed, range-checked per-app tunables.

Each app declares its tunables once, in ``<app>/conf.py``::

    class RetrievalSettings(AppSettings):
        SCAN_MIN_SUPPORT = Tunable(3, minimum=1, doc="marks a chunk needs before the scan proposes a weight")

    retrieval_settings = RetrievalSettings()

and reads them as ``retrieval_settings.SCAN_MIN_SUPPORT``. A value comes from Django settings when
set there, else from the environment variable of the same name, else the declared default (so the
default is written once, here, and not again in ``config/settings``). It is read on every access,
so ``override_settings`` works in tests. A value of the wrong type or outside its
range is an error of Django's system checks (``manage.py check``, ``runserver``, ``migrate``, the
test run) and a ``ImproperlyConfigured`` where it is read: a bad deployment fails at start, not at
the first request that happens to read it.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar, Generic, TypeVar, overload

from django.conf import settings
from django.core import checks
from django.core.exceptions import ImproperlyConfigured

T = TypeVar("T", int, float, bool, str)
_BOOLEANS = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False}


class Tunable(Generic[T]):
    """One setting: its default (which fixes its type), its allowed range and what it is for."""

    def __init__(self, default: T, *, minimum: T | None = None, maximum: T | None = None, doc: str = "") -> None:
        self.default: T = default
        self.minimum: T | None = minimum
        self.maximum: T | None = maximum
        self.doc = doc
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type) -> Tunable[T]: ...
    @overload
    def __get__(self, instance: object, owner: type) -> T: ...
    def __get__(self, instance: object | None, owner: type) -> Tunable[T] | T:
        if instance is None:
            return self
        value = self.raw()
        problem = self.problem(value)
        if problem:
            raise ImproperlyConfigured(problem)
        return float(value) if isinstance(self.default, float) else value  # type: ignore[return-value]

    def raw(self) -> Any:
        """The configured value before checking: Django settings, else the environment, else the default."""
        if hasattr(settings, self.name):
            return getattr(settings, self.name)
        text = os.environ.get(self.name)
        if text is None:
            return self.default
        kind = type(self.default)
        try:
            if kind is bool:
                return _BOOLEANS[text.strip().lower()]
            return kind(text)
        except (KeyError, ValueError):
            return text  # reported by problem() as the wrong type

    def problem(self, value: Any) -> str | None:
        """Why ``value`` is not acceptable for this setting, or None."""
        kind = type(self.default)
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if kind is str and not isinstance(value, str):
            return f"{self.name} must be str, not {type(value).__name__} ({value!r})."
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            return f"{self.name} must be {kind.__name__}, not {type(value).__name__} ({value!r})."
        if self.minimum is not None and value < self.minimum:
            return f"{self.name} is {value!r}; it must be at least {self.minimum!r}."
        if self.maximum is not None and value > self.maximum:
            return f"{self.name} is {value!r}; it must be at most {self.maximum!r}."
        return None


class AppSettings:
    """Base of an app's settings class; every subclass is checked at start."""

    registry: ClassVar[list[type[AppSettings]]] = []

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        AppSettings.registry.append(cls)

    @classmethod
    def tunables(cls) -> list[Tunable]:
        return [value for value in vars(cls).values() if isinstance(value, Tunable)]


@checks.register(checks.Tags.compatibility)
def check_tunables(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Every declared tunable has a value of its type within its range."""
    errors: list[checks.CheckMessage] = []
    for cls in AppSettings.registry:
        for tunable in cls.tunables():
            problem = tunable.problem(tunable.raw())
            if problem:
                errors.append(checks.Error(problem, hint=tunable.doc or None, obj=cls.__name__, id="core.E001"))
    return errors
