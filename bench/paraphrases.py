"""Deterministic paraphrases of search queries, at two strengths, for retrieval-learning benchmarks.

    light(query, seed)     the same content words, in another order, with inflections changed
                           (singular <-> plural) and generic filler around them ("can you find
                           material on ... please")
    stronger(query, seed)  light, and one content word replaced by a synonym from WordNet (the
                           word's most frequent senses), or else by its hypernym (a related,
                           broader word)

Nothing here knows the corpus or its queries: the stop list is a generic list of English function
words, the filler is generic search talk, and the synonyms come from WordNet 3.0 as Debian's
``wordnet-base`` package installs it in /usr/share/wordnet (``apt-get install wordnet-base``; read
offline, no network). Without it, :func:`stronger` raises: a missing synonym source must not
silently turn the stronger set into the light one. A paraphrase depends only on (query, seed, the
WordNet files): the same everywhere.

    .venv/bin/python bench/paraphrases.py "what similarity laws must be obeyed" [--seed 1]
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import random
import re
from pathlib import Path

WORDNET = Path("/usr/share/wordnet")

# English function words and question words (generic; not the project's stop list, which the
# code under test uses: a paraphrase generator that shared it could hide its mistakes).
FUNCTION_WORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing done down during each either
    few for from further had has have having he her here hers him his how i if in into is it its
    itself just me might more most must my no nor not now of off on once only or other our out
    over own same shall she should so some such than that the their them then there these they
    this those through to too under until up upon us very was we were what when where whether
    which while who whom why will with within without would you your yours""".split()
)

# Generic ways people wrap a search; none names a subject.
PREFIXES = (
    "",
    "can you find",
    "i am looking for information on",
    "please show me material about",
    "what do we have on",
    "looking for",
    "any documents about",
    "tell me about",
    "i need details on",
    "help me with",
)
SUFFIXES = ("", "please", "thanks", "if possible", "in detail", "quickly")
GLUE = ("and", "of", "for", "in", "with")
# Words with these endings are rarely nouns: not pluralised ("constructing", "aerodynamic").
NOT_NOUN = ("ing", "ed", "ly", "al", "ic", "ous", "ive", "ent", "ant", "able", "ible", "ar", "ful", "less", "ary")


def _rng(query: str, seed: int, salt: str) -> random.Random:
    """A generator fixed by the query, the seed and the purpose (not Python's salted hash)."""
    key = hashlib.sha256(f"{salt}\x00{seed}\x00{query}".encode()).digest()
    return random.Random(int.from_bytes(key[:8], "big"))


def words(text: str) -> list[str]:
    return re.findall(r"[a-z][a-z0-9\-]*", text.lower())


def content_words(text: str) -> list[str]:
    """The words that carry the query's meaning, in order (function words and 1-letter words dropped)."""
    return [w for w in words(text) if w not in FUNCTION_WORDS and len(w) > 1]


