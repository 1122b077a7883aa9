"""Workflow detection: when two requests are the same kind of task, what the task is called, and
what kind of prompt a request is.

Whole-sentence embeddings (MiniLM) say what a request is *about*, not what it *asks for*: "Write a
poem about the night-shift roster" sits closer to "Write a summary of the night-shift roster" than
"Which vehicle has each driver got on this roster?" does to "match every name on the rota to the
truck they're taking". So two requests are compared word by word instead: each content word is
embedded on its own (cached) and aligned to its nearest word on the other side ("rota"~"roster",
"truck"~"vehicle", "literature"~"studies"). The words both requests share are then set aside and
the *rest* must still align: two tasks that share their object but differ in what is done with it
("summarise / check / rewrite the medication list") fail there. The two thresholds are chosen by
cross-validation over groups (``python manage.py workflow_eval``).

The sentence cosine is taken *centred*: every request shares a direction ("a request to the
assistant") that lifts all cosines alike, so the mean embedding of a broad background set of
messages is subtracted first. That spreads same-task pairs from unrelated ones (ROC AUC over the
pairs of the sessions data 0.90 -> 0.93) without any fitting to those sessions. The background set
(``data/workflow_background.jsonl``) is frozen: the texts of the 589 messages the thresholds were
chosen with. It was the analyzer's labelled set, which grows with every batch of labelled lines and
moved the centres, the word weights and so the best thresholds with it.

Words are centred the same way. A word alone is a poor input for a sentence model (a bare "diff"
and "patch" sit at 0.31, "diff" and "menu" at 0.09), so each word is embedded framed as a noun
phrase ("a diff"), and the mean of the framed background words is taken out: the frame lifts every
pair alike, the centring removes that lift and what all words share. The aligned residual then
separates same-task pairs from the rest better (ROC AUC over the tuning pairs 0.82 -> 0.87, from the
trap pairs alone 0.83 -> 0.87), again without fitting anything to the sessions.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from lemminflect import getAllLemmas

from core.embeddings import get_embedder
from core.text import content_words, stem
from learning.analyzer.base import AnalyzerInput, WorkflowFinding

# Chosen with `python manage.py workflow_eval` (group-wise cross-validation on
# learning/analyzer/data/workflow_sessions.jsonl, with a cost on cross-task matches); see the README.
RESIDUAL_MIN = 0.12  # the words the requests do not share must still align this well (centred cosines)
SENTENCE_MIN = 0.2  # centred cosine of the sentence embeddings
MIN_MATCHES = 2  # same-task past requests; with the current one, three of a kind

_word_vectors: dict[str, np.ndarray] = {}
_word_lock = threading.Lock()
_WORD_CACHE_MAX = 50_000  # words, about 75 MB of float32 at 384 dimensions
# Frozen (see the module docstring and data/README.md): a changed background moves the thresholds.
_BACKGROUND = Path(__file__).parent / "data" / "workflow_background.jsonl"
_WORD_FRAME = "a {}"  # see the module docstring: a framed word embeds closer to its meaning
_CENTRE_WORDS = 600


def _background_texts() -> list[str]:
    """The texts of the frozen background set (589 messages in many voices)."""
    return [json.loads(line)["text"] for line in _BACKGROUND.read_text().splitlines() if line.strip()]


@lru_cache(maxsize=1)
def _document_frequency() -> tuple[Counter[str], int]:
    """How many messages of the background set use each word: "write", "need", "give" align with
    everything and say little about the task."""
    texts = _background_texts()
    return Counter(w for t in texts for w in set(content_words(t))), len(texts)


# The two background means, once computed or adopted from the analyzer's store (learning.analyzer.store).
_centres: dict[str, np.ndarray] = {}


def centres_adopt(*, centre: np.ndarray, word_centre: np.ndarray) -> None:
    """Use these background means (computed by an earlier process for the same data and model)."""
    with _word_lock:
        _centres.setdefault("sentence", np.asarray(centre, dtype=np.float32))
        _centres.setdefault("word", np.asarray(word_centre, dtype=np.float32))


def background_centre() -> np.ndarray:
    """The mean sentence embedding of the background set (computed once per process)."""
    if "sentence" not in _centres:
        vectors = np.asarray(get_embedder().embed(_background_texts()), dtype=np.float32)
        _centres.setdefault("sentence", vectors.mean(axis=0))
    return _centres["sentence"]


def centred(vectors: np.ndarray) -> np.ndarray:
    """Sentence embeddings (one or a matrix of rows) with the background mean taken out, renormalised."""
    shifted = np.asarray(vectors, dtype=np.float32) - background_centre()
    return shifted / np.maximum(np.linalg.norm(shifted, axis=-1, keepdims=True), 1e-12)


def centred_cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine of two sentence embeddings once the background mean is taken out of both."""
    return float(centred(a) @ centred(b))


