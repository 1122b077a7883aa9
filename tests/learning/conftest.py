"""Learning's shared fixtures and helpers: the local analyzer loaded once, a message observed and
analysed as the worker would, and the calls the taste and context tests make through the API."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from learning.analyzer.local import LocalAnalyzer, get_local_analyzer
from learning.services import messages

RUNS, DECISIONS, CONTEXT = "/api/v1/commands/runs", "/api/v1/commands/decisions", "/api/v1/context"


@pytest.fixture(scope="session")
def analyzer() -> LocalAnalyzer:
    return get_local_analyzer()


@pytest.fixture
def observe(analyzer, django_capture_on_commit_callbacks):
    """Store a user message and run its analysis now, as the worker would after commit
    (the analysis's own after-commit work, such as dropping cached context, runs too)."""

    def run(user, content, session_id="s1", project=None):
        with django_capture_on_commit_callbacks(execute=False):  # the queued task is run below instead
            message, _ = messages.message_observe(user=user, session_id=session_id, content=content, project=project)
        with django_capture_on_commit_callbacks(execute=True):
            analysis = messages.message_analyze(message_id=str(message.pk))
        return message, analysis

    return run


def command_run(client: APIClient, *, output: str, plugin: str = "email", command: str = "draft", **extra: Any) -> dict:
    """Record a run of plugin/command (201 expected); the response body."""
    body = {"plugin": plugin, "command": command, "output": output, **extra}
    response = client.post(RUNS, body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def command_decide(client: APIClient, run_id: str, decision: str, **extra: Any) -> dict:
    """Record the decision on a run (201 expected); the response body."""
    response = client.post(DECISIONS, {"run_id": run_id, "decision": decision, **extra}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def context_of(client: APIClient, **params: Any) -> dict:
    """The context the API would inject for these query parameters (200 expected)."""
    response = client.get(CONTEXT, params)
    assert response.status_code == 200, response.content
    return response.json()
