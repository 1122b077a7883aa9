"""What the local analyzer's classifiers read about a message: its words, its sentence embedding,
a few structural cues, and how it relates to the conversation before it.

No decision is taken here; every cue is one feature among many for a classifier fitted on
labelled messages (``data/labelled_messages.jsonl``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from learning.safety import PATTERNS as STEERING_PATTERNS

_WORD = re.compile(r"[a-z']+")
_HABIT = re.compile(
    r"\b(always|from now on|going forward|in (the )?future|from here on|from this point|in general|every time|"
    r"each time|whenever|"
    r"never|any more|anymore|by default|all the time|in your (answers|replies|responses)|generally|"
    r"every|all (your|the)|i prefer|i'd prefer|i like|please always|stop)\b"
)
_ONE_OFF = re.compile(
    r"\b(this (one|time|email|reply|answer|slide|draft|report|list|doc\w*|message|paragraph|table|section)|"
    r"just (for )?this|for now|today|tomorrow|tonight|this week|for the \w+ meeting|here)\b"
)
_ASSISTANT_OUTPUT = re.compile(
    r"\b(your|ur|you) (answers?|repl(y|ies)|responses?|messages?|writing|explanations?|tone)\b"
)
_DEICTIC = re.compile(r"\b(this|these|that one|the following|below|above|attached|here is|here's)\b|:\s*$|:\s|\"|\n")
_CONTRADICT_OPEN = re.compile(
    r"^(no\b|nope\b|nah\b|actually\b|wrong\b|not quite\b|not what\b|incorrect\b|correction\b|that's not\b|"
    r"that is not\b|you (got|misread|mixed)\b|i said\b|i asked for\b|i meant\b|again,|not like that\b|"
    r"that's wrong|hmm\b|wait\b)"
)
_REPEAT = re.compile(
    # "three times" is a repetition, "three times a day" / "three times last year" a frequency
    r"\b(again|already|(two|three|four|five|\d+) times(?! (a|an|per|each|every|last|this) )|third time|"
    r"keep (doing|getting|making|ignoring|forgetting)|"
    r"still (not|doesn't|don't|wrong)|repeat(ing)? myself|told you|as i said|like i (said|mentioned)|"
    r"as i mentioned|i mentioned|how many times|every single time|for the last time|once again|yesterday|"
    r"last time|same mistake|you forgot|re-?explain)\b"
)
_FRUSTRATION = re.compile(r"\b(ugh|argh|annoy\w*|frustrat\w*|useless|ridiculous|seriously|give up|wasting)\b")
_TASK_OPEN = re.compile(
    r"^(please |can you |could you |pls |plz |now )?(write|draft|summari[sz]e|translate|create|generate|make|list|"
    r"turn|rewrite|format|shorten|explain|give me an?|compose|outline|convert|put|prepare|help me|boil|remind|email|"
    r"send|book|schedule|reply|respond|update|review|compare|analy[sz]e|fix|add|sort|organi[sz]e|"
    r"bullet-point|find|check|calculate|plan|suggest|recommend|tell me|show me|what|how|why|when|where|who)\b"
)
_FIRST_PERSON = re.compile(r"^(i|i'm|im|i've|i'd|my|we|we're|our|i am)\b")
_PREFER_WORDS = re.compile(r"\b(prefer|like|love|hate|dislike|avoid|enjoy|can't stand|favou?rite)\b")
_IMPERATIVE_TO_ASSISTANT = re.compile(
    r"\b(use|give|write|answer|reply|respond|call|address|keep|don't|do not|skip|add)\b"
)
# Saying it again: the user has asked, told or corrected this before (a pain point, not a first correction).
_ASKED_BEFORE = re.compile(
    r"\b(keep (saying|telling|asking|explaining|reminding|repeating|mentioning|having to)|i keep \w+ing|"
    r"(?<!could )(?<!can )(?<!would )(?<!will )you keep \w+ing|"
    r"twice(?! (a|an|per|each|every) )|repeatedly|over and over|(second|third|fourth|fifth|nth|\d+(st|nd|rd|th)) time|"
    r"(said|told|mentioned|explained|asked|gave|given|pointed|wrote|showed)( you)?( (this|that|it|them))? "
    r"(before|already|earlier|at the start|originally|twice|in every)|"
    r"as (i|we) (asked|explained|discussed|agreed|said|mentioned|wrote)|we went over|went through this|"
    r"have to keep|keep having|remind(ing)? you|you never remember|you always forget|all week|all day|"
    r"in circles|talking to myself|losing (my )?patience|how often|not again|"
    r"every single time)\b"
)
# A request about the output at hand: its audience, occasion or size names one job, not a habit.
_THIS_JOB = re.compile(
    r"\b(for (my|our|the|a|an|tomorrow's|today's|friday's|monday's|next) (\w+ ){0,2}"
    r"(talk|meeting|presentation|post|email|call|slide|deck|flyer|card|newsletter|interview|report|client|class|"
    r"event|party|trip|visit|review|pitch|toast|speech)|give me (a|an|one|two|three|four|five|six|ten|\d+)\b|"
    r"(write|draft|make|create|compose|prepare) (me )?(a|an|one|two|three|four|five|\d+)\b|"
    r"this (one|time)|just this|for now|right now|below|attached|pasted)\b"
)
# A rule about a kind of situation or all output: "when you mention...", "in all correspondence", "any X".
_SCOPE = re.compile(
    r"\b(when(ever)? (you|i|we|there|it|something|anything)\b|if (you|something|anything|there)\b|"
    r"(in|for|to|on) (all|any|every|each)\b|(any|every|each|all) \w+ (you|that you|i)\b|"
    r"anything (you|customer|client)|everything (you|i)|by default|as a rule|not ['\"]?\w+['\"]?\s*[,—-]|"
    r"instead of|rather than|\bnot\b \w+ (but|—))"
)
# A statement of fact about the user or their world: "we use...", "our X is...", "I'm a...", "the X is...".
_DECLARATIVE = re.compile(
    r"^(fyi[, ]+|just so you know[, ]+|btw[, ]+)?(i'm|i am|im|i have|i've|i don't|i do not|i work|i live|"
    r"i use|we use|we're|we are|we have|we don't|our|my|the \w+( \w+)? (is|are|was|runs|uses|has|have|wants|"
    r"prefers|starts|ends)|there's|there is|[a-z]+ here\b)"
)
# Thanks and acknowledgements ("Cheers, that's sorted it."): nothing to change, nothing to keep.
_ACKNOWLEDGE = re.compile(
    r"^(thanks|thank you|thx|ty|cheers|great|perfect|nice|awesome|brilliant|lovely|excellent|cool|ok|okay|got it|"
    r"sounds good|that works|that's (great|perfect|it|sorted|fine|better)|much better|all good|sorted)\b"
)
# Pointing back at what the assistant just produced ("the figures you just gave", "your last reply").
_REFERS_BACK = re.compile(
    r"\b(you (just|previously) \w+|(your|the|that) (last|previous|earlier) (answer|reply|response|email|draft|"
    r"message|version|list|table|code|one)|what you (wrote|sent|gave|said|suggested)|in (that|your) (last )?"
    r"(answer|reply|email|draft|list|table|code|summary))\b"
)
# A request asked as a question ("could you ...?", "would you mind ...", "is it possible to ..."), and the
# habit markers that make such a question a standing rule ("Could you answer in Spanish from now on?")
# rather than a job ("Could you translate this into Spanish?"). A linear model cannot AND the two cues
# itself, so the pair is a feature of its own.
_ASK_FORMS = (
    r"(?:could|can|would|will) (?:you|u|ya)\b|(?:would|do) you mind\b|mind\b|"
    r"(?:is|would) it (?:be )?(?:possible|ok|okay|alright|doable)\b|"
    r"do you (?:think|reckon) you could\b|any chance\b|are you able\b|"
    # the same in the other languages whose markers _FOR_LATER knows
    r"(?:könntest|kannst|würdest) du\b|(?:könnten|können|würden) sie\b|¿?(?:podrías|podrias|puedes)\b|"
    r"(?:pourrais|peux)[- ]tu\b|(?:pourriez|pouvez)[- ]vous\b|(?:você|vc) (?:pode|poderia)\b|(?:podes|poderias)\b"
)
# The ask opens the message, after a greeting or filler, a lead-in clause ("Going forward, is it possible to ..."), or
# a marker for later ("From now on would you ..."); or it follows a reason (", so could you ...").
_ASK = re.compile(
    r"^(?:\W*(?:hey|hi|ok|okay|so|also|quick (?:ask|question)|one thing)\b\W*)*"
    r"(?:[a-z ,]{1,60},\s*|(?:from now on|going forward|in (?:the )?future|from here on|by default)\s+)?"
    rf"(?:{_ASK_FORMS})|,\s*so\s+(?:{_ASK_FORMS})"
)
# "From now on" in the other languages the labelled set speaks (German, Spanish, French, Portuguese): a habit marker
# of a question (_STANDING_MARKER) and a rule for later (_FOR_LATER).
_OTHER_LANGUAGES_FOR_LATER = (
    r"ab jetzt|ab sofort|von nun an|künftig|in zukunft|a partir de ahora|de ahora en adelante|desde ahora|"
    r"désormais|dorénavant|à partir de maintenant|a partir de agora|de agora em diante|daqui (pra|para) frente"
)
# Only markers about the assistant's answers: "always"/"never" count right after the ask ("could you always",
# "would you mind never"), not inside a question about the world ("could you tell me whether I should always
# back up?"; grouped CV: 8 mislearned of 383 stored against 13 with any "always").
_STANDING_MARKER = re.compile(
    r"\b(from now on|going forward|in (the )?future|from here on|from this point|(every time|each time|whenever) you|"
    r"by default|in general|as a rule|any ?more|make (it )?a habit|in (all|every) (your|my)|all your)\b|"
    r"\b(you|u|ya|mind|to)( please| also| just)? (always|never)\b|"
    rf"\b({_OTHER_LANGUAGES_FOR_LATER})\b"
)
# Words that say a message sets a rule for later turns: such a message is never one more instance of a
# task, whatever the type model makes of it (a standing request said three times is not a workflow).
_FOR_LATER = re.compile(
    r"\b(from now on|going forward|in (the )?future|from here on|from this point (on|forward)|by default|"
    r"as a (general )?rule|(every time|whenever|each time) (you|i ask)|"
    rf"{_OTHER_LANGUAGES_FOR_LATER})\b"
)


# Asking the assistant to do something always or never, as a rule for later: right after "you" or an ask ("would you
# mind always ...", "I want you to never ..."), or opening a sentence ("Always cite sources."); not "how to never lose
# at chess", "never mind", "all your findings".
_ALWAYS_NEVER = re.compile(
    r"\b(you|u|ya|mind)( to)?( please| also| just)? (always|never)\b|(^|[.!?]\s+)(please )?(always|never)\b(?! mind)|"
    r"\bmake (it )?a habit\b"
)
# What the user asks to have told to somebody else: a marker after it is the content of a task or a question ("Draft
# an email announcing that going forward...", "how do I tell my kids that from now on..."), not the user's rule. A
# reporting verb counts when a "that" clause follows it, or an addressee who is not the user ("tell my kids", "let the
# team know", "say to the staff"); "tell me ... from now on", "say it in Spanish from now on" are the user's own rules.
_REPORTING = (
    r"tell(s|ing)?|told|explain(s|ing)?|announc(e|es|ing)|say(s|ing)?|said|inform(s|ing)?|notify(ing)?|warn(s|ing)?|"
    r"remind(s|ing)?"
)
_REPORTS = re.compile(
    rf"\b({_REPORTING})\b(?! (me|us)\b)[^.!?;:\n]*\bthat\b|"
    r"\b(tell(s|ing)?|told|inform(s|ing)?|notify(ing)?|warn(s|ing)?|remind(s|ing)?) (?!(me|us|you|myself)\b)"
    r"(the |my |our |all |every |his |her |their )?\w+|"
    r"\blet(ting)? (?!(me|us)\b)\w+( \w+)? know\b|"
    r"\b(say(s|ing)?|said|explain(s|ing)?|announc(e|es|ing)) to (?!(me|us)\b)\w+|"
    # the same in the other languages whose markers _FOR_LATER knows: a reporting verb, then a "that" clause ("a
    # dizer que a partir de agora...", "dire à mes collègues que désormais...", "sagen, dass ab jetzt...")
    r"\b((dizer|decir|avisar|informar|explicar|anunciar|lembrar|recordar)(-?(le|les|lhe|lhes))?|"
    r"diz(e|em)?|diga(m|s)?|di(le|les)|avis(a|e|em|en)|inform(a|e|er|ez|em|en)|explic(a|ue|uen)|anunci(a|e|en)|"
    r"dire|dis|dites|annonc(er|e|ez)|expliqu(er|e|ez)|préven(ir|ez)|rappel(er|le|ez)|sag(en|e|t)|mitteil(en)?|"
    r"erklär(en|e|t)|informier(en|e|t)|ankündig(en|e|t)|bescheid|schreib(en|e|t)?|escrib(ir|e|a)|escrev(er|e|a)|"
    r"écri(re|s|vez))\b(?![ -](me|moi|nous|mir|mich|uns)\b)[^.!?;:\n]*"
    r"\b(que|dass)\b"
)
# Quoted text; a single-quoted span stays within one sentence, so an elision ("'90s") cannot reach a later apostrophe.
_QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”|(?<!\w)'[^'.!?;\n]*[.!?]?'(?!\w)|‘[^’]*’")


# A class of what the assistant produces ("in all the JS you show me", "any schedule you make for me"): a rule for
# later unless its sentence names the item at hand ("Number all the steps you give me in this recipe.").
_CLASS_OF_OUTPUT = re.compile(
    r"\b(any|all|every|each) (the )?(\w+ ){1,2}(you|u) (write|show|give|make|send|draft|propose|suggest|produce|"
    r"create|generate|recommend)\b"
)
_AT_HAND = re.compile(r"\b(this|these|today|tonight|tomorrow|above|below|attached|here|for now)\b")


def sets_a_rule_for_later(text: str) -> bool:
    """The message says it applies from now on ("..., from now on?", "by default, ...", ``_FOR_LATER``) or asks the
    assistant to do something always or never (``_ALWAYS_NEVER``); a marker inside quotes or in what the user asks to
    have told to somebody else (``_REPORTS``, in the same sentence) does not count."""
    lowered = _QUOTED.sub(" ", text.lower())
    for pattern in (_FOR_LATER, _ALWAYS_NEVER, _CLASS_OF_OUTPUT):
        for marker in pattern.finditer(lowered):
            sentence = re.split(r"[.!?;:]\s|\n", lowered[: marker.start()])[-1]
            if _REPORTS.search(sentence):
                continue
            if pattern is _CLASS_OF_OUTPUT and _AT_HAND.search(
                sentence + re.split(r"[.!?;]\s|\n", lowered[marker.start() :])[0]
            ):
                continue
            return True
    return False


def asks_the_assistant(text: str) -> bool:
    """The message is a request put as a question ("Could you ...", "Would you mind ..."): see ``_ASK``."""
    return bool(_ASK.search(text.strip().lower()))


_THIRD_PARTY = re.compile(
    r"^(my|our) (\w+ )?(boss|manager|wife|husband|partner|kids?|son|daughter|team|client|cfo|ceo)\b"
)


def cues(text: str) -> np.ndarray:
    """Structural cues of the message alone, as a small dense vector."""
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
            bool(_ONE_OFF.search(lowered)),
            bool(_PREFER_WORDS.search(lowered)),
            bool(_IMPERATIVE_TO_ASSISTANT.search(lowered)),
            bool(_THIRD_PARTY.search(lowered)),
            bool(_ASKED_BEFORE.search(lowered)),
            bool(_THIS_JOB.search(lowered)),
            bool(_SCOPE.search(lowered)),
            bool(_DECLARATIVE.search(lowered)) and "?" not in lowered,
            bool(re.search(r"\b(you|your|ur)\b", lowered)),
            bool(_ACKNOWLEDGE.search(lowered)),
            bool(_REFERS_BACK.search(lowered)),
            bool(_ASK.search(lowered)),
            bool(_ASK.search(lowered)) and bool(_STANDING_MARKER.search(lowered)),
        ],
        dtype=np.float32,
    )


def steering_cues(text: str) -> np.ndarray:
    """Which of learning.safety's steering phrases occur (one feature each), plus fake markup."""
    raw = text or ""
    return np.array(
        [bool(p.search(raw)) for p in STEERING_PATTERNS.values()]
        + [bool(re.search(r"(^|\n)\s*(\[?system\]?:|<\/?system>|###\s*system)", raw, re.IGNORECASE))],
        dtype=np.float32,
    )


