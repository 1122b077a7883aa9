"""Identifier parsing shared by every app."""

from __future__ import annotations

import uuid


def parse_uuid(value: object) -> uuid.UUID | None:
    """The UUID that ``value`` spells (any of the spellings ``uuid.UUID`` accepts), or None."""
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except (TypeError, ValueError, AttributeError):
        return None
