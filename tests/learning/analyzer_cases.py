"""What the analyzer tests share: the texts the local analyzer is fitted on (a test case must not be
one of them) and a call with the conversation around the message."""

from __future__ import annotations

from learning.analyzer.base import AnalyzerInput
from learning.analyzer.model import load_rows

TRAINING_TEXTS = {row["text"].lower() for row in load_rows()}


def analyze(analyzer, text, previous=None, earlier=(), **kw):
    recent = [{"role": "user", "content": t} for t in earlier]
    if previous:
        recent.append({"role": "assistant", "content": previous})
    return analyzer.analyze(AnalyzerInput(current_message=text, recent_context=recent, **kw))
