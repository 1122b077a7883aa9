"""Which queries a query-scoped retrieval weight reaches: paraphrases of the queries behind its
evidence (close in embedding and in content words), and no unrelated query."""

from __future__ import annotations

import numpy as np

from core.text import content_words, stem
from retrieval.conf import retrieval_settings


def query_terms(text: str) -> list[str]:
    """A query's content words, crudely stemmed (plural s), sorted and unique."""
    return sorted({stem(word) for word in content_words(text)})


def near_paraphrase(
    query_vector: np.ndarray, terms: set[str], anchors: np.ndarray, anchor_terms: list, minimum: float
) -> bool:
    """Is the query a near-paraphrase of one of the anchors: close in embedding and in words?"""
    similarities = anchors.reshape(-1, query_vector.shape[0]) @ query_vector
    min_overlap = retrieval_settings.RETRIEVAL_MIN_TERM_OVERLAP
    for similarity, words in zip(similarities, anchor_terms or [[]] * len(similarities), strict=False):
        if similarity < minimum:
            continue
        union = terms | set(words)
        overlap = len(terms & set(words)) / len(union) if union else 0.0
        if not words or overlap >= min_overlap:
            return True
    return False
