"""The local analyzer (embedding model + classifiers) is loaded once per test session."""

from __future__ import annotations

import pytest

from learning.analyzer.local import LocalAnalyzer, get_local_analyzer


@pytest.fixture(scope="session")
def analyzer() -> LocalAnalyzer:
    return get_local_analyzer()


@pytest.fixture
def observe(analyzer):
    """Store a user message and run its analysis now (what the worker does after commit)."""
    from learning import services

    def run(user, content, session_id="s1", project=None):
        message, _ = services.message_observe(user=user, session_id=session_id, content=content, project=project)
        return message, services.message_analyze(message_id=str(message.pk))

    return run
