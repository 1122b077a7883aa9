"""The API's JSON parser: bad JSON of every kind is a 400 naming the problem, never a 500.

Python's ``json`` accepts things the rest of the stack cannot store or walk: ``NaN`` and
``Infinity``, ``1e400`` (which becomes ``inf``), integers of any size, lone UTF-16
surrogates (``"\\ud800"``, which no UTF-8 encoder writes), NUL characters (which
PostgreSQL refuses in text and JSONB), and nesting deep enough to raise
``RecursionError``. This parser refuses all of them up front, naming the offending field
by its path (``metadata.tags[2]``), so views and services only ever see JSON that every
database backend stores as sent. Oversize bodies never get here: Django's
``DATA_UPLOAD_MAX_MEMORY_SIZE`` refuses them first (a 413).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

# Deeper than any payload the API documents (snapshots are a few levels deep) and far
# below the depth at which validating or re-encoding the value would recurse too far.
MAX_JSON_DEPTH = 32
# Integers must fit the database's 64-bit integer columns and JSON number handling.
MAX_JSON_INT = 2**63 - 1


class JSONParseError(ParseError):
    """A JSON body the API refuses, with the path of the offending value (``""`` for the whole body)."""

    def __init__(self, message: str, *, path: str = "") -> None:
        super().__init__(message)
        self.path = path


def _describe(path: str) -> str:
    return f"The value at {path}" if path else "The request body"


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    # The path is echoed in the error: printable ASCII only, and short.
    name = key.encode("unicode_escape").decode("ascii")
    name = name if len(name) <= 40 else name[:40] + "..."
    return f"{path}.{name}" if path else name


def _check_text(text: str, path: str, what: str) -> None:
    if "\x00" in text:
        raise JSONParseError(f"{what} contains a NUL character (\\u0000), which cannot be stored.", path=path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise JSONParseError(
            f"{what} contains a lone UTF-16 surrogate ({text[exc.start]!a}), which is not valid Unicode.", path=path
        ) from exc


def check_json_value(value: Any) -> None:
    """Refuse a decoded JSON value that the stack cannot store: see the module docstring. Iterative, so
    a deep value cannot exhaust the stack while it is being checked."""
    stack: list[tuple[Any, str, int]] = [(value, "", 1)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > MAX_JSON_DEPTH:
                raise JSONParseError(f"JSON is nested deeper than {MAX_JSON_DEPTH} levels.", path=path)
            if isinstance(item, dict):
                for key, inner in item.items():
                    inner_path = _join(path, key)
                    _check_text(key, inner_path, f"The key {inner_path}")
                    stack.append((inner, inner_path, depth + 1))
            else:
                stack.extend((inner, _join(path, i), depth + 1) for i, inner in enumerate(item))
        elif isinstance(item, str):
            _check_text(item, path, _describe(path))
        elif isinstance(item, float) and not math.isfinite(item):
            raise JSONParseError(
                f"{_describe(path)} is not a finite number (NaN, Infinity and numbers beyond ±1.8e308 are refused).",
                path=path,
            )
        elif isinstance(item, int) and not isinstance(item, bool) and abs(item) > MAX_JSON_INT:
            raise JSONParseError(f"{_describe(path)} is an integer outside the 64-bit range.", path=path)


# Whether the walk over a decoded value is needed is learnt while decoding and from the text, so that
# most bodies are never walked (the ingest path paid for the walk on every event, and a bulk body of
# 1,000 events for a walk of every value with its path, 19 ms, after a regular expression over all its
# text, 16 ms; in process the whole request went from 270 to 255 ms of CPU). The decoder reports every
# number that is refused (an integer outside 64 bits, a float that is not finite: 1e400, hundreds of
# digits) and every NaN/Infinity literal; the text is searched only for a NUL or a surrogate, escaped
# or itself (a charset such as unicode_escape decodes escapes before JSON does); a body with more
# brackets than the depth limit has its containers (not its values) walked for depth. Any of them
# sends the value to check_json_value, which names the path. A match inside a string's contents costs
# only the walk.
_ESCAPED = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def nested_deeper_than(value: Any, limit: int) -> bool:
    """Whether a decoded JSON value nests deeper than ``limit`` levels: a walk over its containers only."""
    stack = [(value, 1)] if isinstance(value, (dict, list)) else []
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        inner = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in inner if isinstance(child, (dict, list)))
    return False


def decode(text: str) -> tuple[Any, bool]:
    """The JSON value of ``text``, and whether :func:`check_json_value` must walk it (see above). Raises
    ``ValueError`` (``JSONDecodeError``, an integer of over 4,300 digits) and ``RecursionError``."""
    suspects: list[str] = []

    def integer(literal: str) -> int:
        value = int(literal)
        if len(literal) > 18 and abs(value) > MAX_JSON_INT:  # 2**63 - 1 has 19 digits
            suspects.append(literal)
        return value

    def real(literal: str) -> float:
        value = float(literal)
        if not math.isfinite(value):
            suspects.append(literal)
        return value

    def constant(name: str) -> float:
        suspects.append(name)  # NaN, Infinity, -Infinity
        return math.nan

    value = json.loads(text, parse_int=integer, parse_float=real, parse_constant=constant)
    walk = bool(
        suspects
        or "\x00" in text
        or ("\\u" in text and _ESCAPED.search(text))
        or (not text.isascii() and _SURROGATE.search(text))
        or (text.count("[") + text.count("{") > MAX_JSON_DEPTH and nested_deeper_than(value, MAX_JSON_DEPTH))
    )
    return value, walk


class StrictJSONParser(JSONParser):
    """``application/json`` bodies, decoded strictly and checked by :func:`check_json_value`."""

    def parse(self, stream, media_type=None, parser_context=None) -> Any:
        encoding = (parser_context or {}).get("encoding") or settings.DEFAULT_CHARSET
        try:
            "".encode(encoding)  # a text encoding: a bytes codec such as bz2_codec could inflate the body
        except (LookupError, UnicodeError) as exc:
            raise JSONParseError(f"Unsupported charset {encoding!r} in the Content-Type header.") from exc
        raw = stream.read()
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError as exc:
            raise JSONParseError(f"The request body is not valid {encoding} (byte {exc.start}).") from exc
        try:
            data, walk = decode(text)
        except RecursionError as exc:
            raise JSONParseError(f"JSON is nested deeper than {MAX_JSON_DEPTH} levels.") from exc
        except ValueError as exc:  # JSONDecodeError, and int() of more than 4,300 digits
            raise JSONParseError(f"JSON parse error: {exc}") from exc
        if walk:
            check_json_value(data)
        return data
