"""What is stored: the user's own words, as a standing instruction.

A preference's description is the user's request with the parts that only say *that* it is a
standing request (habit markers, politeness, lead-ins) taken away: "Always answer me in
Spanish" -> "Answer me in Spanish."; "I'd prefer British spelling please (colour, not color)"
-> "British spelling (colour, not color)." Nothing is replaced by a canned phrase, so every
key word the user chose stays. A memory keeps the statement itself.
"""

from __future__ import annotations

import re

from lemminflect import getLemma

MAX_DESCRIPTION = 300
_SENTENCE = re.compile(
    r"(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bSt\.)(?<!\bvs\.)(?<!\bMrs\.)(?<!\bProf\.)(?<!\be\.g\.)(?<!\bi\.e\.)"
    r"(?<=[.!?])\s+(?=[A-Z0-9'\"(])|\n+"
)
_HABIT_PHRASE = (
    r"from now on|going forward|in future|in the future|from here on(?: out| in)?|from this point (?:on|forward)|"
    r"from today on"
)
_ANYWHERE = re.compile(rf"(?:,\s*)?\b(?:{_HABIT_PHRASE})\b(?:\s*,)?", re.IGNORECASE)
# Markers that are words of content elsewhere ("questions about tax in general") go only when set off
# by commas: "Could you, in general, skip the pleasantries?"
_ENCLOSED = re.compile(r",\s*(?:in general|generally|by default|as a rule|always|usually)\s*,", re.IGNORECASE)
SHORT_MESSAGE_WORDS = 30  # up to this, every sentence but small talk is kept
_LEAD_IN = re.compile(
    r"^(?:(?:hey|hi|so|ok|okay|also|and|honestly|actually|btw|fyi|oh|um|look|right|one more thing|quick one|"
    r"from now on|going forward|in future|in the future|in general|generally|by default|as a rule|always|"
    r"please|pls|plz|kindly)\b[,:;!.\s-]*)+",
    re.IGNORECASE,
)
_ASK_LEAD = re.compile(
    r"^(?:(?:could|can|would|will) (?:you|u|ya),?(?: please| pls| plz)?(?: (?:always|just))?"
    r"(?: (?:be able|be so kind as) to)?(?: always)?\s+|"
    # a request asked as a question: "is it possible to ...", "do you think you could ...", "any chance you could"
    r"(?:is it|would it be|will it be) (?:possible|ok|okay|alright|feasible)(?: for you)? to(?: always)?\s+|"
    r"(?:do you think )?(?:you could|any chance you could|any chance of)(?: please)?(?: always)?\s+|"
    r"i(?:'d| would)(?: really| much)? (?:like|prefer|love|rather)(?: it)?(?: if)?(?: you)?(?: to)?\s+|"
    r"i (?:want|need) you to\s+|i(?:'d| would) appreciate (?:it )?if you(?: could)?\s+|"
    r"i (?:prefer|like)(?: it)?(?: when you| if you)?\s+|"
    r"(?:make sure|remember) (?:to|that you)(?: always)?\s+|"
    r"(?:let's|let us) (?:always\s+)?)",
    re.IGNORECASE,
)
_TRAILER = re.compile(
    rf"[\s,;:\u2014-]*\b(?:please|pls|plz|thanks|thank you|thx|{_HABIT_PHRASE}|"
    r"in general|by default|always|every time|each time|for me|ok\??|okay\??|if you can|if possible)\b[\s.!?]*$",
    re.IGNORECASE,
)
_INLINE_PLEASE = re.compile(r"\b(?:please|pls|plz)\b", re.IGNORECASE)
# "Would you mind using British spelling?" asks for "Use British spelling": the gerund is the instruction.
_MIND = re.compile(
    r"^(?:(?:would|could|do|will) (?:you|u) )?mind(?: please)?(?: (?:always|also|just))?\s+(?P<neg>not\s+)?"
    r"(?P<verb>[a-z]+ing)\b",
    re.IGNORECASE,
)
_STANDING = re.compile(
    r"\b(always|never|whenever|every\b|from now on|going forward|in future|by default|don't|do not|stop|avoid|"
    r"prefer|rather|instead of|not\b|no\b|use|call me|address me)",
    re.IGNORECASE,
)
_FILLER = re.compile(
    r"^(?:thanks?|thank you|cheers|privacy thing|anyway\b.*|sorry\b.*|mind if i ask[^?]*\?|just so you know)[.!]*$",
    re.IGNORECASE,
)


# A sentence whose request points back at what the one before it said ("So whenever you do a price
# breakdown, do it that way."): stored alone it says nothing of what is asked.
_REFERS_BACK = re.compile(
    r"\b(?:(?:that|this|the same|the above) (?:way|format|layout|style|order|structure|setup)|"
    r"like (?:that|this|above)|as (?:above|described|explained)|(?:do|does|doing) (?:that|this))\b",
    re.IGNORECASE,
)
# Where the sentence before it breaks into parts, the last parts hold what is referred to ("Sorry for the
# wall of text: the client wants prices ex-GST."), as many as make CONTEXT_WORDS words.
_PARTS = re.compile(r"([:;\u2014]\s+)")
CONTEXT_WORDS = 6


