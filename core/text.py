"""Pure text helpers, one of each: normalising, hashing, tokenising and summarising.

Every app that compares, dedupes or summarises user text calls these, so that two texts that
are "the same" to one part of the system are the same to every other part.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter

_WORD = re.compile(r"[a-z0-9']+")

# Words that say nothing about what a text is about: function words, politeness, and the
# filler of search queries ("papers", "what"). One list for every caller.
STOP_WORDS = frozenset(
    (
        "a an the and or but if of to in on for with at by from about as into is are was were be been am i me my "
        "we our you your it its this that these those there their can could would will should please pls do does "
        "did have has had just some any all so up out what which who how when where why not no yes hey hi thanks "
        "thank paper papers"
    ).split()
)


def normalise(text: str) -> str:
    """Lower-cased with runs of whitespace collapsed: the form two texts are compared in."""
    return " ".join(text.lower().split())


def digest(*parts: str) -> str:
    """SHA-256 hex digest of the parts, joined by a separator no text contains."""
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


def normalised_digest(text: str) -> str:
    """Digest of the normalised text: equal for texts that differ only in case and spacing."""
    return digest(normalise(text))


def words(text: str) -> list[str]:
    """The lower-cased words of a text (letters, digits and apostrophes), in order."""
    return _WORD.findall(text.lower())


def content_words(text: str) -> list[str]:
    """The words that carry meaning: no stop words, no single characters; in order, repeats kept."""
    return [w for w in words(text) if w not in STOP_WORDS and len(w) > 1]


def stem(word: str) -> str:
    """A crude stem: a plural 's' dropped from words longer than three letters."""
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def lexical_similarity(a: str, b: str) -> float:
    """Cosine similarity of the two texts' content-word counts (0..1)."""
    ta, tb = Counter(content_words(a)), Counter(content_words(b))
    if not ta or not tb:
        return 0.0
    dot = sum(count * tb[word] for word, count in ta.items())
    return dot / (math.sqrt(sum(v * v for v in ta.values())) * math.sqrt(sum(v * v for v in tb.values())))


_GREETING = re.compile(r"^(hey|hi|hello)[,!.\s]+", re.IGNORECASE)
_POLITE_OPEN = re.compile(r"^(please|can you|could you|would you|pls|kindly)\s+", re.IGNORECASE)


def summarize(text: str, words: int = 10) -> str:
    """A short human-readable stand-in for a text: its first words, greeting and politeness trimmed."""
    trimmed = _POLITE_OPEN.sub("", _GREETING.sub("", text.strip()))
    summary = " ".join(trimmed.split()[:words]).rstrip(".,;:!?")
    return (summary[:1].upper() + summary[1:])[:300] if summary else text[:300]
