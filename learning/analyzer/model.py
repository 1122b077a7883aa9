"""The local analyzer's classifiers, fitted on the labelled messages (``data/labelled_messages.jsonl``).

- type (preference / correction / pain_point / memory / none): logistic regression over the
  message's MiniLM embedding, the previous assistant turn's embedding, how the message relates
  to that turn (``features.context_cues``), structural cues, and word (1-3) and character (2-5)
  n-grams, which keep the words themselves in play ("always" vs "this time");
- steering: learning.safety's model (n-grams, the embedding and its phrase families);
- category (six) and axis (a canonical axis or none) of a preference: over the embedding and
  word n-grams of the labelled preferences (axis also from the canonical axes' exemplars).

Everything is fitted in one pass with fixed seeds (liblinear/lbfgs are deterministic), about
two seconds on one core; ``fit_models`` takes the rows so evaluation can fit on a training fold.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

from learning.analyzer.axes import AXIS_EXEMPLARS
from learning.analyzer.features import Turn, context_cues, cues, steering_cues
from learning.safety import SteeringModel

DATA = Path(__file__).resolve().parent / "data" / "labelled_messages.jsonl"
TYPES = ("preference", "correction", "pain_point", "memory", "none")
NO_AXIS = "-"
PREVIOUS_WEIGHT = 0.5  # the previous turn informs, the message decides
CUE_WEIGHT = 0.5
WORD_WEIGHT = 0.5  # chosen by grouped cross-validation on the training part (0.5/1/2)
SEED = 0


def load_rows(path: Path = DATA) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def turn_of(row: dict[str, Any]) -> Turn:
    """A labelled row as the analyzer would see it live."""
    earlier = tuple(m["content"] for m in row.get("recent") or [] if m.get("role") == "user")
    return Turn(text=row["text"], previous_assistant=row.get("previous_assistant") or "", earlier_user=earlier)


@dataclass
class Embedded:
    """The vectors one batch of turns needs: the message, its previous assistant turn, and the
    best similarity to the user's own earlier turns (saying the same thing again)."""

    text: np.ndarray
    previous: np.ndarray
    earlier_max: np.ndarray


def embed_turns(embedder, turns: list[Turn], text_vectors: np.ndarray | None = None) -> Embedded:
    """One forward pass for every distinct text the batch needs (empty context costs nothing)."""
    if text_vectors is None:
        text_vectors = embedder.embed([t.text for t in turns])
    extra = sorted(
        {t.previous_assistant for t in turns if t.previous_assistant} | {u for t in turns for u in t.earlier_user}
    )
    lookup = dict(zip(extra, embedder.embed(extra), strict=True)) if extra else {}
    dims = text_vectors.shape[1] if len(text_vectors) else 384
    previous = (
        np.vstack([lookup[t.previous_assistant] if t.previous_assistant else np.zeros(dims, np.float32) for t in turns])
        if turns
        else np.zeros((0, dims), np.float32)
    )
    earlier = np.array(
        [
            max((float(v @ lookup[u]) for u in t.earlier_user), default=0.0)
            for t, v in zip(turns, text_vectors, strict=True)
        ],
        dtype=np.float32,
    )
    return Embedded(text=text_vectors, previous=previous, earlier_max=earlier)


class Models:
    """The fitted classifiers and the vectorisers they read."""

    def __init__(
        self, rows: list[dict[str, Any]], embedded: Embedded, axis_vectors: np.ndarray, steering: SteeringModel
    ) -> None:
        self.steering = steering
        turns = [turn_of(r) for r in rows]
        texts = [t.text for t in turns]
        self.words = TfidfVectorizer(ngram_range=(1, 3), sublinear_tf=True, lowercase=True)
        self.chars = TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5), sublinear_tf=True, min_df=2)
        self.words.fit(texts)
        self.chars.fit(texts)
        features = self.features(turns, embedded)

        self.type_model = LogisticRegression(C=4.0, class_weight="balanced", max_iter=4000, random_state=SEED)
        self.type_model.fit(features, [r["type"] for r in rows])

        prefs = [i for i, r in enumerate(rows) if r["type"] == "preference"]
        pref_features = self.preference_features([texts[i] for i in prefs], embedded.text[prefs])
        self.category_model = LogisticRegression(C=8.0, class_weight="balanced", max_iter=4000, random_state=SEED)
        self.category_model.fit(pref_features, [rows[i]["category"] for i in prefs])

        # Axes: the labelled preferences (on an axis or not) plus the canonical axes' own exemplars.
        axis_texts = [text for texts_ in AXIS_EXEMPLARS.values() for text in texts_]
        axis_labels = [axis for axis, texts_ in AXIS_EXEMPLARS.items() for _ in texts_]
        axis_features = sparse.vstack([pref_features, self.preference_features(axis_texts, axis_vectors)]).tocsr()
        labels = [rows[i].get("axis") or NO_AXIS for i in prefs] + axis_labels
        self.axis_model = LogisticRegression(C=8.0, class_weight="balanced", max_iter=4000, random_state=SEED)
        self.axis_model.fit(axis_features, labels)

    def features(self, turns: list[Turn], embedded: Embedded) -> sparse.csr_matrix:
        texts = [t.text for t in turns]
        dense = np.hstack(
            [
                embedded.text,
                embedded.previous * PREVIOUS_WEIGHT,
                np.vstack([cues(t) for t in texts]) * CUE_WEIGHT,
                np.vstack(
                    [
                        context_cues(t, v, p, float(e))
                        for t, v, p, e in zip(
                            turns, embedded.text, embedded.previous, embedded.earlier_max, strict=True
                        )
                    ]
                )
                * CUE_WEIGHT,
                np.vstack([steering_cues(t) for t in texts]),
            ]
        )
        words = self.words.transform(texts) * WORD_WEIGHT
        return sparse.hstack([sparse.csr_matrix(dense), words, self.chars.transform(texts)]).tocsr()

    def preference_features(self, texts: list[str], vectors: np.ndarray) -> sparse.csr_matrix:
        return sparse.hstack([sparse.csr_matrix(vectors), self.words.transform(texts)]).tocsr()


def fit_models(embedder, rows: list[dict[str, Any]], steering: SteeringModel | None = None) -> Models:
    """Fit every classifier on these rows (the whole file in production, a fold in evaluation);
    ``steering``: an already fitted steering model to share (production: learning.safety's)."""
    embedded = embed_turns(embedder, [turn_of(r) for r in rows])
    axis_vectors = embedder.embed([text for texts in AXIS_EXEMPLARS.values() for text in texts])
    steering = steering or SteeringModel(rows, embedder=embedder, vectors=embedded.text)
    return Models(rows, embedded, axis_vectors, steering)
