"""What a user's edit of a tool's output says about their taste, derived from the two texts.

The client reports what it showed and what the user kept; the correction is computed here,
never taken on trust. Each correction has a type and a direction, so that repeated edits in
the same direction can be counted:

* ``length``: ``shorter`` / ``longer`` (by how much, in words);
* ``tone``: ``more_formal`` / ``more_casual`` (markers of register on either side);
* ``structure``: ``bullets`` / ``table`` / ``prose`` (the layout the user changed it to);
* ``order``: ``moved_up:<item>`` (an item the user moved towards the top);
* ``section``: ``removed:<heading>`` / ``added:<heading>``;
* ``line``: ``removed:<line>`` / ``added:<line>``: a short line (a sign-off, a closing line, a
  disclaimer) the user deleted or wrote, in its own words. A length change that such lines explain
  is no length correction: deleting "Let me know if you have questions" three times says "leave it
  out", not "write less".
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

from learning.safety import is_steering

# A change under these is noise (a typo fixed, a word swapped), not a direction.
LENGTH_CHANGE = 0.15
TONE_CHANGE = 2
# A line this short can be a sign-off or a stock sentence to leave out; a longer one is content.
LINE_MAX_WORDS = 15
# A deleted line this similar (word overlap) to a line of the edit was reworded, not left out.
LINE_REWORDED = 0.5
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


def _flat(text: str) -> str:
    """Lowercase words, no punctuation or markup: the same key wherever a line recurs."""
    return " ".join(w.lower() for w in _WORD.findall(text))


def _line_key(text: str) -> str:
    return _flat(text)[:100]


def _plain_lines(text: str, skip_sections: set[str]) -> dict[str, str]:
    """The short plain lines of a text (not headings, list items or table rows, nor lines of a
    section that was removed or added as a whole), by key, with the line as written."""
    found: dict[str, str] = {}
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        heading = _MD_HEADING.fullmatch(line) or _BOLD_HEADING.fullmatch(line) or _COLON_HEADING.fullmatch(line)
        if heading:
            section = _label(heading.group("text").rstrip("#").strip())
            continue
        if not line or section in skip_sections or _BULLET.match(line) or _TABLE_ROW.match(line):
            continue
        if is_steering(line):
            continue  # an order to the assistant is never learned as a line to include or leave out
        key = _line_key(line)
        if key and len(key.split()) <= LINE_MAX_WORDS:
            found.setdefault(key, line.rstrip(" .,;:!")[:120])
    return found


def _similar(key: str, others: list[str]) -> bool:
    mine = set(key.split())
    return any(len(mine & set(o.split())) / max(len(mine | set(o.split())), 1) >= LINE_REWORDED for o in others)


def _inserted(before: str, after: str) -> set[str]:
    """The keys of the lines an edit inserted between lines it kept (not ones it rewrote)."""
    old = [_line_key(line) for line in before.splitlines() if line.strip()]
    new = [_line_key(line) for line in after.splitlines() if line.strip()]
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    return {key for tag, _, _, j1, j2 in matcher.get_opcodes() if tag == "insert" for key in new[j1:j2]}


def _lines_changed(before: str, after: str, skip_sections: set[str]) -> list[Correction]:
    """Short lines deleted outright (no reworded version left) or inserted anew (not as the
    rewrite of a passage: a paragraph cut down to one line is a shorter text, not a new line)."""
    lines_before, lines_after = _plain_lines(before, skip_sections), _plain_lines(after, skip_sections)
    # Padded so that a line found inside a longer one matches whole words only.
    after_text, before_text = f" {_flat(after)} ", f" {_flat(before)} "
    found = []
    for key, line in lines_before.items():
        # Still there as part of a longer line, or reworded: not left out.
        if key not in lines_after and f" {key} " not in after_text and not _similar(key, list(lines_after)):
            found.append(Correction("line", f"removed:{key}", {"line": line, "words": len(key.split())}))
    inserted = _inserted(before, after) if len(lines_after) > 0 else set()
    for key, line in lines_after.items():
        if key in inserted and f" {key} " not in before_text and not _similar(key, list(lines_before)):
            found.append(Correction("line", f"added:{key}", {"line": line, "words": len(key.split())}))
    return found


def _length(before_words: int, after_words: int, lines: list[Correction]) -> Correction | None:
    """The length direction of an edit, unless the short lines deleted or added explain it."""
    if not before_words:
        return None
    ratio = after_words / before_words
    detail = {"before_words": before_words, "after_words": after_words, "ratio": round(ratio, 3)}
    removed = sum(c.detail["words"] for c in lines if c.direction.startswith("removed:"))
    added = sum(c.detail["words"] for c in lines if c.direction.startswith("added:"))
    rest_before, rest_after = before_words - removed, after_words - added
    if (removed or added) and rest_before > 0:
        # What is left once the lines are set aside: a length direction only if it moved too.
        rest = rest_after / rest_before
        if 1 - LENGTH_CHANGE < rest < 1 + LENGTH_CHANGE:
            return None
    if ratio <= 1 - LENGTH_CHANGE:
        return Correction("length", "shorter", detail)
    if ratio >= 1 + LENGTH_CHANGE:
        return Correction("length", "longer", detail)
    return None


def corrections_derive(before: str, after: str) -> list[Correction]:
    """The directions an edit from ``before`` to ``after`` moved the output in (empty if none)."""
    found: list[Correction] = []
    sections_before, sections_after = _sections(before), _sections(after)
    whole_sections = set(sections_before) ^ set(sections_after)
    lines = _lines_changed(before, after, whole_sections)
    length = _length(words(before), words(after), lines)
    if length is not None:
        found.append(length)

    shift = _formality(after) - _formality(before)
    if abs(shift) >= TONE_CHANGE:
        found.append(Correction("tone", "more_formal" if shift > 0 else "more_casual", {"shift": shift}))

    layout_before, layout_after = _layout(before), _layout(after)
    if layout_before != layout_after and layout_after in ("bullets", "table", "prose") and layout_before != "empty":
        found.append(Correction("structure", layout_after, {"from": layout_before}))

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
    found.extend(lines)
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


# --- which directions may stand together ----------------------------------------------------


def dimension(kind: str, direction: str) -> str:
    """What a direction is a choice on: two directions on one dimension contradict each other
    (shorter vs longer, bullets vs table, leaving a line out vs putting it back)."""
    if kind in ("length", "tone", "structure"):
        return kind
    if kind in ("section", "line"):
        return f"{kind}:{direction.partition(':')[2]}"
    if kind == "parameter":
        return f"parameter:{direction.partition('=')[0]}"
    return f"{kind}:{direction}"


_P = TypeVar("_P")


def _get(pattern: Any, name: str) -> Any:
    return pattern.get(name) if isinstance(pattern, dict) else getattr(pattern, name)


def patterns_consistent(patterns: Iterable[_P], *, command: str | None) -> list[_P]:
    """The patterns that may be applied together to a run of ``command``, in their given order of
    preference: one per dimension, the command's own before a plugin-wide one (which it overrides
    whatever its direction), never two directions of one dimension."""
    rows = list(patterns)
    taken: set[str] = set()
    chosen: set[int] = set()
    for own in (True, False):
        for pattern in rows:
            scope = _get(pattern, "command")
            if (scope is not None) != own or scope not in (None, command):
                continue
            kind, direction = _get(pattern, "correction_type"), _get(pattern, "direction")
            # A row cached before it carried its direction has no known dimension: nothing to clash with.
            key = dimension(kind, direction) if kind and direction else f"unknown:{id(pattern)}"
            if key not in taken:
                taken.add(key)
                chosen.add(id(pattern))
    return [p for p in rows if id(p) in chosen]
