"""The compiler's durable job ledger (``source_intelligence_jobs``).

A job row is written in the transaction of whatever implies it (an import, an approved
attribution), and its Celery task is queued after that commits. The row is the truth: a task lost
to a broker outage is found by the sweep and queued again; a task that runs twice finds the job
already claimed or finished and does nothing. Each kind's handler is a service elsewhere in this
package, named in ``HANDLERS``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.module_loading import import_string

from intelligence import tasks
from intelligence.conf import intelligence_settings
from intelligence.exceptions import JobRetry
from intelligence.models import IntelligenceTarget, JobStatus, SourceIntelligenceJob
from retrieval.models import Document

logger = logging.getLogger(__name__)

# Each kind's handler: called with the claimed job (in no transaction); returns the job's result.
HANDLERS: dict[str, str] = {}
HANDLERS["signal_extraction"] = "intelligence.services.compile.signal_extraction_handle"
HANDLERS["attribution"] = "intelligence.services.attribution.attribution_job_handle"


def source_job_queue(
    *, kind: str, document: Document | None = None, target: IntelligenceTarget | None = None
) -> SourceIntelligenceJob:
    """Queue one job (or return the open one for the same kind and document version), and its
    task once the caller's transaction commits."""
    document_ref = document.pk if document is not None else ""
    content_hash = document.content_hash if document is not None else ""
    open_job = SourceIntelligenceJob.objects.filter(
        kind=kind,
        document_ref=document_ref,
        content_hash=content_hash,
        status__in=[JobStatus.QUEUED, JobStatus.RUNNING],
    ).first()
    if open_job is not None:
        return open_job
    try:
        with transaction.atomic():
            job = SourceIntelligenceJob.objects.create(
                kind=kind, document=document, document_ref=document_ref, content_hash=content_hash, target=target
            )
    except IntegrityError:  # a concurrent import queued the same work
        return SourceIntelligenceJob.objects.get(
            kind=kind,
            document_ref=document_ref,
            content_hash=content_hash,
            status__in=[JobStatus.QUEUED, JobStatus.RUNNING],
        )
    job_id = str(job.pk)
    transaction.on_commit(lambda: _publish(job_id))
    return job


def _publish(job_id: str) -> None:
    try:
        tasks.source_job_run.delay(job_id)
    except Exception:
        logger.warning("could not enqueue intelligence job %s; the sweep will retry", job_id, exc_info=True)


def _claim(job_id: str) -> SourceIntelligenceJob | None:
    with transaction.atomic():
        job = SourceIntelligenceJob.objects.select_for_update(skip_locked=True).filter(pk=job_id).first()
        if job is None or job.status != JobStatus.QUEUED:
            return None  # gone, finished, or another worker has it
        job.status = JobStatus.RUNNING
        job.started_at = timezone.now()
        job.attempts = F("attempts") + 1
        job.save(update_fields=["status", "started_at", "attempts"])
    job.refresh_from_db(fields=["attempts"])
    return job


def _finish(job: SourceIntelligenceJob, *, status: str, result: dict[str, Any] | None = None, error: str = "") -> None:
    job.status = status
    job.finished_at = timezone.now() if status != JobStatus.QUEUED else None
    job.result = result or {}
    job.last_error = error[:10_000]
    job.save(update_fields=["status", "finished_at", "result", "last_error"])


def source_job_run(*, job_id: str) -> bool:
    """Run one queued job with its kind's handler; False when there was nothing to run. A handler's
    ``JobRetry`` puts it back in the queue (until INTELLIGENCE_JOB_MAX_ATTEMPTS); any other error
    fails it, with the error recorded."""
    job = _claim(job_id)
    if job is None:
        return False
    try:
        handler: Callable[[SourceIntelligenceJob], dict[str, Any]] = import_string(HANDLERS[job.kind])
        result = handler(job)
    except JobRetry as exc:
        again = job.attempts < intelligence_settings.INTELLIGENCE_JOB_MAX_ATTEMPTS
        _finish(job, status=JobStatus.QUEUED if again else JobStatus.FAILED, error=str(exc))
        raise
    except Exception as exc:
        logger.exception("intelligence job %s (%s) failed", job.pk, job.kind)
        _finish(job, status=JobStatus.FAILED, error=f"{type(exc).__name__}: {exc}")
        return True
    _finish(job, status=JobStatus.SUCCEEDED, result=result)
    return True


def source_jobs_sweep(*, older_than_seconds: int | None = None) -> int:
    """Queue again the tasks of jobs queued longer than the sweep delay (their task was lost), and of
    jobs left running by a worker that died; returns how many."""
    if older_than_seconds is None:
        older_than_seconds = intelligence_settings.INTELLIGENCE_JOB_SWEEP_AFTER_SECONDS
    cutoff = timezone.now() - timedelta(seconds=older_than_seconds)
    stuck = SourceIntelligenceJob.objects.filter(status=JobStatus.RUNNING, started_at__lt=cutoff - timedelta(hours=1))
    stuck.update(status=JobStatus.QUEUED)
    ids = list(
        SourceIntelligenceJob.objects.filter(status=JobStatus.QUEUED, created_at__lte=cutoff).values_list(
            "pk", flat=True
        )[:1000]
    )
    for job_id in ids:
        _publish(str(job_id))
    return len(ids)


def documents_changed_queue_attribution(*, document_ids: Sequence[str]) -> None:
    """The ``retrieval.hooks`` listener: one attribution job per changed document that has no project,
    in the import's transaction (their tasks are queued when it commits). A document imported with a
    project is compiled at once (``compile.documents_changed_compile``)."""
    for document in Document.objects.filter(pk__in=list(document_ids), project__isnull=True).order_by("pk"):
        source_job_queue(kind="attribution", document=document)
