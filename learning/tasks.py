"""Background work of preference learning: thin tasks over learning.services."""

from __future__ import annotations

import logging

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.db import OperationalError

from learning.conf import learning_settings
from learning.selectors import unanalyzed_message_ids
from learning.services import messages, preferences

logger = logging.getLogger(__name__)


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
    ids = messages.messages_claim(first_id=message_id, limit=learning_settings.ANALYSIS_BATCH_SIZE)
    if not ids:
        return 0
    # A task never dies holding a claim: whatever fails, the batch's waiting messages are released.
    try:
        return len(messages.messages_analyze(message_ids=ids))
    except (OperationalError, ConnectionError, SoftTimeLimitExceeded) as exc:
        # Transient: retried as a whole. With the database gone the release fails too; then the claims
        # expire after ANALYSIS_CLAIM_SECONDS, and the original error is what Celery retries on.
        try:
            messages.messages_release(message_ids=ids, error=exc, count=False)
        except Exception:
            logger.warning("could not release the claims of %d message(s)", len(ids), exc_info=True)
        raise
    except Exception as exc:  # noqa: BLE001 - anything else: find the message that fails, spare the others
        logger.warning("analysis of a batch of %d failed (%r); analysing one at a time", len(ids), exc)
        done = 0
        for one in ids:
            try:
                done += len(messages.messages_analyze(message_ids=[one]))
            except Exception as failure:  # noqa: BLE001 - counted against this message, released for the sweep
                messages.messages_release(message_ids=[one], error=failure)
        return done


@shared_task(name="learning.analyze_pending_messages", ignore_result=True)
def analyze_pending_messages() -> int:
    """Re-enqueue messages whose analysis never ran (e.g. the broker was down when they arrived)."""
    ids = unanalyzed_message_ids(older_than_seconds=learning_settings.ANALYSIS_SWEEP_AFTER_SECONDS)
    for message_id in ids:
        analyze_message.delay(message_id)
    return len(ids)


@shared_task(name="learning.preferences_decay", ignore_result=True)
def preferences_decay() -> list[int]:
    decayed, deactivated = preferences.preferences_decay()
    return [decayed, deactivated]
