"""Undo for the changes users make to what was learned about them.

Each change a user makes to a learned item (a preference switched off or on, added, deleted; a
workflow switched or deleted; a memory edited or deleted; a taste pattern stopped or resumed) is
applied at once and records an ``UndoEntry`` with the state it replaced, in the same transaction:
the fields it changed, or, for a deletion, the whole row (``row_snapshot``). Undoing an item puts
back the state of its newest entry and uses the entry up, so undoing again goes one change further
back, as an editor's undo does. A deleted item comes back as it was, with the same id, counts and
timestamps (``row_restore``), not as a copy. Entries live ``LEARNING_UNDO_SECONDS``: an older one
is refused and purged by the ``learning.undo_purge`` beat task; only then is a deleted item gone.

The per-item undo services live beside their changes (``preference_undo``, ``workflow_undo``,
``memory_undo``, ``taste_pattern_undo``); this module holds what they share.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.core import serializers
from django.db import IntegrityError, models, transaction
from django.utils import timezone

from accounts.models import User
from config.exceptions import Conflict, NotFoundError
from learning.conf import learning_settings
from learning.models import UndoEntry


def undo_window() -> timedelta:
    return timedelta(seconds=learning_settings.LEARNING_UNDO_SECONDS)


def undo_record(*, user_id: int, subject_type: str, subject_id: object, action: str, before: dict[str, Any]) -> None:
    """Keep the state a change replaced (call inside the change's transaction)."""
    UndoEntry.objects.create(
        user_id=user_id, subject_type=subject_type, subject_id=str(subject_id), action=action, before=before
    )


def undo_take(*, user: User, subject_type: str, subject_id: object, label: str) -> UndoEntry:
    """The newest change to undo on this item of the user's, locked, and deleted (used up) when the
    caller's transaction commits; a NotFoundError when there is none within the window."""
    entry = (
        UndoEntry.objects.select_for_update()
        .filter(
            user=user,
            subject_type=subject_type,
            subject_id=str(subject_id),
            created_at__gte=timezone.now() - undo_window(),
        )
        .order_by("-created_at")
        .first()
    )
    if entry is None:
        minutes = max(1, round(learning_settings.LEARNING_UNDO_SECONDS / 60))
        raise NotFoundError(
            f"Nothing to undo on {label} {subject_id}: a change can be undone for {minutes} minutes after it.",
            field="id",
        )
    entry.delete()
    return entry


def undo_purge(*, now: datetime | None = None) -> int:
    """Forget the entries past the undo window (what deleted items held goes with them)."""
    cutoff = (now or timezone.now()) - undo_window()
    deleted, _ = UndoEntry.objects.filter(created_at__lt=cutoff).delete()
    return deleted


def fields_snapshot(instance: models.Model, attnames: list[str]) -> dict[str, Any]:
    """These columns of the row (by attname), as JSON can hold them."""
    return {name: getattr(instance, name) for name in attnames}


def fields_restore(instance: models.Model, values: dict[str, Any]) -> list[str]:
    """Put back columns from ``fields_snapshot`` (parsed by each field); the attnames set."""
    by_attname = {f.attname: f for f in instance._meta.concrete_fields}
    for name, value in values.items():
        setattr(instance, name, by_attname[name].to_python(value))
    return list(values)


def row_snapshot(instance: models.Model) -> dict[str, Any]:
    """The whole row (every concrete column, binary ones base64), as Django's serializer writes it."""
    return serializers.serialize("python", [instance])[0]


def row_restore(model: type[models.Model], snapshot: dict[str, Any], *, conflict_field: str, conflict: str) -> Any:
    """Insert a deleted row again as it was: the same primary key and columns, timestamps included
    (a raw save: nothing is recomputed). A reference to a row that is gone since is cleared (it was
    cleared on the other rows too), or refuses the restore when it is required; an insert that a
    unique constraint refuses (the item exists again) is a Conflict naming ``conflict_field``."""
    data = {**snapshot, "fields": dict(snapshot["fields"])}
    for field in model._meta.concrete_fields:
        if not isinstance(field, models.ForeignKey) or data["fields"].get(field.name) is None:
            continue
        if not field.related_model._base_manager.filter(pk=data["fields"][field.name]).exists():
            if not field.null:
                raise Conflict(f"What this {conflict_field} belonged to no longer exists.", field=field.name)
            data["fields"][field.name] = None
    restored = next(serializers.deserialize("python", [data]))
    if model._base_manager.filter(pk=restored.object.pk).exists():
        raise Conflict(conflict, field=conflict_field)
    try:
        with transaction.atomic():
            restored.save()
    except IntegrityError as exc:
        raise Conflict(conflict, field=conflict_field) from exc
    return restored.object
