"""Which queries a query-scoped weight reaches: re-askings of its anchors, never another question."""

from __future__ import annotations

import numpy as np
import pytest

from retrieval.models import WeightScope
from retrieval.scope import ScopeRule, near_paraphrase, query_terms, same_question, term_match
from retrieval.selectors import weights_for
from tests.factories import RetrievalWeightFactory

ANCHOR = "what theoretical studies have been made of the creep buckling of columns under axial load"
MINIMUM = 0.85


def reaches(embedder, query: str, anchor: str = ANCHOR, anchor_terms: list[str] | None = None) -> bool:
    terms = query_terms(anchor) if anchor_terms is None else anchor_terms
    return near_paraphrase(
        embedder.embed_one(query), set(query_terms(query)), embedder.embed_one(anchor)[None, :], [terms], MINIMUM
    )


def test_query_terms_are_lemmas_without_search_filler():
    assert query_terms("What is known about work on heated boundary-layers? Papers and studies, please.") == [
        "boundary",
        "heat",
        "layer",
    ]
    assert query_terms("Layers LAYER layer") == ["layer"]


@pytest.mark.parametrize(
    "query",
    [
        "creep buckling of columns under axial load: theoretical studies",  # reordered
        "any papers or known work on theoretical creep buckling of columns under axial load?",  # filler
        "theoretical study of the creep buckling of a column under axial loads",  # inflections
        "theoretically, how do columns buckle in creep under axial loading",  # inflection and derivation
        "theoretical studies of the creep buckling of columns under load",  # one detail left out
    ],
)
def test_a_re_asking_reaches_the_weight(embedder, query):
    assert reaches(embedder, query)


@pytest.mark.parametrize(
    "query",
    [
        "experimental studies of the creep buckling of columns under axial load",  # one word, another question
        "theoretical studies of the creep buckling of plates under axial load",
        "theoretical studies of the creep buckling of columns under axial load at high temperature",  # narrower
        "pressure distribution on a slender wing in supersonic flow",  # unrelated
    ],
)
def test_another_question_does_not_reach_the_weight(embedder, query):
    assert not reaches(embedder, query)


def test_a_near_miss_is_close_in_embedding_but_not_reached(embedder):
    """The case the term test exists for: the embedding alone would let it in."""
    near_miss = "what experimental studies have been made of the creep buckling of columns under axial load"
    assert float(embedder.embed_one(near_miss) @ embedder.embed_one(ANCHOR)) >= MINIMUM
    assert not reaches(embedder, near_miss)


def test_terms_stored_before_lemmas_still_work(embedder):
    """Old weights stored content words with a crude plural 's' dropped, filler included."""
    old = ["axial", "buckling", "column", "creep", "load", "made", "studie", "theoretical"]
    assert reaches(embedder, "creep buckling of columns under axial load: theoretical studies", anchor_terms=old)
    assert not reaches(
        embedder, "experimental studies of the creep buckling of columns under axial load", anchor_terms=old
    )
    assert same_question(["mass", "transfer"], ["mas", "transfer"])


def test_an_anchor_without_terms_needs_only_the_embedding(embedder):
    assert reaches(embedder, ANCHOR, anchor_terms=[])
    assert not reaches(embedder, "pressure distribution on a slender wing in supersonic flow", anchor_terms=[])


def test_the_rule_allowances():
    strict = ScopeRule(synonym_similarity=0.8, max_synonyms=0)
    assert term_match(["creep", "column", "buckle"], ["buckle", "creep", "columns"], strict) == "same"
    assert term_match(["approximation", "formula"], ["approximate", "formula"], strict) == "same"  # derivation
    assert term_match(["transform", "heat"], ["transfer", "heat"], strict) is None  # not a derivation
    lenient = ScopeRule(synonym_similarity=0.8, max_synonyms=0, max_dropped=1, max_added=1)
    assert term_match(["creep", "buckle", "column"], ["creep", "buckle", "column", "axial"], lenient) == "close"
    assert term_match(["creep", "buckle", "column"], ["creep", "buckle", "column", "axial"], strict) is None
    # A word added and another left out is a replaced word, whatever the allowances.
    assert term_match(["creep", "buckle", "plate", "axial"], ["creep", "buckle", "column", "axial"], lenient) is None


def test_search_applies_a_query_weight_to_re_askings_only(db, embedder):
    """Through weights_for, as search calls it, with old-format stored terms."""
    weight = RetrievalWeightFactory(
        scope=WeightScope.QUERY,
        query_anchors=embedder.embed_one(ANCHOR),
        min_similarity=MINIMUM,
        query_terms=[["axial", "buckling", "column", "creep", "load", "made", "studie", "theoretical"]],
        multiplier=1.3,
    )

    def weight_for(query: str) -> float:
        vector = np.asarray(embedder.embed_one(query))
        return weights_for(chunk_ids=[weight.chunk_id], project=None, query_vector=vector, query_text=query).get(
            weight.chunk_id, 1.0
        )

    assert weight_for("creep buckling of columns under axial loads, theoretical studies please") == pytest.approx(1.3)
    assert weight_for("experimental studies of the creep buckling of columns under axial load") == 1.0
