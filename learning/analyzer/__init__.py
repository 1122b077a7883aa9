"""The analyzer behind one interface: local by default, OpenAI when configured."""

from __future__ import annotations

from django.conf import settings

from learning.analyzer.base import Analysis, Analyzer, AnalyzerInput


def get_analyzer() -> Analyzer:
    """The analyzer the settings choose: OpenAI when OPENAI_API_KEY is set, else the local one."""
    # scikit-learn and the classifiers load when an analysis runs (in the worker), not with the web app.
    from learning.analyzer.local import get_local_analyzer  # noqa: PLC0415  heavy: scikit-learn

    if settings.OPENAI_API_KEY:
        from learning.analyzer.openai_analyzer import get_openai_analyzer  # noqa: PLC0415  optional: openai

        return get_openai_analyzer()
    return get_local_analyzer()


__all__ = ["Analysis", "Analyzer", "AnalyzerInput", "get_analyzer"]
