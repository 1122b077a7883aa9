"""Background work for accounts."""

from __future__ import annotations

from celery import shared_task
from django.utils.dateparse import parse_datetime

from accounts.services import api_key_mark_used


@shared_task(
    name="accounts.api_key_mark_used",
    ignore_result=True,
    autoretry_for=(ConnectionError,),
    retry_backoff=True,
    max_retries=5,
)
def api_key_mark_used_task(api_key_id: str, used_at: str) -> int:
    """Stamp a key's last use; a missing key or an older stamp changes nothing."""
    when = parse_datetime(used_at)
    if when is None:
        return 0
    return api_key_mark_used(api_key_id=api_key_id, used_at=when)
