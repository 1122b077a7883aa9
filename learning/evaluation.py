"""Scoring an analyzer on labelled messages and on PrefEval (used by ``manage.py analyzer_eval``).

The local analyzer is fitted on the labelled file itself, so it is scored only on messages it was
not fitted on: cross-validation with folds grouped by paraphrase ``family`` (a paraphrase never
sits on both sides) on 80 % of the file, and a fixed, stratified 20 % held out from everything
(never used to choose anything) scored by a model fitted on the other 80 %.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from learning.analyzer.base import MESSAGE_TYPES, Analysis, AnalyzerInput
from learning.analyzer.tuned import has_transformer

EVAL_TYPES = MESSAGE_TYPES
HELD_OUT_SEED = 10  # fixes the 20 % held out; never changed to improve a score
CV_SEED = 0
_WORD = re.compile(r"[a-z0-9][a-z0-9'+./:-]*[a-z0-9+]|[a-z0-9]")
_STOP = frozenset(
    "a an the and or but if of to in on for with at by from is are was were be been am it its this that these those "
    "i i'm i've i'd me my you your we our they them their he she his her not no do does did so as just very really "
    "too also can could would should will have has had any all some more most than then there here what which who "
    "when where how about into over only own same such up down out off again once because while during before after "
    "prefer preference like love enjoy always usually generally typically tend try want need much many lot lots "
    "get".split()
)


def load_labelled(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def analyzer_input(row: dict[str, Any]) -> AnalyzerInput:
    """A labelled row as the service would pass it: the message and the turns before it."""
    recent = [{"role": m["role"], "content": m["content"]} for m in row.get("recent") or []]
    if row.get("previous_assistant"):
        recent.append({"role": "assistant", "content": row["previous_assistant"]})
    return AnalyzerInput(current_message=row["text"], recent_context=recent[-4:])


def predicted_type(analysis: Analysis) -> str:
    """The single label an analysis amounts to: a memory counts as its own type."""
    if analysis.detected == "none" and analysis.memory is not None:
        return "memory"
    return "none" if analysis.detected == "workflow" else analysis.detected


def stored_text(analysis: Analysis) -> str | None:
    """What would be stored as a preference or memory (None: nothing is)."""
    if analysis.steering:
        return None
    if analysis.preference is not None and analysis.detected in ("preference", "correction"):
        return analysis.preference.description
    if analysis.memory is not None:
        return analysis.memory.content
    return None


def stem(word: str) -> str:
    word = word.lower().strip("'.")
    for suffix in ("ations", "ation", "ings", "ing", "ies", "ied", "es", "ed", "s", "ly"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def keeps_key(text: str, key: list[str]) -> bool:
    """Every key word (or its stem) occurs in the stored text."""
    lowered = text.lower()
    stems = {stem(w) for w in _WORD.findall(lowered)}
    for phrase in key:
        words = _WORD.findall(phrase.lower())
        if phrase.lower() in lowered:
            continue
        if not words or not all(stem(w) in stems or any(s.startswith(stem(w)) for s in stems) for w in words):
            return False
    return True


@dataclass
class Scores:
    count: int = 0
    per_type: dict[str, dict[str, float]] = field(default_factory=dict)
    macro_f1: float = 0.0
    category_accuracy: float = 0.0
    axis_accuracy: float = 0.0
    learned: int = 0
    faithful: int = 0
    mislearned: int = 0
    steering_caught: tuple[int, int] = (0, 0)
    confusion: dict[str, Counter] = field(default_factory=dict)
    mistakes: list[tuple[str, str, str]] = field(default_factory=list)
    unfaithful: list[tuple[str, str]] = field(default_factory=list)

    @property
    def faithfulness(self) -> float:
        return self.faithful / self.learned if self.learned else 0.0

    @property
    def mislearn_rate(self) -> float:
        return self.mislearned / self.learned if self.learned else 0.0


def score_analyses(rows: list[dict[str, Any]], analyses: list[Analysis]) -> Scores:
    """Type F1, category/axis accuracy, faithfulness and mislearns of analyses of labelled rows."""
    scores = Scores(count=len(rows), confusion={t: Counter() for t in EVAL_TYPES})
    gold = [row["type"] for row in rows]
    predicted = [predicted_type(a) for a in analyses]
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

    recognised = [
        (r, a.preference) for r, a in zip(rows, analyses, strict=True) if r["type"] == "preference" and a.preference
    ]
    if recognised:
        scores.category_accuracy = sum(p.category == r["category"] for r, p in recognised) / len(recognised)
        scores.axis_accuracy = sum((p.axis or None) == r.get("axis") for r, p in recognised) / len(recognised)
    for row, analysis in zip(rows, analyses, strict=True):
        text = stored_text(analysis)
        if text is None:
            continue
        scores.learned += 1
        same_meaning = row["type"] in ("preference", "memory") and keeps_key(text, row.get("key") or [])
        scores.faithful += same_meaning
        scores.mislearned += not same_meaning
        if not same_meaning:
            scores.unfaithful.append((row["type"], f"{row['text']!r} -> {text!r}"))
    steering = [a.steering for r, a in zip(rows, analyses, strict=True) if r.get("steering")]
    scores.steering_caught = (sum(steering), len(steering))
    return scores


def held_out_split(rows: list[dict[str, Any]]) -> tuple[list[int], list[int]]:
    """The fixed split: 80 % to fit and cross-validate on, 20 % held out (stratified, grouped by family).

    Only the first batch of lines (no ``source``) is split; lines added later (``source`` set) always go
    to the fitting side, so adding lines never moves a line into or out of the held-out 20 %."""
    from sklearn.model_selection import StratifiedGroupKFold  # noqa: PLC0415  heavy: scikit-learn

    first = [i for i, row in enumerate(rows) if not row.get("source")]
    added = [i for i, row in enumerate(rows) if row.get("source")]
    groups = [rows[i].get("family") or rows[i]["id"] for i in first]
    labels = [rows[i]["type"] for i in first]
    split = StratifiedGroupKFold(n_splits=5, shuffle=True, random_state=HELD_OUT_SEED)
    fit, held = next(split.split(first, labels, groups))
    return sorted([first[i] for i in fit] + added), [first[i] for i in held]


class CachedEmbedder:
    """Embeds each distinct text once across folds (evaluation only)."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder
        self.dimensions = getattr(embedder, "dimensions", 384)
        self.cache: dict[str, np.ndarray] = {}
        self.layers: dict[str, np.ndarray] = {}
        if callable(getattr(embedder, "embed_with_layer", None)):  # as capable as what it wraps
            self.embed_with_layer = self._embed_with_layer
        if has_transformer(embedder):  # the tuned type model reads the transformer itself
            self.model = embedder.model
            self.precision = embedder.precision

    def _embed_with_layer(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        missing = [t for t in dict.fromkeys(texts) if t not in self.layers]
        if missing:
            vectors, layers = self.embedder.embed_with_layer(missing)
            self.cache.update(zip(missing, vectors, strict=True))
            self.layers.update(zip(missing, layers, strict=True))
        if not texts:
            empty = np.zeros((0, self.dimensions), dtype=np.float32)
            return empty, empty.copy()
        return np.vstack([self.cache[t] for t in texts]), np.vstack([self.layers[t] for t in texts])

    def embed(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing:
            self.cache.update(zip(missing, self.embedder.embed(missing), strict=True))
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        return np.vstack([self.cache[t] for t in texts])


def local_grouped_cv(embedder: Any, rows: list[dict[str, Any]], folds: int = 5) -> list[Analysis]:
    """Analyses of every row by a local analyzer fitted on the other folds (grouped by family)."""
    from sklearn.model_selection import StratifiedGroupKFold  # noqa: PLC0415  heavy: scikit-learn

    from learning.analyzer.local import LocalAnalyzer  # noqa: PLC0415  heavy: scikit-learn
    from learning.analyzer.model import fit_models  # noqa: PLC0415  heavy: scikit-learn

    groups = [row.get("family") or row["id"] for row in rows]
    split = StratifiedGroupKFold(n_splits=folds, shuffle=True, random_state=CV_SEED)
    analyses: list[Analysis | None] = [None] * len(rows)
    for fit, test in split.split(rows, [row["type"] for row in rows], groups):
        analyzer = LocalAnalyzer(models=fit_models(embedder, [rows[i] for i in fit]), embedder=embedder)
        for i, analysis in zip(test, analyzer.analyze_many([analyzer_input(rows[i]) for i in test]), strict=True):
            analyses[i] = analysis
    return [a for a in analyses if a is not None]


def local_grouped_cv_grid(
    embedder: Any, rows: list[dict[str, Any]], grid: list[dict[str, float]], *, seed: int = CV_SEED, folds: int = 5
) -> list[list[Analysis]]:
    """``local_grouped_cv`` with the CV split of ``seed``, once for each setting of the local analyzer's
    thresholds in ``grid`` (keyword arguments of LocalAnalyzer: ``store_min``, ``standing_min``,
    ``tuned_weight``): each fold is fitted once and its test messages analysed under every setting."""
    from sklearn.model_selection import StratifiedGroupKFold  # noqa: PLC0415  heavy: scikit-learn

    from learning.analyzer.local import LocalAnalyzer  # noqa: PLC0415  heavy: scikit-learn
    from learning.analyzer.model import fit_models  # noqa: PLC0415  heavy: scikit-learn

    groups = [row.get("family") or row["id"] for row in rows]
    split = StratifiedGroupKFold(n_splits=folds, shuffle=True, random_state=seed)
    analyses: list[list[Analysis | None]] = [[None] * len(rows) for _ in grid]
    for fit, test in split.split(rows, [row["type"] for row in rows], groups):
        models = fit_models(embedder, [rows[i] for i in fit])
        inputs = [analyzer_input(rows[i]) for i in test]
        for found, setting in zip(analyses, grid, strict=True):
            analyzer = LocalAnalyzer(models=models, embedder=embedder, **setting)
            for i, analysis in zip(test, analyzer.analyze_many(inputs), strict=True):
                found[i] = analysis
    return [[a for a in found if a is not None] for found in analyses]


def local_fitted_on(embedder: Any, rows: list[dict[str, Any]]):
    """A local analyzer fitted on these rows only."""
    from learning.analyzer.local import LocalAnalyzer  # noqa: PLC0415  heavy: scikit-learn
    from learning.analyzer.model import fit_models  # noqa: PLC0415  heavy: scikit-learn

    return LocalAnalyzer(models=fit_models(embedder, rows), embedder=embedder)


def analyze_rows(analyzer: Any, rows: list[dict[str, Any]]) -> list[Analysis]:
    return analyzer.analyze_many([analyzer_input(row) for row in rows])


def throughput(analyzer: Any, rows: list[dict[str, Any]]) -> float:
    """Messages per second, batched, with their conversation context (embedding included)."""
    items = [analyzer_input(row) for row in rows]
    started = time.perf_counter()
    analyzer.analyze_many(items)
    elapsed = time.perf_counter() - started
    return len(items) / elapsed if elapsed else 0.0


def salient_key(statement: str) -> list[str]:
    """PrefEval's key: the statement's content words (no stop words, no habit/liking verbs)."""
    return [w for w in dict.fromkeys(_WORD.findall(statement.lower())) if w not in _STOP and len(w) > 2]


@dataclass
class PrefEvalScores:
    statements: int = 0
    statements_faithful: int = 0
    statements_learned: int = 0
    statements_flagged: int = 0
    questions: int = 0
    questions_learned: int = 0
    by_file: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)
    missed: list[str] = field(default_factory=list)
    false: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def recall(self) -> float:
        return self.statements_faithful / self.statements if self.statements else 0.0

    @property
    def false_rate(self) -> float:
        return self.questions_learned / self.questions if self.questions else 0.0


def score_prefeval(analyzer: Any, directory: Path) -> PrefEvalScores:
    """Each ``preference`` should be learned faithfully (as a memory or preference), each ``question`` not at all."""
    scores = PrefEvalScores()
    started = time.perf_counter()
    for path in sorted(directory.glob("*.json")):
        records = json.loads(path.read_text())
        statements = [r["preference"] for r in records]
        questions = [r["question"] for r in records]
        s_analyses = analyzer.analyze_many([AnalyzerInput(current_message=t) for t in statements])
        q_analyses = analyzer.analyze_many([AnalyzerInput(current_message=t) for t in questions])
        faithful = []
        for statement, analysis in zip(statements, s_analyses, strict=True):
            text = stored_text(analysis)
            scores.statements_learned += text is not None
            faithful.append(text is not None and keeps_key(text, salient_key(statement)))
        q_learned = [a.learns_anything for a in q_analyses]
        scores.statements_flagged += sum(a.steering for a in s_analyses)
        scores.statements += len(statements)
        scores.statements_faithful += sum(faithful)
        scores.questions += len(questions)
        scores.questions_learned += sum(q_learned)
        scores.by_file[path.stem] = (len(statements), sum(faithful), len(questions), sum(q_learned))
        scores.missed += [t for t, ok in zip(statements, faithful, strict=True) if not ok]
        scores.false += [t for t, bad in zip(questions, q_learned, strict=True) if bad]
    scores.seconds = time.perf_counter() - started
    return scores


@dataclass
class SteeringScores:
    """How the steering check does on texts its model was not fitted on."""

    attempts: int = 0
    attempts_flagged: int = 0
    preferences: int = 0
    preferences_flagged: int = 0
    ordinary: int = 0
    ordinary_flagged: int = 0
    by_technique: dict[str, tuple[int, int]] = field(default_factory=dict)
    missed: list[str] = field(default_factory=list)
    false: list[str] = field(default_factory=list)

    @property
    def recall(self) -> float:
        return self.attempts_flagged / self.attempts if self.attempts else 0.0

    @property
    def preference_false_rate(self) -> float:
        return self.preferences_flagged / self.preferences if self.preferences else 0.0

    @property
    def ordinary_false_rate(self) -> float:
        return self.ordinary_flagged / self.ordinary if self.ordinary else 0.0


def steering_flags(model: Any, texts: list[str], vectors: np.ndarray) -> list[bool]:
    """Flagged as learning.safety.steering_reasons would: the model's probability reaches the threshold."""
    from learning.safety import STEERING_THRESHOLD  # noqa: PLC0415  heavy: scikit-learn

    return [bool(p >= STEERING_THRESHOLD) for p in model.probabilities(texts, vectors)]


def steering_cv(
    embedder: Any,
    rows: list[dict[str, Any]],
    attempts: list[dict[str, Any]],
    folds: int = 5,
    negatives: list[dict[str, Any]] | None = None,
) -> SteeringScores:
    """Cross-validation of the steering check over the labelled messages, the written attempts and
    hard negatives (default: learning.safety's), folds grouped by technique (learning.steering_eval):
    each attempt is judged by a model that saw no attempt of its technique."""
    from learning.safety import STEERING_THRESHOLD, steering_negatives  # noqa: PLC0415  heavy: scikit-learn
    from learning.steering_eval import out_of_fold, scores_at, steering_pool  # noqa: PLC0415  heavy: scikit-learn

    pool = steering_pool(rows, attempts, steering_negatives() if negatives is None else negatives)
    return scores_at(pool, out_of_fold(embedder, pool, folds=folds), STEERING_THRESHOLD)
