"""Background work of preference learning: thin tasks over learning.services."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings
from django.db import OperationalError

from learning import services
from learning.selectors import unanalyzed_message_ids


@shared_task(
    name="learning.analyze_message",
    ignore_result=True,
    autoretry_for=(OperationalError, ConnectionError),
    retry_backoff=True,
    max_retries=5,
)
def analyze_message(message_id: str) -> str:
    """Analyse one message; a missing or already analysed message is a no-op."""
    analysis = services.message_analyze(message_id=message_id)
    return analysis.detected if analysis else "skipped"


@shared_task(name="learning.analyze_pending_messages", ignore_result=True)
def analyze_pending_messages() -> int:
    """Re-enqueue messages whose analysis never ran (e.g. the broker was down when they arrived)."""
    ids = unanalyzed_message_ids(older_than_seconds=settings.ANALYSIS_SWEEP_AFTER_SECONDS)
    for message_id in ids:
        analyze_message.delay(message_id)
    return len(ids)


@shared_task(name="learning.preferences_decay", ignore_result=True)
def preferences_decay() -> list[int]:
    decayed, deactivated = services.preferences_decay()
    return [decayed, deactivated]
