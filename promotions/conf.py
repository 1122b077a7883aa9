"""The promotions app's tunables, typed and range-checked (see ``core.conf``)."""

from __future__ import annotations

from core.conf import AppSettings


class PromotionsSettings(AppSettings):
    """Declared here once; values come from Django settings or the environment."""


promotions_settings = PromotionsSettings()
