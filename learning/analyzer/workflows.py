"""Workflow detection in the local analyzer: a request is a workflow when enough similar past
prompts precede it (moved here unchanged from local.py; owned by the workflow work of issue 10)."""

from __future__ import annotations

from core.text import summarize
from learning.analyzer.base import Analysis, AnalyzerInput, WorkflowFinding

WORKFLOW_MIN_MATCHES = 2  # similar past prompts; with this one, three of a kind


def workflow_analysis(item: AnalyzerInput, text: str, confidence: float, analyzer: str) -> Analysis | None:
    """The workflow this request repeats, or None when it has not recurred enough."""
    if item.match_count >= WORKFLOW_MIN_MATCHES:
        similarity = max((p.similarity for p in item.similar_past_prompts), default=0.0)
        name = summarize(text, words=6)
        return Analysis(
            detected="workflow",
            workflow=WorkflowFinding(
                workflow_name=name,
                trigger_pattern=summarize(text, words=14),
                learned_steps=[f"Recognise requests like: {summarize(text, words=14)}"],
                preferred_output="",
                confidence=round(min(0.95, 0.4 + 0.1 * item.match_count + 0.2 * similarity), 3),
            ),
            confidence=confidence,
            reasoning=f"the same kind of request seen {item.match_count + 1} times",
            analyzer=analyzer,
        )
    return None
