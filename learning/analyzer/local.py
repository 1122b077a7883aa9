"""The local analyzer: sentence embeddings plus a few linguistic cues, and two small classifiers.

No network and no keyword list deciding on its own: a logistic regression over the
message's embedding (all-MiniLM-L6-v2) and a handful of structural cues (is it a
question, does it point at a specific object, does it speak of habit, does it open
by contradicting) decides the message type; a second one, trained on the catalog's
phrasings, names the preference. Both are fitted once per process from
``exemplars.py`` and ``catalog.py`` (about a second).
"""

from __future__ import annotations

import re
import threading

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

from core.embeddings import get_embedder
from learning.analyzer import catalog, exemplars
from learning.analyzer.base import (
    Analysis,
    AnalyzerInput,
    MemoryFinding,
    PreferenceFinding,
)
from learning.analyzer.workflows import workflow_finding

TYPES = ("preference", "correction", "pain_point", "memory", "none")
STYLE_SIMILARITY = 0.55  # a correction "states a style" when this close to a catalog phrasing

_WORD = re.compile(r"[a-z']+")
_HABIT = re.compile(
    r"\b(always|from now on|going forward|in (the )?future|in general|every time|each time|whenever|"
    r"never|any more|anymore|by default|all the time|in your (answers|replies|responses))\b"
)
_ASSISTANT_OUTPUT = re.compile(r"\b(your|ur) (answers?|repl(y|ies)|responses?|messages?|writing|explanations?|tone)\b")
_DEICTIC = re.compile(r"\b(this|these|that one|the following|below|above|attached|here is|here's)\b|:\s*$|:\s|\"|\n")
_CONTRADICT_OPEN = re.compile(
    r"^(no\b|nope\b|nah\b|actually\b|wrong\b|not quite\b|not what\b|incorrect\b|correction\b|that's not\b|"
    r"that is not\b|you (got|misread|mixed)\b|i said\b|i asked for\b|i meant\b|again,)"
)
_REPEAT = re.compile(
    r"\b(again|already|(two|three|four|five|\d+) times|keep (doing|getting|making|ignoring|forgetting)|"
    r"still (not|doesn't|don't|wrong)|repeat(ing)? myself|told you|as i said|like i (said|mentioned)|"
    r"how many times|every single time|for the last time|once again)\b"
)
_FRUSTRATION = re.compile(r"\b(ugh|argh|annoy\w*|frustrat\w*|useless|ridiculous|seriously|give up|wasting)\b")
_TASK_OPEN = re.compile(
    r"^(please |can you |could you |pls |plz )?(write|draft|summari[sz]e|translate|create|generate|make|list|"
    r"turn|rewrite|format|shorten|explain|give me an?|compose|outline|convert|put|prepare|help me)\b"
)
_FIRST_PERSON = re.compile(r"^(i|i'm|im|i've|i'd|my|we|we're|our)\b")
_PREFER_WORDS = re.compile(r"\b(prefer|like|love|hate|dislike|avoid|enjoy|can't stand|favou?rite)\b")


def cues(text: str) -> np.ndarray:
    """Structural cues of a message, as a small dense vector."""
    lowered = text.strip().lower()
    words = _WORD.findall(lowered)
    return np.array(
        [
            "?" in lowered,
            bool(_HABIT.search(lowered)),
            bool(_ASSISTANT_OUTPUT.search(lowered)),
            bool(_DEICTIC.search(text.strip())),
            bool(_CONTRADICT_OPEN.search(lowered)),
            bool(_REPEAT.search(lowered)),
            bool(_FRUSTRATION.search(lowered)) or lowered.count("!") >= 2,
            bool(_TASK_OPEN.search(lowered)),
            bool(_FIRST_PERSON.search(lowered)) and "?" not in lowered,
            min(len(words), 60) / 60.0,
        ],
        dtype=np.float32,
    )


CUE_WEIGHT = 0.35  # cues sit beside a unit-length embedding; this keeps both in play
WORD_WEIGHT = 0.6


