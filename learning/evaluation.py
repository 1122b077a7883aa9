"""Scoring an analyzer on labelled messages and on PrefEval (used by ``manage.py analyzer_eval``)."""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from learning.analyzer.base import Analysis, AnalyzerInput

EVAL_TYPES = ("preference", "correction", "pain_point", "memory", "none")


def predicted_type(analysis: Analysis) -> str:
    """The single label an analysis amounts to: a memory counts as its own type."""
    if analysis.detected == "none" and analysis.memory is not None:
        return "memory"
    return "none" if analysis.detected == "workflow" else analysis.detected


@dataclass
class Scores:
    per_type: dict[str, dict[str, float]] = field(default_factory=dict)
    macro_f1: float = 0.0
    category_accuracy: float = 0.0
    preference_accuracy: float = 0.0
    count: int = 0
    messages_per_second: float = 0.0
    confusion: dict[str, Counter] = field(default_factory=dict)
    mistakes: list[tuple[str, str, str]] = field(default_factory=list)


def load_labelled(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def score_labelled(analyzer, rows: list[dict]) -> Scores:
    started = time.perf_counter()
    analyses = analyzer.analyze_many([AnalyzerInput(current_message=row["text"]) for row in rows])
    elapsed = time.perf_counter() - started
    scores = Scores(count=len(rows), messages_per_second=len(rows) / elapsed if elapsed else 0.0)
    gold = [row["type"] for row in rows]
    predicted = [predicted_type(a) for a in analyses]
    scores.confusion = {t: Counter() for t in EVAL_TYPES}
    for g, p, row in zip(gold, predicted, rows, strict=True):
        scores.confusion[g][p] += 1
        if g != p:
            scores.mistakes.append((g, p, row["text"]))
    f1s = []
    for label in EVAL_TYPES:
        tp = sum(1 for g, p in zip(gold, predicted, strict=True) if g == p == label)
        fp = sum(1 for g, p in zip(gold, predicted, strict=True) if p == label and g != label)
        fn = sum(1 for g, p in zip(gold, predicted, strict=True) if g == label and p != label)
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        scores.per_type[label] = {"precision": precision, "recall": recall, "f1": f1, "support": tp + fn}
        if tp + fn:
            f1s.append(f1)
    scores.macro_f1 = sum(f1s) / len(f1s) if f1s else 0.0

    # Category accuracy: of the labelled preferences the analyzer recognised as preferences,
    # how many got the right category (and the right canonical preference).
    recognised = [
        (row, a) for row, a in zip(rows, analyses, strict=True) if row["type"] == "preference" and a.preference
    ]
    if recognised:
        scores.category_accuracy = sum(a.preference.category == row["category"] for row, a in recognised) / len(
            recognised
        )
        with_slug = [(row, a) for row, a in recognised if row.get("preference")]
        if with_slug:
            scores.preference_accuracy = sum(
                a.preference.preference == row["preference"] for row, a in with_slug
            ) / len(with_slug)
    return scores


@dataclass
class PrefEvalScores:
    statements: int = 0
    statements_learned: int = 0
    questions: int = 0
    questions_learned: int = 0
    by_file: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)
    missed: list[str] = field(default_factory=list)
    false: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def recall(self) -> float:
        return self.statements_learned / self.statements if self.statements else 0.0

    @property
    def false_rate(self) -> float:
        return self.questions_learned / self.questions if self.questions else 0.0


def score_prefeval(analyzer, directory: Path) -> PrefEvalScores:
    """Each ``preference`` line should be learned (as a memory or preference), each ``question`` as nothing."""
    scores = PrefEvalScores()
    started = time.perf_counter()
    for path in sorted(directory.glob("*.json")):
        records = json.loads(path.read_text())
        statements = [r["preference"] for r in records]
        questions = [r["question"] for r in records]
        s_analyses = analyzer.analyze_many([AnalyzerInput(current_message=t) for t in statements])
        q_analyses = analyzer.analyze_many([AnalyzerInput(current_message=t) for t in questions])
        s_learned = [a.learns_anything for a in s_analyses]
        q_learned = [a.learns_anything for a in q_analyses]
        scores.statements += len(statements)
        scores.statements_learned += sum(s_learned)
        scores.questions += len(questions)
        scores.questions_learned += sum(q_learned)
        scores.by_file[path.stem] = (len(statements), sum(s_learned), len(questions), sum(q_learned))
        scores.missed += [t for t, ok in zip(statements, s_learned, strict=True) if not ok]
        scores.false += [t for t, bad in zip(questions, q_learned, strict=True) if bad]
    scores.seconds = time.perf_counter() - started
    return scores