def background_word_centre() -> np.ndarray:
    """The mean embedding of the background set's most used words, framed (computed once per
    process; a mean settles well before the set's 1,800 words, a third of them is enough)."""
    if "word" not in _centres:
        counts, _ = _document_frequency()
        common = sorted(counts, key=lambda w: (-counts[w], w))[:_CENTRE_WORDS]
        vectors = np.asarray(get_embedder().embed([_WORD_FRAME.format(w) for w in common]), dtype=np.float32)
        _centres.setdefault("word", vectors.mean(axis=0))
    return _centres["word"]


def _word_embed(words: list[str]) -> np.ndarray:
    """Framed word embeddings with the background words' mean taken out, renormalised."""
    shifted = np.asarray(get_embedder().embed([_WORD_FRAME.format(w) for w in words]), dtype=np.float32)
    shifted -= background_word_centre()
    return shifted / np.maximum(np.linalg.norm(shifted, axis=1, keepdims=True), 1e-12)


def _idf(word: str) -> float:
    counts, total = _document_frequency()
    return math.log((total + 1) / (counts[word] + 1)) + 1.0


def _vectors(words: Sequence[str]) -> dict[str, np.ndarray]:
    """Centred embeddings of single words (``_word_embed``), computed once per process (the cache
    starts over when full)."""
    with _word_lock:
        if len(_word_vectors) > _WORD_CACHE_MAX:
            _word_vectors.clear()
        known = {w: _word_vectors[w] for w in words if w in _word_vectors}
    missing = sorted({w for w in words if w not in known})
    if missing:
        fresh = dict(zip(missing, _word_embed(missing), strict=True))
        with _word_lock:
            _word_vectors.update(fresh)
        known.update(fresh)
    return known


def words_embed(texts: Sequence[str]) -> None:
    """Embed the content words of these texts not embedded yet, in one pass (they are cached): a
    batch of requests then needs no model call of its own when it is compared word by word."""
    _vectors([w for text in texts for w in content_words(text)])


@dataclass(frozen=True)
class _Prepared:
    """A request's content words, their stems, embeddings (rows) and IDF weights."""

    stems: tuple[str, ...]
    matrix: np.ndarray
    weights: np.ndarray


@lru_cache(maxsize=8192)  # a user's window is compared again with each new message
def _prepare(text: str) -> _Prepared:
    words = content_words(text)
    vectors = _vectors(words)
    matrix = np.vstack([vectors[w] for w in words]) if words else np.zeros((0, 384), dtype=np.float32)
    return _Prepared(tuple(stem(w) for w in words), matrix, np.array([_idf(w) for w in words]))


def _align(sims: np.ndarray, weight_a: np.ndarray, weight_b: np.ndarray) -> float:
    """Symmetric, IDF-weighted mean of each word's best cosine to a word on the other side (0 when
    one side is empty)."""
    if sims.size == 0:
        return 0.0
    left = float((sims.max(axis=1) * weight_a).sum() / weight_a.sum())
    right = float((sims.max(axis=0) * weight_b).sum() / weight_b.sum())
    return (left + right) / 2


@dataclass(frozen=True)
class TaskSimilarity:
    whole: float  # all content words aligned
    residual: float  # the words the two do not share, aligned
    sentence: float  # centred cosine of the sentence embeddings (see ``centred``)

    @property
    def score(self) -> float:
        return self.residual + self.sentence

    @property
    def same_task(self) -> bool:
        return self.residual >= RESIDUAL_MIN and self.sentence >= SENTENCE_MIN


def _similarity(a: _Prepared, b: _Prepared, sentence: float) -> TaskSimilarity:
    sims = a.matrix @ b.matrix.T
    whole = _align(sims, a.weights, b.weights)
    shared = set(a.stems) & set(b.stems)
    keep_a = np.array([s not in shared for s in a.stems], dtype=bool)
    keep_b = np.array([s not in shared for s in b.stems], dtype=bool)
    # One request's words all inside the other's: nothing is left to differ, the whole decides.
    residual = (
        _align(sims[np.ix_(keep_a, keep_b)], a.weights[keep_a], b.weights[keep_b])
        if keep_a.any() and keep_b.any()
        else whole
    )
    return TaskSimilarity(whole=round(whole, 4), residual=round(residual, 4), sentence=round(sentence, 4))


