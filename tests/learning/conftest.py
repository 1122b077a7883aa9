"""Learning's shared fixtures and helpers: the local analyzer loaded once, a message observed and
analysed as the worker would, and the calls the taste and context tests make through the API."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from learning.analyzer.local import LocalAnalyzer, get_local_analyzer
from learning.models import TastePattern
from learning.services import messages, taste
from tests.learning.fake_openai import FakeOpenAI

RUNS, DECISIONS, CONTEXT = "/api/v1/commands/runs", "/api/v1/commands/decisions", "/api/v1/context"
# Long enough that dropping the short last section is no length direction: the section is the only one.
REPORT = (
    "## Summary\nThe launch is on track for the second week of March. "
    + "The team reviewed the quarterly numbers, agreed the budget and confirmed the suppliers. " * 4
    + "\n\n## Risks\nSupplier delays could push the date by a week.\n\n"
    "## Next Steps\nBook the venue."
)
WITHOUT_NEXT_STEPS = REPORT.split("\n\n## Next Steps")[0]


@pytest.fixture(scope="session")
def analyzer() -> LocalAnalyzer:
    return get_local_analyzer()


@pytest.fixture
def fake():
    """The local server that speaks the OpenAI API (tests/learning/fake_openai.py)."""
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture
def configured(fake, settings, analyzer):
    """The OpenAI-compatible analyzer pointed at ``fake``: short timeout, no retries."""
    settings.OPENAI_API_KEY = "sk-test"
    settings.OPENAI_BASE_URL = fake.base_url
    settings.ANALYZER_TIMEOUT_SECONDS = 2.0
    settings.ANALYZER_MAX_RETRIES = 0
    return fake


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


def command_run(
    client: APIClient, *, output: str = REPORT, plugin: str = "email", command: str = "draft", **extra: Any
) -> dict:
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


def assert_error(response, status: int, field: str) -> dict:
    assert response.status_code == status, response.content
    error = response.json()["error"]
    assert set(error) == {"code", "message", "fields", "request_id"}
    assert error["request_id"] == response["X-Request-ID"]
    assert field in error["fields"], error
    return error


def learn_section_pattern(world, role="owner", *, plugin="email", command="draft") -> TastePattern:
    """Three edits that drop the Next Steps section, through the services: one candidate pattern."""
    user, actor = getattr(world, role), world.actor(role)
    for _ in range(3):
        ran = taste.command_run_record(actor=actor, user=user, plugin=plugin, command=command, output=REPORT)
        taste.command_decision_record(
            actor=actor, user=user, run_id=ran.run_id, decision="edited", edited_output=WITHOUT_NEXT_STEPS
        )
    return TastePattern.objects.get(user=user, plugin=plugin, command=command, direction="removed:next steps")