class LocalAnalyzer:
    name = "local"

    def __init__(self) -> None:
        self.embedder = get_embedder()
        type_texts: list[str] = []
        type_labels: list[str] = []
        for entry in catalog.CATALOG:
            type_texts += entry.phrasings
            type_labels += ["preference"] * len(entry.phrasings)
        for label, texts in (
            ("correction", exemplars.CORRECTION),
            ("pain_point", exemplars.PAIN_POINT),
            ("memory", exemplars.MEMORY),
            ("none", exemplars.NONE),
        ):
            type_texts += texts
            type_labels += [label] * len(texts)
        vectors = self.embedder.embed(type_texts)
        self.type_model = LogisticRegression(C=4.0, class_weight="balanced", max_iter=2000)
        self.type_model.fit(self._features(type_texts, vectors), type_labels)

        # Which preference: sentence embeddings put antonyms ("short" / "detailed" answers)
        # close together, so the words themselves (TF-IDF) sit beside the embedding here.
        slug_texts = [p for entry in catalog.CATALOG for p in entry.phrasings]
        slug_labels = [entry.slug for entry in catalog.CATALOG for _ in entry.phrasings]
        self.slug_vectors = self.embedder.embed(slug_texts)
        self.slug_words = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, stop_words="english")
        self.slug_words.fit(slug_texts)
        self.slug_model = LogisticRegression(C=8.0, class_weight="balanced", max_iter=2000)
        self.slug_model.fit(self._slug_features(slug_texts, self.slug_vectors), slug_labels)

    def _slug_features(self, texts: list[str], vectors: np.ndarray) -> np.ndarray:
        return np.hstack([vectors, self.slug_words.transform(texts).toarray() * WORD_WEIGHT])

    @staticmethod
    def _features(texts: list[str], vectors: np.ndarray) -> np.ndarray:
        return np.hstack([vectors, np.vstack([cues(t) for t in texts]) * CUE_WEIGHT])

    def analyze(self, data: AnalyzerInput) -> Analysis:
        return self.analyze_many([data])[0]

    def analyze_many(self, items: list[AnalyzerInput]) -> list[Analysis]:
        texts = [item.current_message for item in items]
        vectors = self.embedder.embed(texts)
        return self.analyze_embedded(items, vectors)

    def analyze_embedded(self, items: list[AnalyzerInput], vectors: np.ndarray) -> list[Analysis]:
        """Analyse messages whose embeddings the caller already has (the task stores them)."""
        if not items:
            return []
        texts = [item.current_message for item in items]
        type_probs = self.type_model.predict_proba(self._features(texts, vectors))
        slug_probs = self.slug_model.predict_proba(self._slug_features(texts, vectors))
        style_similarity = (vectors @ self.slug_vectors.T).max(axis=1)
        type_index = {label: i for i, label in enumerate(self.type_model.classes_)}
        results = []
        for i, item in enumerate(items):
            probs = {label: float(type_probs[i][j]) for label, j in type_index.items()}
            label = max(probs, key=probs.__getitem__)
            slug = str(self.slug_model.classes_[int(np.argmax(slug_probs[i]))])
            results.append(self._conclude(item, label, probs, slug, float(style_similarity[i])))
        return results

    def _conclude(self, item: AnalyzerInput, label: str, probs: dict[str, float], slug: str, style: float) -> Analysis:
        confidence = probs[label]
        text = item.current_message.strip()
        if label == "preference":
            return Analysis(
                detected="preference",
                preference=self._preference(slug, confidence),
                confidence=confidence,
                reasoning=f"a standing response-style preference ({slug}), p={confidence:.2f}",
                analyzer=self.name,
            )
        if label == "correction":
            # "No, I said bullet points" corrects and restates a style: reinforce that too.
            finding = self._preference(slug, confidence) if style >= STYLE_SIMILARITY else None
            return Analysis(
                detected="correction",
                preference=finding,
                confidence=confidence,
                reasoning="the user corrects the previous answer" + (f" and restates {slug}" if finding else ""),
                analyzer=self.name,
            )
        if label == "pain_point":
            return Analysis(
                detected="pain_point",
                confidence=confidence,
                reasoning="the user re-explains or is frustrated",
                analyzer=self.name,
            )
        if label == "memory":
            kind = "preference" if _PREFER_WORDS.search(text.lower()) else "fact"
            return Analysis(
                detected="none",
                memory=MemoryFinding(kind=kind, content=text[:1000], confidence=round(confidence, 3)),
                confidence=confidence,
                reasoning="a durable personal statement worth remembering",
                analyzer=self.name,
            )
        workflow = workflow_finding(item)
        if workflow is not None:
            return Analysis(
                detected="workflow",
                workflow=workflow,
                confidence=confidence,
                reasoning=f"the same kind of request seen {item.match_count + 1} times",
                analyzer=self.name,
            )
        return Analysis(
            detected="none", confidence=confidence, reasoning="nothing durable to learn", analyzer=self.name
        )

    @staticmethod
    def _preference(slug: str, confidence: float) -> PreferenceFinding:
        entry = catalog.BY_SLUG[slug]
        return PreferenceFinding(
            category=entry.category,
            preference=entry.slug,
            description=entry.description,
            confidence=round(min(0.95, max(0.3, confidence)), 3),
        )


_instance: LocalAnalyzer | None = None
_instance_lock = threading.Lock()


def get_local_analyzer() -> LocalAnalyzer:
    """The process-wide local analyzer (fitted on first use)."""
    global _instance
    with _instance_lock:
        if _instance is None:
            _instance = LocalAnalyzer()
        return _instance
