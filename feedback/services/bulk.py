"""Bulk writes to the event stream: all of a request's events are stored, or none."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.db import IntegrityError, transaction

from accounts.actors import Actor
from config.exceptions import ApplicationError, Conflict
from feedback.conf import feedback_settings
from feedback.models import FeedbackEvent
from feedback.services.events import EventInput, EventLookups, EventWrite, event_build, event_replay


class BulkWriteError(ApplicationError):
    """Some items of a bulk write are invalid; nothing was written."""

    def __init__(self, items: list[dict[str, Any]], total: int) -> None:
        super().__init__(
            f"{len(items)} of {total} events are invalid; nothing was written.",
            fields={"events": [f"item {item['index']} is invalid" for item in items]},
            extra={"items": [{"index": item["index"], "fields": item["fields"]} for item in items]},
        )
        self.items = items
        statuses = {item.get("status", 400) for item in items}
        # One kind of failure keeps its own status (403, 409); a mix is a plain 400.
        self.status_code = statuses.pop() if len(statuses) == 1 else 400
        if self.status_code == 403:
            self.code = "permission_denied"
        elif self.status_code == 409:
            self.code = "conflict"


def events_record_bulk(*, actor: Actor, items: Sequence[EventInput]) -> list[EventWrite]:
    """Append many events in one transaction: all are stored, or none and every bad item is named."""
    limit = feedback_settings.FEEDBACK_BULK_MAX_EVENTS
    if not items:
        raise ApplicationError("events must contain at least one event.", field="events")
    if len(items) > limit:
        raise ApplicationError(f"At most {limit} events per bulk request; got {len(items)}.", field="events")

    lookups = EventLookups(actor, items)
    built: list[FeedbackEvent | None] = []
    errors: list[dict[str, Any]] = []
    seen_keys: dict[str, int] = {}
    for index, data in enumerate(items):
        try:
            event = event_build(actor, data, lookups)
            if event.idempotency_key:
                if event.idempotency_key in seen_keys:
                    raise ApplicationError(
                        f"idempotency_key repeats item {seen_keys[event.idempotency_key]} of this request.",
                        field="idempotency_key",
                    )
                seen_keys[event.idempotency_key] = index
            built.append(event)
        except ApplicationError as exc:
            errors.append(
                {"index": index, "status": exc.status_code, "fields": exc.fields or {"non_field_errors": [exc.message]}}
            )
            built.append(None)
    if errors:
        raise BulkWriteError(errors, len(items))
    events: list[FeedbackEvent] = [e for e in built if e is not None]

    for attempt in (1, 2):
        existing = _existing_by_key(actor.writer_id, seen_keys)
        results: list[EventWrite] = []
        fresh: list[FeedbackEvent] = []
        replay_errors: list[dict[str, Any]] = []
        for index, event in enumerate(events):
            if event.idempotency_key and event.idempotency_key in existing:
                try:
                    results.append(event_replay(existing[event.idempotency_key], event))
                except Conflict as exc:
                    replay_errors.append({"index": index, "status": 409, "fields": exc.fields})
            else:
                results.append(EventWrite(event=event, created=True))
                fresh.append(event)
        if replay_errors:
            raise BulkWriteError(replay_errors, len(items))
        try:
            with transaction.atomic():
                FeedbackEvent.objects.bulk_create(fresh, batch_size=500)
            return results
        except IntegrityError:
            if attempt == 2 or not seen_keys:
                raise
            # A concurrent request stored some of these keys meanwhile: replay them.
    raise AssertionError("unreachable")


def _existing_by_key(writer: str, keys: Iterable[str]) -> dict[str, FeedbackEvent]:
    keys = list(keys)
    if not keys:
        return {}
    return {str(e.idempotency_key): e for e in FeedbackEvent.objects.filter(writer=writer, idempotency_key__in=keys)}
