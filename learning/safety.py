"""Learned text is data, not instructions.

Whatever a user typed (a preference in their words, a remembered fact, the reason they gave
for a thumbs-down) may end up in a context block. In their own context it is rendered quoted,
as what they said. It reaches anybody else's context only through a reviewed promotion, and
text that tries to steer the assistant (prompt injection, or orders about what to tell other
people) is flagged ``needs_review`` and never shared.
"""

from __future__ import annotations

import re

_PATTERNS: dict[str, re.Pattern[str]] = {
    "override": re.compile(
        r"\b(?:ignore|disregard|forget|override|bypass)\b[^.\n]{0,40}\b(?:instructions?|prompts?|rules?|guidelines?|"
        r"guardrails?|polic(?:y|ies)|system)\b",
        re.IGNORECASE,
    ),
    "role": re.compile(
        r"\b(?:you are now|from now on,? you|act as (?:an? )?(?:admin|system|developer)|pretend (?:to be|you are)|"
        r"new (?:system )?instructions?|system prompt|jailbreak|developer mode)\b",
        re.IGNORECASE,
    ),
    "others": re.compile(
        r"\b(?:tell|inform|say to|reply to|answer|respond to|assure|notify|convince)\b[^.\n]{0,30}"
        r"\b(?:every(?:one|body| user)|all (?:the )?(?:users|people|staff|members|employees|customers)|other users|"
        r"any(?:one|body) (?:who|that)|the (?:whole )?team|each user)\b",
        re.IGNORECASE,
    ),
    "secrets": re.compile(
        r"\b(?:reveal|print|show|leak|dump)\b[^.\n]{0,30}"
        r"\b(?:system prompt|api keys?|passwords?|secrets?|credentials)\b",
        re.IGNORECASE,
    ),
}


def steering_reasons(text: str) -> list[str]:
    """Why this text reads like an attempt to steer the assistant (empty: it does not)."""
    return [name for name, pattern in _PATTERNS.items() if pattern.search(text or "")]


def is_steering(text: str) -> bool:
    return bool(steering_reasons(text))


def quoted(text: str, limit: int = 500) -> str:
    """The text as a quotation on one line: it cannot close its quote or start a new block."""
    flat = " ".join((text or "").split())[:limit]
    return '"' + flat.replace('"', "'").replace("[", "(").replace("]", ")") + '"'