def task_similarity(a: str, b: str, sentence: float | None = None) -> TaskSimilarity:
    """How alike two requests are as tasks (see the module docstring); ``sentence`` is the centred
    cosine of their sentence embeddings (``centred_cosine``) when the caller has them (computed
    here otherwise)."""
    if sentence is None:
        pair = get_embedder().embed([a, b])
        sentence = centred_cosine(pair[0], pair[1])
    return _similarity(_prepare(a), _prepare(b), sentence)


def same_task_matches(
    text: str, candidates: Sequence[str], vector: np.ndarray, candidate_vectors: Sequence[np.ndarray]
) -> list[tuple[int, TaskSimilarity]]:
    """The candidates that are the same kind of task as ``text`` *and* as another such candidate:
    a request counts toward a workflow only inside a triangle of mutual matches, which keeps one
    loose pairwise match from pulling unrelated requests together."""
    if not candidates:
        return []
    _vectors(content_words(text) + [w for c in candidates for w in content_words(c)])  # one batch for new words
    prepared = [_prepare(c) for c in candidates]
    own = _prepare(text)
    matrix = centred(np.vstack(candidate_vectors))
    sentences = matrix @ centred(vector)
    direct = []
    for index, other in enumerate(prepared):
        similarity = _similarity(own, other, float(sentences[index]))
        if similarity.same_task:
            direct.append((index, similarity))
    # The similarity is symmetric, so a candidate is kept once one partner is found: a window of
    # many same-task requests costs one comparison each instead of one per pair.
    kept: set[int] = set()
    for i, _ in direct:
        if i in kept:
            continue
        for j, _ in direct:
            if j == i:
                continue
            sentence = float(matrix[i] @ matrix[j])
            if _similarity(prepared[i], prepared[j], sentence).same_task:
                kept |= {i, j}
                break
    return [(i, similarity) for i, similarity in direct if i in kept]


# --- naming -------------------------------------------------------------------------------------

_OPENERS = re.compile(
    r"^(?:(?:hey|hi|hello|ok|okay|so|right)[,!.\s]+)?"
    r"(?:(?:please|pls|plz|kindly|can you|can u|could you|would you|will you|could u|help me with|help me|"
    r"i need you to|i need|i'd like|i want|we need|need|let's|lets)\s+)*",
    re.IGNORECASE,
)
_DEICTIC = re.compile(
    r"\s*(?:,|—|–|-|\(|:)?\s*\b(?:notes?|email|link|transcript|details?|file|text|info)?\s*"
    r"(?:below|above|attached|pasted|here(?!'s))\b\.?",
    re.IGNORECASE,
)
# "that" is left alone: "the letter that goes with my application" is no determiner.
_DETERMINER = re.compile(r"\b(?:this|these|those|my|our|today's|this week's)\b", re.IGNORECASE)
# A name says what the task is, not which instance: phrases that carry specifics (a number, a
# capitalised name: "for Monday to Friday", "for the Block C site", "to ticket 8812") are cut off
# at the preposition that opens them, and "me" goes from "give me / make me".
_PREPOSITIONS = frozenset("for to from with in on about at into using against under since during".split())
_CONJUNCTIONS = frozenset("and or then".split())  # a second clause ("... and tell me if") ends the name
_UNITS = frozenset("minute minutes min mins hour hours hr hrs day days week weeks month months year years".split())
_ME_AFTER = re.compile(r"^((?:give|make|get|find|send|show|write|draft|pull|dig up|put together)) me\b", re.IGNORECASE)
_DANGLING = frozenset(
    "a an the of on for from to with in into about and or by at my our your their this that these each every".split()
)
# Grammar, not content: a request phrased as a question or a statement about oneself names its task
# less well than an imperative one ("Match the bank lines..." over "Which payments...?").
_NOT_IMPERATIVE = re.compile(
    r"^(?:what|which|who|whom|how|why|when|where|is|are|was|were|do|does|did|can|could|would|should|"
    r"i|i'm|im|i've|we|we're|we've|my|our|here|here's|there|it|this|these|the|a|an)\b",
    re.IGNORECASE,
)
_INTRO = re.compile(r"^(?:from|in|on|for|using|based on|given|with)\b[^,]{0,60},\s*", re.IGNORECASE)
_TAIL = re.compile(r"\s*(?:[,;:?!—–(]| - | pls\b| please\b).*$", re.IGNORECASE)


