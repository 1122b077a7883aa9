"""Background work of the promotion ledger."""

from __future__ import annotations

from celery import shared_task

from promotions import services


@shared_task(name="promotions.expire_candidates", ignore_result=True)
def expire_candidates() -> int:
    """Candidates nobody reviewed before their expires_at become expired."""
    return services.promotions_expire()
