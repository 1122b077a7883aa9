"""Background work of preference learning: thin tasks over learning.services."""

from __future__ import annotations

from celery import shared_task
from django.db import OperationalError

from learning.conf import learning_settings
from learning.services import messages, preferences, undo


@shared_task(
    name="learning.analyze_message",
    ignore_result=True,
    autoretry_for=(OperationalError, ConnectionError),
    retry_backoff=True,
    max_retries=5,
)
def analyze_message(message_id: str) -> int:
    """Analyse this message, with other waiting ones in the same batch (one embedding pass
    for all of them); a missing or already analysed message is a no-op. Returns how many ran."""
    return messages.analysis_run(first_id=message_id)


@shared_task(name="learning.analyze_pending_messages", ignore_result=True)
def analyze_pending_messages(older_than_seconds: int | None = None) -> int:
    """Re-enqueue messages whose analysis never ran (e.g. the broker was down when they arrived),
    those waiting longer than ``older_than_seconds`` (default ANALYSIS_SWEEP_AFTER_SECONDS; 0: all,
    as a worker asks when it (re)connects to the broker, config/celery.py)."""
    if older_than_seconds is None:
        older_than_seconds = learning_settings.ANALYSIS_SWEEP_AFTER_SECONDS
    return messages.analysis_sweep(older_than_seconds=older_than_seconds)


@shared_task(name="learning.preferences_decay", ignore_result=True)
def preferences_decay() -> list[int]:
    decayed, deactivated = preferences.preferences_decay()
    return [decayed, deactivated]


@shared_task(name="learning.undo_purge", ignore_result=True)
def undo_purge() -> int:
    """Forget undo entries past LEARNING_UNDO_SECONDS (what deleted items held goes with them)."""
    return undo.undo_purge()
