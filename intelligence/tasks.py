"""Background work of project intelligence: thin tasks over intelligence.services."""

from __future__ import annotations

from celery import shared_task
from django.db import OperationalError

from intelligence.conf import intelligence_settings
from intelligence.exceptions import JobRetry
from intelligence.services import jobs, refresh


@shared_task(
    name="intelligence.source_job_run",
    ignore_result=True,
    autoretry_for=(OperationalError, ConnectionError, JobRetry),
    retry_backoff=True,
    max_retries=5,
)
def source_job_run(job_id: str) -> bool:
    """Run one compiler job (attribution, signal extraction…); a missing or finished job is a no-op."""
    return jobs.source_job_run(job_id=job_id)


@shared_task(
    name="intelligence.packet_refresh_run",
    ignore_result=True,
    autoretry_for=(OperationalError, ConnectionError),
    retry_backoff=True,
    max_retries=5,
)
def packet_refresh_run(job_id: int) -> bool:
    """Rebuild the packet of one queued refresh; a missing or finished refresh is a no-op."""
    return refresh.packet_refresh_run(job_id=job_id) is not None


@shared_task(name="intelligence.jobs_sweep", ignore_result=True)
def jobs_sweep() -> list[int]:
    """Queue again compiler jobs and packet refreshes whose task was lost."""
    after = intelligence_settings.INTELLIGENCE_JOB_SWEEP_AFTER_SECONDS
    return [jobs.source_jobs_sweep(older_than_seconds=after), refresh.packet_refreshes_sweep(older_than_seconds=after)]
