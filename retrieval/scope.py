"""Which queries a query-scoped retrieval weight reaches: re-askings of the queries behind its
evidence, and no other question.

A query reaches a weight when, for one of the weight's anchor queries, both hold:

- its embedding is at least ``minimum`` similar (the weight's ``min_similarity``, set by the scan),
  or ``RETRIEVAL_SCOPE_SAME_TERMS_MARGIN`` less when its terms are exactly the anchor's: shuffled
  words and filler move an embedding more than they change a question;
- it asks about the same things (``term_match``): after dropping function words and search filler
  ("papers", "known", "work on"), every query term has a partner among the anchor's terms — the same
  word in any inflection ("layers"/"layer", "heated"/"heating") or derivation
  ("approximate"/"approximation") — and at most ``RETRIEVAL_SCOPE_MAX_DROPPED`` anchor terms have
  none (a detail left out). A term the anchor lacks is never allowed: with one, a query is a
  narrower or another question ("... to a suddenly *cooled* wall"). Word order does not matter.

Why terms and not only embeddings: a sentence embedding puts "theoretical" and "experimental studies
of creep buckling" at 0.97; the one word that differs is the question. Why no synonyms by default
(``RETRIEVAL_SCOPE_MAX_SYNONYMS``): single-word embeddings put opposites (laminar/turbulent,
subsonic/supersonic) as close as synonyms, so a synonym allowance admits the near-misses; the
benchmark (bench/paraphrase_scope.py) measures both. A re-asking with a synonym reaches the weight
once it is itself among the weight's anchors. Why no corpus IDF: in a specialised corpus the words
that separate two questions ("theoretical", "experimental" in aerodynamics) are among its most
frequent, so IDF would discount exactly them.

Stored anchor terms from before this rule (content words with a crude plural "s" dropped, filler
kept: "studie", "mas", "known") still work: a term also stands for its form with an "s" put back
when that is a word, and filler is dropped from stored terms as from queries.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from lemminflect import getAllLemmas

from core.embeddings import get_embedder
from core.text import content_words
from retrieval.conf import retrieval_settings

# Words users put around a question when they search, whatever the subject: what they want
# ("papers on", "information about", "has anyone investigated") and how they ask ("please", "help
# me with", "in detail", "thanks"), not what it is about. Lemmas; a
# word is filler when any of its lemmas is here. Beyond core.text.STOP_WORDS, which other callers share.
FILLER = frozenset(
    (
        "paper article publication report document literature "
        "research study work investigation investigate information info result finding "
        "know known available exist existing previous published recent relevant related regarding "
        "concerning pertain pertaining deal dealing discuss discussion describe description "
        "find look search want need tell show give get make made anyone someone anything something "
        "please thanks thank kindly help detail quick quickly "
        "anybody somebody way thing also here possible much many more most very "
        "able whether been being has having does doing done there whose whom "
        "regard concern about any some other such must might may shall ought one us publish reference "
        "around under over between through within without versus via per than then into onto upon among "
        "toward towards across along against during since while whereas"
    ).split()
)

_POS_ORDER = ("NOUN", "VERB", "ADJ", "ADV", "PROPN")


@lru_cache(maxsize=100_000)
def _lemmas(word: str) -> tuple[str, ...]:
    """The word's lemmas, nouns first (``heating`` -> heating, heat); empty when lemminflect does not know it."""
    found = getAllLemmas(word)
    ordered: list[str] = []
    for pos in (*_POS_ORDER, *sorted(set(found) - set(_POS_ORDER))):
        ordered += [lemma.lower() for lemma in found.get(pos, ()) if lemma.lower() not in ordered]
    return tuple(ordered)


@lru_cache(maxsize=100_000)
def forms(term: str) -> frozenset[str]:
    """Everything a term stands for: itself, its lemmas, and (a stored term may be a crude plural
    stem: "studie", "mas") the lemmas of the term with an "s" put back, when that is a known word."""
    found = {term, *_lemmas(term)}
    if not _lemmas(term) and term.endswith("s") and len(term) > 3:  # an unknown plural: "datas", "aircrafts"
        found |= {term[:-1], *_lemmas(term[:-1])}
    plural = _lemmas(term + "s")
    if plural:
        found |= {term + "s", *plural}
    return frozenset(found)


def _is_filler(term: str) -> bool:
    return bool(forms(term) & FILLER)


def _representative(word: str) -> str:
    lemmas = _lemmas(word)
    return lemmas[0] if lemmas else word


def query_terms(text: str) -> list[str]:
    """A query's terms: its content words without search filler, each as its lemma (noun first),
    sorted and unique. What a weight stores for each anchor and what search compares with it."""
    words = [word for word in content_words(text.replace("-", " ")) if not _is_filler(word)]
    return sorted({term for term in map(_representative, words) if not _is_filler(term) and len(term) > 1})


class _WordVectors:
    """Embeddings of single words, kept per process (only with a synonym allowance): the synonym test
    embeds a handful of words per search at most, and the same anchor terms come back."""

    def __init__(self, size: int = 50_000) -> None:
        self.size = size
        self.known: dict[tuple[str, str], np.ndarray] = {}
        self.lock = threading.Lock()

    def get(self, words: Sequence[str]) -> dict[str, np.ndarray]:
        embedder = get_embedder()
        backend = type(embedder).__name__  # vectors of two models are not comparable
        found = {w: self.known[(backend, w)] for w in dict.fromkeys(words) if (backend, w) in self.known}
        missing = [w for w in dict.fromkeys(words) if w not in found]
        if missing:
            found.update(zip(missing, embedder.embed(missing), strict=True))
            with self.lock:
                if len(self.known) + len(missing) > self.size:
                    self.known.clear()
                self.known.update({(backend, w): found[w] for w in missing})
        return found


