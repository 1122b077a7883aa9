"""Pure text matching for attribution: the one normal form that profiles, documents and attribution
rules are compared in, and the features a document offers (phrases, ids, people, domains, folders).

Names are written freely ("Harbour Tower", "harbour-tower", "HARBOUR TOWER"): matching ignores case,
accents, punctuation and spacing, and respects word boundaries ("Oak" never matches inside
"Oakland")."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from core.text import STOP_WORDS

_SPLIT = re.compile(r"[^a-z0-9]+")
_CLAUSE = re.compile(r"[.,:;!?()\[\]\n|\"]+")
_EMAIL = re.compile(r"[a-z0-9._%+-]+@([a-z0-9-]+(?:\.[a-z0-9-]+)+)")
_REPLY = re.compile(r"^\s*((re|fw|fwd|aw|wg)\s*:\s*)+", re.IGNORECASE)
# Metadata keys that carry an explicit project or job reference, as importers name them.
EXPLICIT_ID_KEYS = ("project_id", "project_ids", "project_code", "job_number", "job", "explicit_ids", "external_ids")
THREAD_KEYS = ("thread_id", "thread", "conversation_id", "channel")
PATH_KEYS = ("path", "file_path", "folder")
# Public mailbox providers: a sender domain there says nothing about a project.
PUBLIC_DOMAINS = frozenset(
    "gmail.com googlemail.com outlook.com hotmail.com live.com yahoo.com icloud.com me.com aol.com proton.me "
    "protonmail.com gmx.com gmx.de web.de mail.com".split()
)


def fold(text: str) -> str:
    """Lower case without accents."""
    decomposed = unicodedata.normalize("NFKD", str(text))
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).lower()


def norm(text: str) -> str:
    """The matching form of a phrase: lower case, no accents, words separated by single spaces."""
    return " ".join(_SPLIT.split(fold(text))).strip()


def compact(text: str) -> str:
    """An id as compared: letters and digits only ("P-1042", "p 1042", "P1042" are one id)."""
    return "".join(_SPLIT.split(fold(text)))


def contains_phrase(haystack: str, phrase: str) -> bool:
    """Whether the normalised ``phrase`` occurs in the normalised ``haystack`` on word boundaries.
    Both must already be in :func:`norm` form; the haystack padded with spaces is cheaper."""
    if not phrase:
        return False
    return f" {phrase} " in f" {haystack} "


def subject_core(title: str) -> str:
    """A title without reply and forward prefixes, normalised: the thread an e-mail belongs to."""
    return norm(_REPLY.sub("", title or ""))


def email_domain(value: str) -> str:
    match = _EMAIL.search(fold(value))
    return match.group(1) if match else ""


def participant_keys(value: Any) -> set[str]:
    """The forms a participant is matched in: the e-mail address, and the name (normalised)."""
    if isinstance(value, dict):
        parts = [str(value.get(k, "")) for k in ("email", "name", "address", "id") if value.get(k)]
    else:
        parts = [str(value)]
    keys: set[str] = set()
    for part in parts:
        text = fold(part).strip()
        for match in _EMAIL.finditer(text):
            keys.add(match.group(0))
        name = _EMAIL.sub(" ", text).replace("<", " ").replace(">", " ")
        name = norm(name)
        if len(name) >= 3:
            keys.add(name)
    return keys


def path_prefixes(path: str, *, min_depth: int = 1) -> list[str]:
    """The folders of a path or URL, shortest first, normalised ("/jobs/harbour/rfi/12.pdf" ->
    ["/jobs", "/jobs/harbour", "/jobs/harbour/rfi"])."""
    text = fold(path).strip()
    text = re.sub(r"^[a-z][a-z0-9+.-]*://[^/]*", "", text)  # a URL's scheme and host
    segments = [s for s in re.split(r"[\\/]+", text) if s]
    if not segments:
        return []
    folders = segments[:-1]
    out = []
    for depth in range(1, len(folders) + 1):
        if depth >= min_depth:
            out.append("/" + "/".join(norm(s) or s for s in folders[:depth]))
    return out


def ngrams(text: str, *, max_n: int = 3) -> set[str]:
    """The word n-grams (1..max_n) of a raw text, within its clauses (never across punctuation or
    lines), in matching form, that do not start or end with a stop word ("the" may start one of
    two words or more: "the dig") and are not only digits and short words."""
    grams: set[str] = set()
    for clause in _CLAUSE.split(fold(text)):
        words = norm(clause).split()
        for n in range(1, max_n + 1):
            for start in range(0, len(words) - n + 1):
                gram = words[start : start + n]
                if (gram[0] in STOP_WORDS and not (n > 1 and gram[0] == "the")) or gram[-1] in STOP_WORDS:
                    continue
                if all(w.isdigit() or len(w) < 3 or w in STOP_WORDS for w in gram):
                    continue
                grams.add(" ".join(gram))
    return grams


@dataclass
class DocumentFeatures:
    """What a document offers to match, all in matching form."""

    title: str = ""
    subject: str = ""
    text: str = ""
    compact_tokens: set[str] = field(default_factory=set)
    explicit_ids: set[str] = field(default_factory=set)
    participants: set[str] = field(default_factory=set)
    domains: set[str] = field(default_factory=set)
    paths: list[str] = field(default_factory=list)  # folder prefixes
    path_text: str = ""
    thread: str = ""
    source_system: str = ""


def _values(value: Any) -> Iterable[str]:
    if isinstance(value, list | tuple | set):
        for item in value:
            yield str(item)
    elif value not in (None, ""):
        yield str(value)


def document_features(
    *, title: str, raw_text: str, url: str, participants: Any, metadata: dict[str, Any], source_system: str
) -> DocumentFeatures:
    """Extract the matching features of one document's metadata and text."""
    metadata = metadata if isinstance(metadata, dict) else {}
    path = next((str(metadata[k]) for k in PATH_KEYS if metadata.get(k)), "") or url or ""
    people: set[str] = set()
    for person in _values(participants) if not isinstance(participants, list) else participants:
        people |= participant_keys(person)
    for key in ("from", "sender", "to", "cc", "author"):
        for person in _values(metadata.get(key)):
            people |= participant_keys(person)
    domains = {d for d in (email_domain(p) for p in people) if d and d not in PUBLIC_DOMAINS}
    text = norm(raw_text)
    title_n = norm(title)
    explicit = {compact(v) for k in EXPLICIT_ID_KEYS for v in _values(metadata.get(k)) if compact(v)}
    thread = next((compact(str(metadata[k])) for k in THREAD_KEYS if metadata.get(k)), "")
    folders = path_prefixes(path)
    return DocumentFeatures(
        title=title_n,
        subject=subject_core(title),
        text=text,
        compact_tokens={compact(token) for token in fold(f"{title} {raw_text}").split()} - {""},
        explicit_ids=explicit,
        participants=people,
        domains=domains,
        paths=folders,
        path_text=norm(path),
        thread=thread,
        source_system=norm(source_system),
    )
