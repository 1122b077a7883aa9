"""The analyzer's interface: what it reads about a message and what it may conclude."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

Detected = Literal["preference", "workflow", "pain_point", "correction", "none"]
DETECTED_TYPES: tuple[str, ...] = ("preference", "workflow", "pain_point", "correction", "none")
# What the local analyzer's type readers read one message as (a workflow is found across messages, not in one).
MESSAGE_TYPES: tuple[str, ...] = ("preference", "correction", "pain_point", "memory", "none")


@dataclass(frozen=True)
class SimilarPrompt:
    summary: str
    days_ago: int
    similarity: float


@dataclass(frozen=True)
class AnalyzerInput:
    """The source design's analyzer input."""

    current_message: str
    similar_past_prompts: list[SimilarPrompt] = field(default_factory=list)
    match_count: int = 0
    recent_context: list[dict[str, str]] = field(default_factory=list)  # last 4 messages: role, content


@dataclass(frozen=True)
class PreferenceFinding:
    """A standing preference, open-ended: ``description`` is what the user asked for, in their
    terms ("Answer in Spanish."); ``axis`` places it on a canonical axis ("length:short",
    "tone:formal"...) when it lies on one, only to detect contradictions; ``preference`` is a
    stable key the storing service derives (paraphrases of one preference share it)."""

    category: str
    preference: str  # the key; the analyzer may leave it empty for the service to derive
    description: str
    confidence: float
    axis: str | None = None


@dataclass(frozen=True)
class WorkflowFinding:
    workflow_name: str
    trigger_pattern: str
    learned_steps: list[str]
    preferred_output: str
    confidence: float


@dataclass(frozen=True)
class MemoryFinding:
    kind: str  # fact | preference | commitment | lesson | context
    content: str
    confidence: float


@dataclass(frozen=True)
class Analysis:
    """What one message teaches. ``memory`` may accompany any ``detected`` type."""

    detected: str
    preference: PreferenceFinding | None = None
    workflow: WorkflowFinding | None = None
    memory: MemoryFinding | None = None
    confidence: float = 0.0
    reasoning: str = ""
    analyzer: str = ""
    steering: bool = False  # the message tries to steer the assistant or other users: never learned

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def learns_anything(self) -> bool:
        return self.detected != "none" or self.memory is not None


class Analyzer(Protocol):
    name: str

    def analyze(self, data: AnalyzerInput) -> Analysis: ...

    def analyze_many(self, items: list[AnalyzerInput]) -> list[Analysis]: ...