def _specific(word: str, position: int) -> bool:
    """A number, or a capitalised name (not the first word, not an acronym such as "GP")."""
    bare = word.strip(".,;:!?'\"()")
    return any(c.isdigit() for c in bare) or (position > 0 and bare[:1].isupper() and not bare.isupper())


def _without_specifics(tokens: list[str], words: int) -> list[str]:
    """The head phrase (numbers and the names they follow dropped: "the Year 10 essay" -> "the
    essay"), then the prepositional phrases after it, up to the first that carries a specific or
    would pass ``words``."""
    cut = next(
        (
            k
            for k in range(1, len(tokens))
            if tokens[k].lower() in _PREPOSITIONS or (k > 2 and tokens[k].lower() in _CONJUNCTIONS)
        ),
        len(tokens),
    )
    head: list[str] = []
    skip_unit = False
    for token in tokens[:cut]:
        if any(c.isdigit() for c in token):
            if head and _specific(head[-1], len(head) - 1):
                head.pop()  # "Year 10", "Block 4"
            skip_unit = True
            continue
        if skip_unit and token.lower().strip(".,") in _UNITS:
            continue
        skip_unit = False
        head.append(token)
    kept = head[:words]
    if len(head) > words:
        return kept
    start = cut
    while start < len(tokens) and tokens[start].lower() not in _CONJUNCTIONS:
        end = next(
            (k for k in range(start + 1, len(tokens)) if tokens[k].lower() in _PREPOSITIONS | _CONJUNCTIONS),
            len(tokens),
        )
        phrase = tokens[start:end]
        if len(kept) + len(phrase) > words or any(_specific(w, start + n) for n, w in enumerate(phrase)):
            break
        kept += phrase
        start = end
    return kept


def request_core(text: str, words: int = 8) -> str:
    """A request trimmed to its verb-object phrase: no greeting or politeness, no pointer to an
    attachment ("notes below"), no trailing clause; capitalised, at most ``words`` words."""
    trimmed = _OPENERS.sub("", " ".join(text.split()))
    trimmed = _DEICTIC.sub("", trimmed)
    trimmed = _INTRO.sub("", trimmed)
    trimmed = _TAIL.sub("", trimmed).strip(" .")
    trimmed = _DETERMINER.sub("the", trimmed)
    trimmed = re.sub(r"\bthe the\b", "the", trimmed)
    trimmed = _ME_AFTER.sub(r"\1", trimmed)
    kept = _without_specifics(trimmed.split(), words) or text.split()[:words]
    while len(kept) > 2 and kept[-1].lower().strip(".,;:!?") in _DANGLING:
        kept.pop()  # "... on the" / "... for": a cut never ends on a function word
    name = " ".join(kept).rstrip(".,;:!?")
    return name[:1].upper() + name[1:]


def _base_verb(word: str) -> bool:
    """Whether a word can be a verb in its base form ("write", "triage", "plan"; not "customer",
    "references", "which"): an imperative request opens with one."""
    bare = word.lower().strip(".,;:!?'\"")
    return bare in getAllLemmas(bare).get("VERB", ())


# What may open a complement of the task ("for a part-time bookkeeper", "on fractions", "to my
# aunt", "out of the standup"), and the words that open a clause after it ("a workout I can do", "the
# customer who wants...").
_COMPLEMENT = _PREPOSITIONS | {"of", "out"}
_CLAUSE_SUBJECTS = frozenset("i we you they he she who which whose".split())
NAME_SUPPORT_MIN = 0.35  # a complement stays in a name when the other requests have a word this close to its head


def _ends_complement(word: str) -> bool:
    """Another complement, a clause subject, or a verb form that can only be a verb ("the buyer
    asking for...", "the colleagues leaving"): the complement before it ends there."""
    bare = word.lower().strip(".,;:!?'\"")
    if bare in _COMPLEMENT or bare in _CLAUSE_SUBJECTS:
        return True
    lemmas = getAllLemmas(bare)
    return set(lemmas) == {"VERB"} and bare not in lemmas["VERB"]


