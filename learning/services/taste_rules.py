"""The pure rules of taste learning: which directions win a dimension, which patterns may be
applied together, what overrides an applied pattern, how confident a pattern is, the instruction
a direction distils into, and whether a chat message says "stop applying this"."""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Sequence
from typing import Any

from learning.corrections import Correction, dimension
from learning.models import TastePattern

_OPPOSITE = {"shorter": "longer", "longer": "shorter", "more_formal": "more_casual", "more_casual": "more_formal"}


_FLIP = {"removed": "added", "added": "removed"}
# Types whose directions say the same about every command of a plugin; a parameter or an item
# moved up belongs to one command's inputs and outputs.
PLUGIN_WIDE_TYPES = frozenset({"length", "tone", "structure", "section", "line"})


def winning_directions(
    decisions: Sequence[Sequence[dict[str, Any]]], *, min_observations: int, majority: float, dimension_window: int
) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """The directions that hold their dimension in these decisions (newest first): seen at least
    ``min_observations`` times, and at least ``majority`` of the latest ``dimension_window``
    corrections on that dimension. Returns each winner's details, newest first."""
    seen: dict[tuple[str, str], list[dict[str, Any]]] = {}
    latest: dict[str, list[str]] = {}
    for found in decisions:
        for correction in {(c["type"], c["direction"]): c for c in found}.values():
            kind, direction = correction["type"], correction["direction"]
            seen.setdefault((kind, direction), []).append(correction["detail"])
            latest.setdefault(dimension(kind, direction), []).append(direction)
    winners = {}
    for (kind, direction), details in seen.items():
        recent = latest[dimension(kind, direction)][:dimension_window]
        if len(details) >= min_observations and recent.count(direction) / len(recent) >= majority:
            winners[(kind, direction)] = details
    return winners


_STOP_PHRASE = re.compile(r"\b(?:stop|quit|don'?t keep|do not keep) applying (?:this|that|it)\b", re.IGNORECASE)


_NEGATED_STOP = re.compile(r"\b(?:don'?t|do not|never|not)\s+(?:stop|quit)\s+applying\b", re.IGNORECASE)


def asks_to_stop(message: str) -> bool:
    """Does a chat message say "stop applying this" (and not "don't stop applying this")?"""
    return bool(_STOP_PHRASE.search(message)) and not _NEGATED_STOP.search(message)


def pattern_overridden(
    pattern: TastePattern, decision: str, corrections: list[Correction], *, plain_rerun: bool = False
) -> bool:
    """Does this decision on a run the pattern was applied to go against the pattern? A plain
    re-run (the same inputs again) says the output was not right: it goes against every pattern."""
    if decision == "rerun" and pattern.correction_type == "parameter" and not plain_rerun:
        # A re-run overrides a parameter pattern only if it sets that parameter to something else.
        key = pattern.direction.split("=")[0]
        return any(c.direction.split("=")[0] == key and c.direction != pattern.direction for c in corrections)
    if decision in ("rejected", "rerun"):
        return True
    for correction in corrections:
        if correction.type != pattern.correction_type:
            continue
        if _OPPOSITE.get(pattern.direction) == correction.direction:
            return True  # lengthened what the pattern shortened
        if pattern.correction_type == "structure" and correction.direction != pattern.direction:
            return True  # changed the layout the pattern chose
        kind, _, name = pattern.direction.partition(":")
        if pattern.correction_type in ("section", "line") and correction.direction == f"{_FLIP.get(kind)}:{name}":
            return True  # put back the section or line the pattern left out
        if pattern.correction_type == "parameter" and correction.direction.split("=")[0] == kind.split("=")[0]:
            return True  # re-ran with another value of the parameter the pattern sets
    return False


def pattern_confidence(pattern: TastePattern) -> float:
    """How consistently the user corrects this way (observations per recent decision) times how
    often applying it was accepted (smoothed; 0 before any confirmation)."""
    consistency = pattern.observations / max(pattern.evidence.get("decisions", pattern.observations), 1)
    trust = pattern.confirmations / (pattern.confirmations + pattern.rejections + 2)
    return round(min(1.0, consistency) * trust, 4)


