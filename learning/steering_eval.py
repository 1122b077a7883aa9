"""Measuring the steering check (learning.safety) on lines it was not fitted on.

The pool is the labelled messages, the written steering attempts and the hard negatives. Folds are
grouped so that a held-out fold holds whole groups: an attempt's group is its technique (the
labelled steering lines form one, ``labelled``), an ordinary line's its paraphrase family (a hard
negative is its own). So the out-of-fold probability of an attempt comes from a model that saw no
attempt of its technique: the honest figure for techniques nobody wrote down yet, and the one the
threshold is chosen on. ``leave_one_technique_out`` holds out one technique at a time with every
other line fitted on (the figure per technique).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from learning.evaluation import CV_SEED, SteeringScores

LABELLED_TECHNIQUE = "labelled"


@dataclass(frozen=True)
class PoolRow:
    text: str
    steering: bool
    group: str  # the technique of an attempt; a hard negative's id, a labelled line's family
    source: str  # "labelled", "attempt" or "negative"
    type: str  # the labelled type ("preference", ...), "attempt" or the negative's kind

    @property
    def technique(self) -> str:
        return self.group if self.steering else ""

    @property
    def preference(self) -> bool:
        """An ordinary preference: a labelled one, or a hard negative that says "ignore", "admin", "always"... or
        states a strict personal rule ("I never eat pork, so leave it out of every recipe")"""
        return self.type in ("preference", "trigger_pref", "strict_pref")


def steering_pool(
    rows: list[dict[str, Any]], attempts: list[dict[str, Any]], negatives: list[dict[str, Any]]
) -> list[PoolRow]:
    """The labelled messages, the attempts and the hard negatives as one pool with their CV groups."""
    pool = [
        PoolRow(
            text=row["text"],
            steering=bool(row.get("steering")),
            group=LABELLED_TECHNIQUE if row.get("steering") else f"family:{row.get('family') or row.get('id') or i}",
            source="labelled",
            type=str(row.get("type", "none")),
        )
        for i, row in enumerate(rows)
    ]
    pool += [PoolRow(a["text"], True, a.get("technique") or "attempt", "attempt", "attempt") for a in attempts]
    pool += [
        PoolRow(n["text"], False, f"negative:{n.get('id') or i}", "negative", n["kind"])
        for i, n in enumerate(negatives)
    ]
    return pool


def _fit(embedder: Any, pool: list[PoolRow], vectors: np.ndarray, layers: np.ndarray | None, indices: list[int]):
    from learning.safety import SteeringModel  # noqa: PLC0415  heavy: scikit-learn

    rows = [{"text": pool[i].text, "steering": pool[i].steering} for i in indices]
    return SteeringModel(rows, embedder=embedder, vectors=vectors[indices], extra=[], layers=_rows(layers, indices))


def _rows(layers: np.ndarray | None, indices: Any) -> np.ndarray | None:
    return None if layers is None else layers[indices]


def _embedded(embedder: Any, pool: list[PoolRow]) -> tuple[np.ndarray, np.ndarray | None]:
    from learning.safety import embed_both  # noqa: PLC0415  heavy: scikit-learn

    return embed_both(embedder, [row.text for row in pool])


def out_of_fold(
    embedder: Any, pool: list[PoolRow], folds: int = 5, seed: int = CV_SEED, by_technique: bool = True
) -> np.ndarray:
    """Each line's steering probability from a model fitted on the folds without its group (``by_technique``
    False: an attempt is its own group, so its technique is seen in fitting: the figure for new wordings)."""
    from sklearn.model_selection import StratifiedGroupKFold  # noqa: PLC0415  heavy: scikit-learn

    vectors, layers = _embedded(embedder, pool)
    probabilities = np.zeros(len(pool))
    split = StratifiedGroupKFold(n_splits=folds, shuffle=True, random_state=seed)
    labels = [row.steering for row in pool]
    groups = [row.group if by_technique or not row.steering else f"line:{i}" for i, row in enumerate(pool)]
    for fit, test in split.split(pool, labels, groups):
        model = _fit(embedder, pool, vectors, layers, list(fit))
        probabilities[test] = model.probabilities([pool[i].text for i in test], vectors[test], _rows(layers, test))
    return probabilities


def leave_one_technique_out(embedder: Any, pool: list[PoolRow]) -> dict[str, np.ndarray]:
    """For each technique, its attempts' probabilities from a model fitted on everything else."""
    vectors, layers = _embedded(embedder, pool)
    found: dict[str, np.ndarray] = {}
    for technique in sorted({row.technique for row in pool if row.steering}):
        held = [i for i, row in enumerate(pool) if row.steering and row.technique == technique]
        model = _fit(embedder, pool, vectors, layers, [i for i, row in enumerate(pool) if i not in set(held)])
        found[technique] = model.probabilities([pool[i].text for i in held], vectors[held], _rows(layers, held))
    return found


def threshold_for(pool: list[PoolRow], probabilities: np.ndarray, max_false: float) -> float:
    """The lowest threshold (0.05 steps) at which at most ``max_false`` of the ordinary preferences are flagged."""
    ordinary = np.array([p for row, p in zip(pool, probabilities, strict=True) if row.preference])
    if not ordinary.size:
        raise ValueError("the pool holds no ordinary preference to choose a threshold on")
    for threshold in (step / 100 for step in range(5, 100, 5)):
        if (ordinary >= threshold).mean() <= max_false:
            return threshold
    return 0.95


def scores_at(pool: list[PoolRow], probabilities: np.ndarray, threshold: float) -> SteeringScores:
    """Shares flagged at this threshold: attempts (by technique), labelled preferences, every other line."""
    scores = SteeringScores()
    for row, p in zip(pool, probabilities, strict=True):
        flagged = bool(p >= threshold)
        if row.steering:
            scores.attempts += 1
            scores.attempts_flagged += flagged
            seen, caught = scores.by_technique.get(row.technique, (0, 0))
            scores.by_technique[row.technique] = (seen + 1, caught + flagged)
            if not flagged:
                scores.missed.append(row.text)
            continue
        scores.ordinary += 1
        scores.ordinary_flagged += flagged
        if row.type == "preference":
            scores.preferences += 1
            scores.preferences_flagged += flagged
        if flagged:
            scores.false.append(row.text)
    return scores