def _support(word: str, others: Sequence[str]) -> float:
    """How close the nearest word of the other requests is to this one (centred word cosine)."""
    own = content_words(word)
    if not own or not others:
        return 1.0
    vectors = _vectors(own + list(others))
    matrix = np.vstack([vectors[w] for w in others])
    return max(float((matrix @ vectors[w]).max()) for w in own)


def _shared_part(core: str, others: Sequence[str]) -> str:
    """A request's verb-object phrase without what belongs to this one instance: a complement whose
    head word no other request of the group echoes ("Plan a lesson on fractions" beside lessons on
    photosynthesis and WW1 -> "Plan a lesson"), a clause with a subject of its own, and, inside a
    complement kept, the modifiers no other request echoes."""
    tokens = core.split()
    kept = tokens[:1]
    k = 1
    while k < len(tokens):
        word = tokens[k].lower()
        if k > 1 and word in _CLAUSE_SUBJECTS:
            break
        if word not in _COMPLEMENT:
            kept.append(tokens[k])
            k += 1
            continue
        end = next((m for m in range(k + 1, len(tokens)) if _ends_complement(tokens[m])), len(tokens))
        phrase = tokens[k:end]
        heads = [w for w in phrase if content_words(w)]
        if not heads or _support(heads[-1], others) < NAME_SUPPORT_MIN:
            break
        kept += [w for w in phrase if w == heads[-1] or not content_words(w) or _support(w, others) >= NAME_SUPPORT_MIN]
        if end < len(tokens) and tokens[end].lower() not in _COMPLEMENT:
            break  # a clause of its own follows
        k = end
    while len(kept) > 2 and kept[-1].lower().strip(".,;:!?") in _DANGLING:
        kept.pop()
    return " ".join(kept)


def workflow_name(texts: Sequence[str]) -> str:
    """What a group of same-task requests is called: the clearest request (imperative first, then
    the one whose words align best with all the others), trimmed to its verb-object phrase, less
    the parts that only that request has (``_shared_part``)."""
    if len(texts) == 1:
        return request_core(texts[0])
    _vectors([w for t in texts for w in content_words(t)])
    # How well each request's words align with all the others' (the alignment is symmetric: each pair once).
    scores = [0.0] * len(texts)
    for i, j in itertools.combinations(range(len(texts)), 2):
        whole = task_similarity(texts[i], texts[j], 0.0).whole
        scores[i] += whole
        scores[j] += whole
    cores = [request_core(t) for t in texts]

    # Imperative requests first (a base-form verb opens the trimmed request, no question mark), then
    # the most central; ties go to the shorter (fewer details).
    def rank(i: int) -> tuple[bool, float, int]:
        first = cores[i].split()[0] if cores[i] else ""
        imperative = _base_verb(first) and not _NOT_IMPERATIVE.match(cores[i]) and "?" not in texts[i]
        return (imperative, round(scores[i], 3), -len(texts[i]))

    best = max(range(len(texts)), key=rank)
    others = [w for j, t in enumerate(texts) if j != best for w in content_words(t)]
    return _shared_part(cores[best], others) or cores[best]


_FORMAT = re.compile(
    r"\b(?:as|in|into)\s+(?:an?\s+|one\s+|two\s+|three\s+|a short\s+)?"
    r"((?:[\w-]+\s+){0,2}?(?:table|list|bullets?|bullet points|paragraphs?|csv|json|markdown|spreadsheet|"
    r"email|letter|memo|slides?|checklist|pairs|summary|outline|timeline|chart|leaflet|format))\b"
    r"|((?:\w+\s+)?\w+\s*(?:→|->)\s*\w+\s+pairs)",
    re.IGNORECASE,
)


def preferred_output(texts: Sequence[str]) -> str:
    """The output format the user asked for in these requests ("as a table", "crew member → van
    pairs"), the most recent one; empty when none was named."""
    for text in reversed(texts):
        match = _FORMAT.search(text)
        if match:
            return (match.group(1) or match.group(2)).strip()
    return ""


_STEP_LINE = re.compile(r"^\s*(?:#{1,4}\s+|\d+[.)]\s+|[-*•]\s+)(.+?)\s*$")