def _tidy(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip(" ,;:-\u2014")
    text = re.sub(r"\s*,(\s*,)+", ",", text)
    text = re.sub(r"\s+([,.;:!?)])", r"\1", text)
    text = re.sub(r"[,;:]+([.!?])", r"\1", text).rstrip(",;:")
    text = re.sub(r"\(\s+", "(", text)
    return text


def instruction(text: str) -> str:
    """The standing instruction in the user's words (see the module docstring)."""
    written = [s.strip() for s in _SENTENCE.split(text.strip()) if s and s.strip()]
    sentences = [s for s in written if not _FILLER.match(s.strip())] or written or [text.strip()]
    if len(sentences) > 1 and len(text.split()) > SHORT_MESSAGE_WORDS:
        # The sentence that asks for something standing; the others are reasons and small talk.
        first = max(sentences, key=lambda s: (bool(_STANDING.search(s)), -sentences.index(s)))
        chosen = first
    else:
        first = sentences[0]
        chosen = " ".join(_strip(s) if i == 0 else s for i, s in enumerate(sentences))
    if _REFERS_BACK.search(first):
        chosen = _with_what_it_refers_to(written, first, chosen)
    result = _ENCLOSED.sub(",", _ANYWHERE.sub(",", chosen))
    for _ in range(3):  # lead-ins stack: "Hey, from now on, could you please ..."
        stripped = _imperative(_ASK_LEAD.sub("", _LEAD_IN.sub("", result)))
        stripped = _TRAILER.sub("", stripped)
        if stripped == result:
            break
        result = stripped
    result = _tidy(_INLINE_PLEASE.sub("", result))
    if len(result.split()) < 2:  # stripping left too little: keep what the user wrote
        result = _tidy(chosen)
    result = result[:MAX_DESCRIPTION]
    if not result:
        return ""
    result = result[0].upper() + result[1:]
    if result.endswith("?"):  # "Could you always ...?" asks for a rule: store it as one
        result = result[:-1].rstrip()
    return result if result[-1] in ".!" else result + "."


def _with_what_it_refers_to(written: list[str], first: str, chosen: str) -> str:
    """``chosen`` (a request whose first sentence points back: "... do it that way.") after what it refers
    to: the sentence before it, past any bare thanks or greeting, also when that was set aside as small
    talk ("Sorry for the wall of text: ..."), its last parts only; shortened from the front so that the
    request itself is always stored whole."""
    at = written.index(first) if first in written else 0
    before = [s for s in written[:at] if not (_FILLER.match(s) and len(s.split()) <= 3)]
    if not before:
        return chosen
    parts = _PARTS.split(before[-1])  # part, separator, part, ...
    context = parts.pop()
    while parts and len(context.split()) < CONTEXT_WORDS:
        separator = parts.pop()
        context = f"{parts.pop()}{separator}{context}"
    request = _strip(chosen)
    room = MAX_DESCRIPTION - len(request) - 1
    if room <= 0:
        return chosen
    context = _tidy(context)
    if len(context) > room:
        context = context[len(context) - room :].split(" ", 1)[-1]
    return f"{context[:1].upper()}{context[1:]} {request[:1].upper()}{request[1:]}"


def _strip(sentence: str) -> str:
    """A sentence less its lead-ins; a request asked as a question ("Could you stop ...?") is kept as
    the instruction it asks for, so its question mark goes too."""
    stripped = _imperative(_ASK_LEAD.sub("", _LEAD_IN.sub("", sentence)))
    if stripped != sentence and stripped.endswith("?"):
        stripped = stripped[:-1].rstrip() + "."
    return stripped


def _imperative(text: str) -> str:
    """ "(would you) mind using X" -> "use X", "mind not adding X" -> "don't add X" (the user's verb, in
    the base form lemminflect gives it)."""
    match = _MIND.match(text)
    if match is None:
        return text
    lemmas = getLemma(match["verb"].lower(), upos="VERB")
    if not lemmas:
        return text
    verb = ("don't " if match["neg"] else "") + lemmas[0]
    return verb + text[match.end() :]


def memory_content(text: str) -> str:
    """A memory keeps the user's statement (whitespace tidied, bounded)."""
    return re.sub(r"\s+", " ", text).strip()[:1000]


_COMMITMENT = re.compile(
    r"\b(i will|i'll|i promised|i have to|i must|i need to|deadline|due (on|by)|"
    r"by (mon|tues|wednes|thurs|fri|satur|sun)day)\b",
    re.IGNORECASE,
)
_LIKING = re.compile(
    r"\b(prefer|like|love|hate|dislike|enjoy|can't stand|favou?rite|into|fan of|rather)\b", re.IGNORECASE
)
_LESSON = re.compile(r"\b(learned|learnt|lesson|turns out|never again|realised|realized)\b", re.IGNORECASE)
_OTHERS = re.compile(r"^(my|our|the) \w+", re.IGNORECASE)


def memory_kind(text: str) -> str:
    """fact | preference | commitment | lesson | context, from the statement's wording."""
    if _COMMITMENT.search(text):
        return "commitment"
    if _LESSON.search(text):
        return "lesson"
    if _LIKING.search(text):
        return "preference"
    if _OTHERS.match(text.strip()) and not re.match(r"^my (name|age|birthday|blood)", text.strip(), re.IGNORECASE):
        return "context"
    return "fact"
