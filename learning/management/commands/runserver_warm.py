"""manage.py runserver_warm: Django's development server (static files included), which loads the
embedding model and the analyzer before it listens (``learning.warmup``), so the first request that
needs them does not wait for them. ``scripts/demo`` serves with it.

With the autoreloader the loading happens in the serving (child) process, again after each reload of
the code; the fitted analyzer comes from ``learning.analyzer.store``, so that costs seconds."""

from __future__ import annotations

from typing import Any

from django.contrib.staticfiles.management.commands.runserver import Command as RunserverCommand

from learning.warmup import models_warm


class Command(RunserverCommand):
    help = "Start the development server once the embedding model and the analyzer are loaded."

    def inner_run(self, *args: Any, **options: Any) -> None:
        self.stdout.write("Loading the embedding model and the analyzer before listening...")
        timings = models_warm()
        self.stdout.write("Loaded: " + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in timings.items()))
        super().inner_run(*args, **options)