def learned_steps(*, name: str, output_format: str, example_output: str) -> list[str]:
    """A short list of what the workflow does: the task, the answer's structure as last given (its
    headings or first list items), and the format asked for."""
    steps = [name]
    structure = [m.group(1).strip(" *:")[:80] for m in map(_STEP_LINE.match, example_output.splitlines()) if m]
    if structure:
        steps.append("Answer in the structure used before: " + "; ".join(structure[:5]))
    if output_format:
        steps.append(f"Give the result as {output_format}")
    return steps


# --- prompt categories ----------------------------------------------------------------------------

# Nearest exemplar over embeddings: a few typical requests per category (written for this, kept
# apart from the workflow data). A prompt far from all of them is "other".
CATEGORY_EXEMPLARS: dict[str, tuple[str, ...]] = {
    "analysis": (
        "What are the main risks in this plan?",
        "Compare these two options and tell me which is better.",
        "Why did sales drop in the third quarter?",
        "Review this code and find the bugs.",
        "Assess this proposal against our criteria.",
    ),
    "generation": (
        "Write a blog post about our new feature.",
        "Draft an email to the client about the delay.",
        "Create a quiz for my students.",
        "Come up with five names for a bakery.",
        "Compose a short poem for a birthday card.",
    ),
    "lookup": (
        "What is the capital of Australia?",
        "When does the library open on Sundays?",
        "Find me papers about sleep and memory.",
        "What's the dosage of ibuprofen for adults?",
        "Who wrote this novel?",
        "How tall is Mount Everest?",
        "What does GDP stand for?",
        "In which year was the company founded?",
    ),
    "transformation": (
        "Translate this paragraph into French.",
        "Summarise this article in three bullets.",
        "Convert this table to CSV.",
        "Rewrite this in plain English.",
        "Turn these notes into a report.",
    ),
    "communication": (
        "Reply to this customer complaint.",
        "How should I respond to my manager's message?",
        "Write back to the landlord about the repair.",
        "Help me answer this email politely.",
        "Draft a response to this support ticket.",
    ),
    "planning": (
        "Plan my week so I can finish the report.",
        "Make a schedule for the project launch.",
        "Give me an itinerary for three days in Rome.",
        "Create a meal plan for next week.",
        "What steps should I take to move house?",
    ),
}
CATEGORY_MIN_SIMILARITY = 0.15  # below this to every exemplar: "other"

_category_matrix: tuple[list[str], np.ndarray] | None = None
_category_lock = threading.Lock()


def _categories() -> tuple[list[str], np.ndarray]:
    global _category_matrix
    with _category_lock:
        if _category_matrix is None:
            labels = [label for label, texts in CATEGORY_EXEMPLARS.items() for _ in texts]
            texts = [t for group in CATEGORY_EXEMPLARS.values() for t in group]
            _category_matrix = (labels, get_embedder().embed(texts))
        return _category_matrix


def prompt_categories(vectors: np.ndarray) -> list[str]:
    """The category of each prompt (analysis, generation, lookup, transformation, communication,
    planning or other), by the mean of its three nearest exemplars per category."""
    if len(vectors) == 0:
        return []
    labels, matrix = _categories()
    sims = np.asarray(vectors, dtype=np.float32) @ matrix.T
    names = list(CATEGORY_EXEMPLARS)
    result = []
    for row in sims:
        scores = {}
        for name in names:
            own = np.sort(row[[i for i, label in enumerate(labels) if label == name]])[-3:]
            scores[name] = float(own.mean())
        best = max(scores, key=scores.__getitem__)
        result.append(best if float(row.max()) >= CATEGORY_MIN_SIMILARITY else "other")
    return result


def workflow_finding(item: AnalyzerInput) -> WorkflowFinding | None:
    """The workflow a request reveals when it is the same task as at least ``MIN_MATCHES`` earlier
    requests (``item.similar_past_prompts`` holds the same-task ones: see ``same_task_matches``)."""
    if item.match_count < MIN_MATCHES:
        return None
    texts = [p.summary for p in reversed(item.similar_past_prompts)] + [item.current_message]
    output = preferred_output(texts)
    name = workflow_name(texts)
    similarity = max((p.similarity for p in item.similar_past_prompts), default=0.0)
    return WorkflowFinding(
        workflow_name=name,
        trigger_pattern=request_core(item.current_message, words=16),
        learned_steps=learned_steps(name=name, output_format=output, example_output=""),
        preferred_output=output,
        confidence=round(min(0.95, 0.4 + 0.1 * item.match_count + 0.2 * similarity), 3),
    )
