"""Packet refreshes (``packet_refresh_jobs``): deduplicated per target, run by a worker."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import timedelta
from functools import partial

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from intelligence import tasks
from intelligence.models import IntelligenceTarget, JobStatus, PacketRefreshJob
from intelligence.services.packets import packet_build

logger = logging.getLogger(__name__)
MAX_REASONS = 20


def packet_refresh_request(*, target_ids: Iterable[int], reason: str) -> list[PacketRefreshJob]:
    """Ask for the packets of these targets to be rebuilt: one queued job per target whatever asks,
    the reason added to it; its task is queued once the caller's transaction commits."""
    jobs = []
    for target_id in sorted(set(target_ids)):
        queued = (
            PacketRefreshJob.objects.select_for_update().filter(target_id=target_id, status=JobStatus.QUEUED).first()
        )
        if queued is not None:
            if reason not in queued.reasons and len(queued.reasons) < MAX_REASONS:
                queued.reasons = [*queued.reasons, reason]
                queued.save(update_fields=["reasons"])
            jobs.append(queued)
            continue
        try:
            with transaction.atomic():
                job = PacketRefreshJob.objects.create(target_id=target_id, reasons=[reason])
        except IntegrityError:  # queued concurrently
            jobs.append(PacketRefreshJob.objects.get(target_id=target_id, status=JobStatus.QUEUED))
            continue
        transaction.on_commit(partial(_publish, job.pk))
        jobs.append(job)
    return jobs


def _publish(job_id: int) -> None:
    try:
        tasks.packet_refresh_run.delay(job_id)
    except Exception:
        logger.warning("could not enqueue packet refresh %s; the sweep will retry", job_id, exc_info=True)


def packet_refresh_run(*, job_id: int) -> PacketRefreshJob | None:
    """Build the packet of one queued refresh; None when there was nothing to run (gone, or taken)."""
    with transaction.atomic():
        job = PacketRefreshJob.objects.select_for_update(skip_locked=True).filter(pk=job_id).first()
        if job is None or job.status != JobStatus.QUEUED:
            return None
        job.status = JobStatus.RUNNING
        job.started_at = timezone.now()
        job.attempts = F("attempts") + 1
        job.save(update_fields=["status", "started_at", "attempts"])
    target = IntelligenceTarget.objects.get(pk=job.target_id)
    try:
        packet = packet_build(target=target, reason="; ".join(job.reasons))
    except Exception as exc:
        logger.exception("packet refresh %s of target %s failed", job.pk, job.target_id)
        job.status = JobStatus.FAILED
        job.last_error = f"{type(exc).__name__}: {exc}"[:10_000]
        job.finished_at = timezone.now()
        job.save(update_fields=["status", "last_error", "finished_at"])
        return job
    job.status = JobStatus.SUCCEEDED
    job.packet = packet
    job.finished_at = timezone.now()
    job.save(update_fields=["status", "packet", "finished_at"])
    return job


def packet_refreshes_sweep(*, older_than_seconds: int) -> int:
    """Queue again the tasks of refreshes queued longer than ``older_than_seconds``; how many."""
    cutoff = timezone.now() - timedelta(seconds=older_than_seconds)
    ids = list(
        PacketRefreshJob.objects.filter(status=JobStatus.QUEUED, created_at__lte=cutoff).values_list("pk", flat=True)[
            :1000
        ]
    )
    for job_id in ids:
        _publish(job_id)
    return len(ids)