def inflect(word: str) -> str:
    """Singular <-> plural, crudely, as people type: 'models' -> 'model', 'flow' -> 'flows'."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith(("ss", "us", "is", "ous")):
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes")):
        return word[:-2]
    if word.endswith("s"):
        return word[:-1]
    if word.endswith(NOT_NOUN):
        return word
    if word.endswith(("x", "ch", "sh")):
        return word + "es"
    if word.endswith("y") and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def light(query: str, seed: int = 0) -> str:
    """Same content words, reordered (the two halves swapped, and a neighbouring pair or two
    exchanged), about a third of them re-inflected, wrapped in generic filler."""
    rng = _rng(query, seed, "light")
    terms = content_words(query)
    if not terms:
        return query
    if len(terms) > 2:
        cut = rng.randrange(1, len(terms))
        terms = terms[cut:] + terms[:cut]
    for _ in range(min(2, len(terms) - 1)):
        i = rng.randrange(len(terms) - 1)
        terms[i], terms[i + 1] = terms[i + 1], terms[i]
    terms = [inflect(t) if rng.random() < 0.35 else t for t in terms]
    body = terms[0]
    for term in terms[1:]:
        body += f" {rng.choice(GLUE)} {term}" if rng.random() < 0.2 else f" {term}"
    return " ".join(p for p in (rng.choice(PREFIXES), body, rng.choice(SUFFIXES)) if p)


# --- WordNet (the data files read directly: a few dozen lines, no extra dependency) -----------

_POS = ("noun", "verb", "adj", "adv")
_DETACH = {
    "noun": (("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"), ("ies", "y"), ("s", "")),
    "verb": (("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"), ("ing", ""), ("s", "")),
    "adj": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
    "adv": (),
}


@functools.cache
def _index(pos: str) -> dict[str, tuple[int, list[int]]]:
    """lemma -> (how many of its senses are seen in tagged text, its synsets most frequent first)."""
    table: dict[str, tuple[int, list[int]]] = {}
    for line in (WORDNET / f"index.{pos}").read_text(encoding="latin-1").splitlines():
        if line.startswith(" "):
            continue
        parts = line.split()
        lemma, synsets, pointers = parts[0], int(parts[2]), int(parts[3])
        tagged = int(parts[4 + pointers + 1])
        offsets = parts[4 + pointers + 2 :]
        table[lemma] = (tagged, [int(o) for o in offsets[:synsets]])
    return table


@functools.cache
def _exceptions(pos: str) -> dict[str, str]:
    path = WORDNET / f"{pos}.exc"
    return dict(line.split()[:2] for line in path.read_text(encoding="latin-1").splitlines() if line.strip())


def _synset(pos: str, offset: int) -> tuple[list[str], list[tuple[str, int, str]]]:
    """The lemmas of a synset and its pointers (symbol, offset, pos letter)."""
    with (WORDNET / f"data.{pos}").open("rb") as handle:
        handle.seek(offset)
        parts = handle.readline().decode("latin-1").split()
    count = int(parts[3], 16)
    lemmas = [parts[4 + 2 * i] for i in range(count)]
    at = 4 + 2 * count
    pointers = []
    for i in range(int(parts[at])):
        symbol, target, letter = parts[at + 1 + 4 * i : at + 4 + 4 * i]
        pointers.append((symbol, int(target), letter))
    return lemmas, pointers


def _base_forms(word: str, pos: str) -> list[str]:
    index = _index(pos)
    forms = [word] if word in index else []
    if word in _exceptions(pos) and _exceptions(pos)[word] in index:
        forms.append(_exceptions(pos)[word])
    for suffix, ending in _DETACH[pos]:
        if word.endswith(suffix) and len(word) > len(suffix) + 2:
            base = word[: -len(suffix)] + ending
            if base in index and base not in forms:
                forms.append(base)
    return forms


_LETTER = {"n": "noun", "v": "verb", "a": "adj", "s": "adj", "r": "adv"}


def _clean(lemma: str) -> str:
    return re.sub(r"\(.*\)$", "", lemma).replace("_", " ").lower()


@functools.cache
def substitutes(word: str) -> tuple[str, ...]:
    """Replacements for a word, best first, in the part of speech where WordNet sees it most often:
    the other lemmas of its most frequent sense (single words first), else of its second, else the
    hypernyms (broader words) of its most frequent sense."""
    if not (WORDNET / "index.noun").exists():
        raise RuntimeError("WordNet is not installed: apt-get install wordnet-base (it lives in /usr/share/wordnet).")
    readings = [(pos, base) for pos in _POS for base in _base_forms(word, pos)]
    readings.sort(key=lambda reading: (-_index(reading[0])[reading[1]][0], -len(_index(reading[0])[reading[1]][1])))
    stem = word[:4]

    def usable(lemmas: list[str], base: str) -> list[str]:
        found = [w for w in dict.fromkeys(map(_clean, lemmas)) if w != base and not w.startswith(stem)]
        return sorted(found, key=lambda w: " " in w)  # a single word before a phrase

    for pos, base in readings[:1]:
        offsets = _index(pos)[base][1]
        for offset in offsets[:2]:
            if found := usable(_synset(pos, offset)[0], base):
                return tuple(found)
        hypernyms: list[str] = []
        for symbol, target, letter in _synset(pos, offsets[0])[1]:
            if symbol in ("@", "@i"):
                hypernyms += _synset(_LETTER[letter], target)[0]
        return tuple(usable(hypernyms, base))
    return ()


def stronger(query: str, seed: int = 0) -> str:
    """A light paraphrase in which one content word (chosen at random among those WordNet has a
    replacement for) is replaced by one of its first two substitutes; a light one if none has."""
    rng = _rng(query, seed, "stronger")
    text = light(query, seed)
    tokens = text.split()
    candidates = [
        i for i, t in enumerate(tokens) if t in set(content_words(query)) | {inflect(w) for w in content_words(query)}
    ]
    rng.shuffle(candidates)
    for i in candidates:
        options = substitutes(tokens[i])
        if options:
            tokens[i] = rng.choice(options[:2])
            return " ".join(tokens)
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("query")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print("light:   ", light(args.query, args.seed))
    print("stronger:", stronger(args.query, args.seed))


if __name__ == "__main__":
    main()
