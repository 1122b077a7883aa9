from django.apps import AppConfig
from django.utils.module_loading import autodiscover_modules

from core import conf  # noqa: F401  (registers the tunables' system check)


class CoreConfig(AppConfig):
    name = "core"
    verbose_name = "Core"

    def ready(self) -> None:
        # Each app's typed tunables (``<app>/conf.py``) register themselves for the system check.
        autodiscover_modules("conf")
