"""The learning app's tunables, typed and range-checked (see ``core.conf``)."""

from __future__ import annotations

from core.conf import AppSettings


class LearningSettings(AppSettings):
    """Declared here once; values come from Django settings or the environment."""


learning_settings = LearningSettings()