PREVIOUS_CHARS = 400


@dataclass(frozen=True)
class Turn:
    """What the analyzer reads about one user message: the text and what came just before it."""

    text: str
    previous_assistant: str  # "" when the message opens the conversation
    earlier_user: tuple[str, ...] = ()  # the user's own earlier turns in the session, oldest first


def turn_from_context(text: str, recent_context: list[dict[str, str]]) -> Turn:
    """The previous assistant message and the user's earlier turns from AnalyzerInput.recent_context."""
    previous = ""
    for message in reversed(recent_context):
        if message.get("role") == "assistant":
            # Its opening says what it did ("Here's the list, sorted alphabetically"); embedding a long
            # answer in full would cost more than the message itself.
            previous = (message.get("content") or "")[:PREVIOUS_CHARS]
            break
    earlier = tuple((m.get("content") or "")[:PREVIOUS_CHARS] for m in recent_context if m.get("role") == "user")
    return Turn(text=text, previous_assistant=previous, earlier_user=earlier)


def context_cues(turn: Turn) -> np.ndarray:
    """How the message relates to the turns before it: answering a question, echoing the previous
    answer's words, saying again what the user said earlier (word overlaps, no embedding)."""
    mine = set(_WORD.findall(turn.text.lower())) - _STOP
    previous = turn.previous_assistant.strip().lower()
    shared = len(mine & (set(_WORD.findall(previous)) - _STOP)) / max(1, len(mine)) if previous else 0.0
    earlier = max(
        (len(mine & (set(_WORD.findall(u.lower())) - _STOP)) / max(1, len(mine)) for u in turn.earlier_user),
        default=0.0,
    )
    return np.array(
        [bool(previous), previous.endswith("?"), shared, bool(turn.earlier_user), earlier], dtype=np.float32
    )


_STOP = frozenset(
    "a an the and or but if of to in on for with at by from is are was were be been it its this that these those "
    "i you me my your we our he she they them his her their not no do does did so as just please".split()
)
