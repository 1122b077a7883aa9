"""manage.py runserver_warm: the development server loads the models before it listens, and serves
static files as runserver does."""

from __future__ import annotations

import io

from django.contrib.staticfiles.handlers import StaticFilesHandler
from django.core.management.commands.runserver import Command as CoreRunserver

from learning.management.commands import runserver_warm


def test_the_models_are_loaded_before_the_server_listens(monkeypatch):
    calls = []
    monkeypatch.setattr(runserver_warm, "models_warm", lambda: calls.append("models") or {"embedding model": 1.0})
    monkeypatch.setattr(CoreRunserver, "inner_run", lambda self, *args, **options: calls.append("listen"))
    out = io.StringIO()
    runserver_warm.Command(stdout=out).inner_run(use_threading=True)
    assert calls == ["models", "listen"]
    assert "embedding model 1.0 s" in out.getvalue()


def test_static_files_are_served_in_debug(settings):
    settings.DEBUG = True
    handler = runserver_warm.Command().get_handler(use_static_handler=True, insecure_serving=False)
    assert isinstance(handler, StaticFilesHandler)
