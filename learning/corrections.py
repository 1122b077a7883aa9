"""What a user's edit of a tool's output says about their taste, derived from the two texts.

The client reports what it showed and what the user kept; the correction is computed here,
never taken on trust. Each correction has a type and a direction, so that repeated edits in
the same direction can be counted:

* ``length``: ``shorter`` / ``longer`` (by how much, in words);
* ``tone``: ``more_formal`` / ``more_casual`` (markers of register on either side);
* ``structure``: ``bullets`` / ``table`` / ``prose`` (the layout the user changed it to);
* ``order``: ``moved_up:<item>`` (an item the user moved towards the top);
* ``section``: ``removed:<heading>`` / ``added:<heading>``.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

# A change under these is noise (a typo fixed, a word swapped), not a direction.
LENGTH_CHANGE = 0.15
TONE_CHANGE = 2
_WORD = re.compile(r"[A-Za-z0-9']+")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
# Headings: "# Title" (markdown), "**Title**" or "**Title**:" (bold line), "Title:" (a short line
# ending in a colon). Matched on the stripped line, with no stacked quantifiers (no backtracking).
_MD_HEADING = re.compile(r"#{1,6}\s+(?P<text>.+)")
_BOLD_HEADING = re.compile(r"\*\*(?P<text>[^*]{1,60})\*\*:?")
_COLON_HEADING = re.compile(r"(?P<text>[A-Z][^.!?:]{0,50}):")
# Contractions (straight or curly apostrophe); a possessive 's is not one.
_CONTRACTION = re.compile(r"\b\w+['’](?:t|re|ve|ll|d|m)\b|\b(?:it|that|there|what|he|she|let)['’]s\b", re.IGNORECASE)
_CASUAL = re.compile(
    r"\b(?:hey|hi there|yeah|yep|nope|gonna|wanna|gotta|kinda|cheers|awesome|cool|super|lol|btw|thx|no worries)\b|!",
    re.IGNORECASE,
)
_FORMAL = re.compile(
    r"\b(?:dear|sincerely|regards|kindly|therefore|furthermore|however|accordingly|pursuant|please find|"
    r"i would like to|we would like to|respectfully|yours faithfully|yours truly)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Correction:
    type: str
    direction: str
    detail: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def words(text: str) -> int:
    return len(_WORD.findall(text))


def _label(text: str) -> str:
    """An item or heading as a short, quotable label (lowercase, no quotes or markup)."""
    cleaned = re.sub(r"[^\w\s&/-]", "", _BULLET.sub("", text)).strip().lower()
    return " ".join(cleaned.split()[:8])[:60]


def _formality(text: str) -> int:
    return len(_FORMAL.findall(text)) - len(_CASUAL.findall(text)) - len(_CONTRACTION.findall(text))


def _layout(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return "empty"
    if sum(bool(_TABLE_ROW.match(line)) for line in lines) >= 2:
        return "table"
    if sum(bool(_BULLET.match(line)) for line in lines) >= max(2, len(lines) // 3):
        return "bullets"
    return "prose"


def _sections(text: str) -> list[str]:
    found = []
    for line in text.splitlines():
        line = line.strip()
        match = _MD_HEADING.fullmatch(line) or _BOLD_HEADING.fullmatch(line) or _COLON_HEADING.fullmatch(line)
        if match:
            label = _label(match.group("text").rstrip("#").strip())
            if label and label not in found:
                found.append(label)
    return found


def _items(text: str) -> list[str]:
    return [_label(line) for line in text.splitlines() if _BULLET.match(line) and _label(line)]


def corrections_derive(before: str, after: str) -> list[Correction]:
    """The directions an edit from ``before`` to ``after`` moved the output in (empty if none)."""
    found: list[Correction] = []
    before_words, after_words = words(before), words(after)
    if before_words:
        ratio = after_words / before_words
        detail = {"before_words": before_words, "after_words": after_words, "ratio": round(ratio, 3)}
        if ratio <= 1 - LENGTH_CHANGE:
            found.append(Correction("length", "shorter", detail))
        elif ratio >= 1 + LENGTH_CHANGE:
            found.append(Correction("length", "longer", detail))

    shift = _formality(after) - _formality(before)
    if abs(shift) >= TONE_CHANGE:
        found.append(Correction("tone", "more_formal" if shift > 0 else "more_casual", {"shift": shift}))

    layout_before, layout_after = _layout(before), _layout(after)
    if layout_before != layout_after and layout_after in ("bullets", "table", "prose") and layout_before != "empty":
        found.append(Correction("structure", layout_after, {"from": layout_before}))

    sections_before, sections_after = _sections(before), _sections(after)
    for heading in sections_before:
        if heading not in sections_after:
            found.append(Correction("section", f"removed:{heading}", {"section": heading}))
    for heading in sections_after:
        if heading not in sections_before:
            found.append(Correction("section", f"added:{heading}", {"section": heading}))

    items_before, items_after = _items(before), _items(after)
    common = [item for item in items_after if item in items_before]
    if len(common) >= 2:
        old_order = [item for item in items_before if item in common]
        if common != old_order:
            moved = max(common, key=lambda item: old_order.index(item) - common.index(item))
            found.append(
                Correction(
                    "order",
                    f"moved_up:{moved}",
                    {"item": moved, "from": old_order.index(moved) + 1, "to": common.index(moved) + 1},
                )
            )
    return found


def parameter_changes(before: dict[str, Any], after: dict[str, Any]) -> list[Correction]:
    """A re-run with different parameters: each parameter the user changed, and to what."""
    found = []
    for key in sorted(set(before) | set(after)):
        if before.get(key) != after.get(key) and key in after:
            value = str(after[key])[:40]
            found.append(
                Correction("parameter", f"{str(key)[:40]}={value}", {"from": before.get(key), "to": after[key]})
            )
    return found


def _short(value: Any) -> Any:
    """A parameter value as evidence: scalars as they are, anything long as a cut string."""
    if isinstance(value, bool | int | float) or value is None:
        return value
    text = value if isinstance(value, str) else str(value)
    return text[:200]
