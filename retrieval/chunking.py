"""Splitting document text into passages for retrieval."""

from __future__ import annotations

import re

_PARAGRAPHS = re.compile(r"\n\s*\n")
_SENTENCES = re.compile(r"(?<=[.!?])\s+")


def chunk_text(text: str, *, max_chars: int = 1000) -> list[str]:
    """Paragraph-aligned passages of at most ``max_chars``; a longer paragraph is cut at
    sentence ends (and a longer sentence at ``max_chars``). Whitespace is normalised."""
    passages: list[str] = []
    current = ""
    for paragraph in _PARAGRAPHS.split(text or ""):
        paragraph = " ".join(paragraph.split())
        if not paragraph:
            continue
        pieces = [paragraph] if len(paragraph) <= max_chars else _split_long(paragraph, max_chars)
        for piece in pieces:
            if current and len(current) + 2 + len(piece) > max_chars:
                passages.append(current)
                current = ""
            current = f"{current}\n\n{piece}" if current else piece
    if current:
        passages.append(current)
    return passages


def _split_long(paragraph: str, max_chars: int) -> list[str]:
    pieces: list[str] = []
    current = ""
    for sentence in _SENTENCES.split(paragraph):
        while len(sentence) > max_chars:
            pieces.append(sentence[:max_chars])
            sentence = sentence[max_chars:]
        if current and len(current) + 1 + len(sentence) > max_chars:
            pieces.append(current)
            current = ""
        current = f"{current} {sentence}" if current else sentence
    if current:
        pieces.append(current)
    return pieces