def _nice(value: float, *, up: bool) -> int:
    """A round word limit near ``value``: to the next 25 (up) or the previous 25 (down), at least 25."""
    step = 25 if value < 400 else 50
    rounded = (math.ceil if up else math.floor)(value / step) * step
    return max(step, int(rounded))


def _quote(text: str) -> str:
    """A line the user wrote, quoted on one line of the instruction: it cannot close the notice's
    double quotes or open a block of the context."""
    flat = " ".join(str(text).split())[:120].replace('"', "'").replace("[", "(").replace("]", ")")
    return f"'{flat}'"


def distill(
    plugin: str,
    command: str | None,
    kind: str,
    direction: str,
    details: list[dict[str, Any]],
    decisions: int,
    *,
    commands: int = 0,
) -> tuple[str, str]:
    """(instruction, description) for a direction, with the figures computed from the edits.
    ``command`` None: a plugin-wide pattern, seen on ``commands`` of the plugin's commands."""
    scope = f"{plugin} {command}" if command else plugin
    thing = scope.replace("_", " ").replace("-", " ") + " outputs"
    times = f"{len(details)}/{decisions} times" + (f" across {commands} commands" if command is None else "")
    if kind == "length" and command is None:
        # Word counts of different commands do not share a limit; how much the user cuts does.
        ratio = statistics.median(d["ratio"] for d in details)
        change = round(abs(1 - ratio) * 100 / 5) * 5
        if direction == "shorter":
            return (
                f"Keep {thing} concise: about {change}% shorter than you would otherwise write.",
                f"Shortened {thing} {times} (by about {change}%).",
            )
        return (
            f"Make {thing} more thorough: about {change}% longer than you would otherwise write.",
            f"Lengthened {thing} {times} (by about {change}%).",
        )
    if kind == "line":
        # The user's own words, newest first: the line as they last saw it.
        line = _quote(details[0].get("line") or direction.partition(":")[2])
        if direction.startswith("removed:"):
            return f"Leave out {line} in {thing}.", f"Removed the line {line} from {thing} {times}."
        return f"Include the line {line} in {thing}.", f"Added the line {line} to {thing} {times}."
    if kind == "length":
        before = statistics.median(d["before_words"] for d in details)
        after = sorted(d["after_words"] for d in details)
        if direction == "shorter":
            limit = _nice(after[max(0, math.ceil(0.8 * len(after)) - 1)], up=True)
            return (
                f"Keep {thing} concise: under {limit} words.",
                f"Shortened {thing} {times} (from about {before:.0f} to about {statistics.median(after):.0f} words).",
            )
        floor = _nice(after[int(0.2 * len(after))], up=False)
        return (
            f"Make {thing} more thorough: at least {floor} words.",
            f"Lengthened {thing} {times} (from about {before:.0f} to about {statistics.median(after):.0f} words).",
        )
    if kind == "tone":
        if direction == "more_formal":
            return (
                f"Write {thing} in a formal, professional tone (no contractions, slang or exclamation marks).",
                f"Made {thing} more formal {times}.",
            )
        return f"Write {thing} in a casual, friendly tone.", f"Made {thing} more casual {times}."
    if kind == "structure":
        layout = {"bullets": "as bullet points", "table": "as a table", "prose": "as prose paragraphs, not lists"}
        return (
            f"Format {thing} {layout.get(direction, direction)}.",
            f"Reformatted {thing} {layout.get(direction)} {times}.",
        )
    name = direction.partition(":")[2] if kind != "parameter" else direction
    if kind == "section":
        if direction.startswith("removed:"):
            return (
                f"Leave out the '{name}' section in {thing}.",
                f"Removed the '{name}' section from {thing} {times}.",
            )
        return f"Include a '{name}' section in {thing}.", f"Added a '{name}' section to {thing} {times}."
    if kind == "order":
        return f"Put '{name}' first in {thing}.", f"Moved '{name}' up in {thing} {times}."
    key, _, value = direction.partition("=")
    return f"Run {plugin} {command} with {key} = {value}.", f"Re-ran {plugin} {command} with {key} = {value} {times}."