word_vectors = _WordVectors()


@dataclass(frozen=True)
class ScopeRule:
    """The thresholds of the term test (defaults: the settings); the benchmark varies them."""

    synonym_similarity: float
    max_synonyms: int
    max_dropped: int = 0  # anchor terms a re-asking may leave out (when the anchor has at least 4)
    max_added: int = 0  # terms a re-asking may add (when the anchor has at least 3)
    same_terms_margin: float = 0.0  # how much lower the embedding gate is for a query with the anchor's terms
    derivations: bool = True  # "approximate"/"approximation", "rational"/"rationally" count as one term

    @classmethod
    def from_settings(cls) -> ScopeRule:
        return cls(
            synonym_similarity=retrieval_settings.RETRIEVAL_SYNONYM_SIMILARITY,
            max_synonyms=retrieval_settings.RETRIEVAL_SCOPE_MAX_SYNONYMS,
            max_dropped=retrieval_settings.RETRIEVAL_SCOPE_MAX_DROPPED,
            max_added=retrieval_settings.RETRIEVAL_SCOPE_MAX_ADDED,
            same_terms_margin=retrieval_settings.RETRIEVAL_SCOPE_SAME_TERMS_MARGIN,
        )


def _content(terms: Iterable[str]) -> list[str]:
    """Terms as the rule compares them: unique, filler dropped (old stored terms kept filler)."""
    return [t for t in dict.fromkeys(str(t).lower() for t in terms) if t and not _is_filler(t)]


def _common_prefix(a: str, b: str) -> int:
    size = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        size += 1
    return size


@lru_cache(maxsize=100_000)
def same_term(a: str, b: str, derivations: bool = True) -> bool:
    """One term in two forms: an inflection of the same lemma, or (``derivations``) one word derived
    from the other by a suffix: a shared stem of at least 7 letters covering all but 3 letters of the
    shorter ("approximate"/"approximation"; not "transfer"/"transform")."""
    if forms(a) & forms(b):
        return True
    if not derivations:
        return False
    prefix = _common_prefix(a, b)
    return prefix >= 7 and prefix >= min(len(a), len(b)) - 3


def term_match(query: Iterable[str], anchor: Iterable[str], rule: ScopeRule | None = None) -> str | None:
    """How a query's terms cover an anchor's: "same" (every term on each side has a partner, the same
    word in some inflection or derivation), "close" (also a synonym pair, or a few words added or left
    out, within the rule's allowances) or None. A word added *and* one left out is a replaced word:
    another question ("theoretical" -> "experimental") unless the two are synonyms."""
    rule = rule or ScopeRule.from_settings()
    left, right = _content(query), _content(anchor)
    unmatched_right = list(right)
    unmatched_left: list[str] = []
    for term in left:
        partner = next((other for other in unmatched_right if same_term(term, other, rule.derivations)), None)
        if partner is None:
            unmatched_left.append(term)
        else:
            unmatched_right.remove(partner)
    if not unmatched_left and not unmatched_right:
        return "same"
    synonyms = 0
    if rule.max_synonyms and unmatched_left and unmatched_right:
        vectors = word_vectors.get([*unmatched_left, *unmatched_right])
        while unmatched_left and unmatched_right and synonyms < rule.max_synonyms:
            similarity, a, b = max(
                (float(vectors[a] @ vectors[b]), a, b) for a in unmatched_left for b in unmatched_right
            )
            if similarity < rule.synonym_similarity:
                break
            unmatched_left.remove(a)
            unmatched_right.remove(b)
            synonyms += 1
    added, dropped = len(unmatched_left), len(unmatched_right)
    if added and dropped:
        return None
    if added > (rule.max_added if len(right) >= 3 else 0) or dropped > (rule.max_dropped if len(right) >= 4 else 0):
        return None
    return "close"


def same_question(query: Iterable[str], anchor: Iterable[str], rule: ScopeRule | None = None) -> bool:
    """Do the two term lists ask the same question (``term_match`` is "same" or "close")?"""
    return term_match(query, anchor, rule) is not None


def near_paraphrase(
    query_vector: np.ndarray,
    terms: set[str],
    anchors: np.ndarray,
    anchor_terms: list,
    minimum: float,
    rule: ScopeRule | None = None,
) -> bool:
    """Is the query a re-asking of one of the anchors: at least ``minimum`` similar in embedding and
    the same question in terms (``term_match``)? A query with exactly the anchor's terms (reordered,
    inflected, wrapped in filler) needs ``same_terms_margin`` less similarity: shuffling and filler
    move an embedding more than they change a question. An anchor without stored terms needs only
    the embedding (weights made before terms were stored)."""
    rule = rule or ScopeRule.from_settings()
    similarities = anchors.reshape(-1, query_vector.shape[0]) @ query_vector
    lowest = minimum - rule.same_terms_margin  # the gate for a query with the anchor's very terms
    for similarity, words in zip(similarities, anchor_terms or [[]] * len(similarities), strict=False):
        if similarity < lowest:
            continue
        if not words:
            if similarity >= minimum:
                return True
            continue
        match = term_match(terms, words, rule)
        if match == "same" or (match == "close" and similarity >= minimum):
            return True
    return False
