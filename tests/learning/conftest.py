"""The local analyzer (embedding model + classifiers) is loaded once per test session."""

from __future__ import annotations

import pytest

from learning.analyzer.local import LocalAnalyzer, get_local_analyzer
from learning.services import messages


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
