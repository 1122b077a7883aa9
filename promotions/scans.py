"""Scan runs: a scan is queued as a ``ScanRun`` and run by a worker, never inside a web request
(with no broker, in local and test settings, the task runs eagerly when the request commits)."""

from __future__ import annotations

import logging
from dataclasses import asdict
from datetime import timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from accounts.actors import Actor
from config.exceptions import AccessDenied
from promotions import tasks
from promotions.conf import promotions_settings
from promotions.models import OPEN_SCAN_STATUSES, ScanRun, ScanStatus
from promotions.scanners import promotions_scan, scanners_for

logger = logging.getLogger(__name__)


def scan_run_request(*, actor: Actor, scanner: str = "all", enqueue: bool = True) -> tuple[ScanRun, bool]:
    """Queue a scan (staff admins and the system): a new run (created True), or the open run of the
    same scanner if there is one. The task is enqueued when the run is committed; ``enqueue=False``
    leaves running it to the caller (the scheduled scans run theirs in the same worker)."""
    if not (actor.is_admin or actor.system):
        raise AccessDenied("Only staff admins run the promotion scans.")
    total = len(scanners_for(scanner))  # an unknown scanner is a 400 before anything is written
    _scan_runs_abandon(scanner=scanner)
    existing = ScanRun.objects.filter(scanner=scanner, status__in=OPEN_SCAN_STATUSES).first()
    if existing is not None:
        return existing, False
    try:
        with transaction.atomic():
            run = ScanRun.objects.create(scanner=scanner, requested_by=actor.user, total=total)
            if enqueue:
                run_id = str(run.pk)
                transaction.on_commit(lambda: _enqueue(run_id))
    except IntegrityError:
        # A concurrent request queued the same scanner first: the index keeps it to one.
        existing = ScanRun.objects.filter(scanner=scanner, status__in=OPEN_SCAN_STATUSES).first()
        if existing is None:
            raise
        return existing, False
    run.refresh_from_db()  # run eagerly (no broker), it has finished already
    return run, True


def _enqueue(run_id: str) -> None:
    try:
        tasks.scan_run.delay(run_id)
    except Exception:
        # The broker is unreachable: the run would never start, so it fails now (and frees its slot).
        logger.warning("could not enqueue promotion scan %s", run_id, exc_info=True)
        ScanRun.objects.filter(pk=run_id, status=ScanStatus.QUEUED).update(
            status=ScanStatus.FAILED, finished_at=timezone.now(), error="Could not reach the task queue; ask again."
        )


def _scan_runs_abandon(*, scanner: str) -> int:
    """Runs queued, or running, for longer than SCAN_RUN_STALE_SECONDS were lost (a worker died
    mid-run, a message was never delivered): they are marked failed, so they no longer hold the
    scanner's one open slot."""
    now = timezone.now()
    cutoff = now - timedelta(seconds=promotions_settings.SCAN_RUN_STALE_SECONDS)
    lost = Q(status=ScanStatus.QUEUED, created_at__lt=cutoff) | Q(status=ScanStatus.RUNNING, started_at__lt=cutoff)
    return ScanRun.objects.filter(lost, scanner=scanner).update(
        status=ScanStatus.FAILED,
        finished_at=now,
        error=f"Abandoned: not finished within {promotions_settings.SCAN_RUN_STALE_SECONDS} seconds.",
    )


def scan_run_execute(*, scan_run_id: str) -> ScanRun | None:
    """Run a queued scan: running, then succeeded with each scanner's report, or failed with the error
    (and the reports of the scanners that finished before it). A run that is missing, already running
    elsewhere or finished is left as it is, so running the task twice changes nothing."""
    with transaction.atomic():
        run = (
            ScanRun.objects.select_for_update(of=("self",))
            .select_related("requested_by")
            .filter(pk=scan_run_id, status=ScanStatus.QUEUED)
            .first()
        )
        if run is None:
            return ScanRun.objects.filter(pk=scan_run_id).first()
        run.status, run.started_at = ScanStatus.RUNNING, timezone.now()
        run.save(update_fields=["status", "started_at"])
    # The proposals' audit events name who asked for the scan (the system for scheduled ones).
    actor = Actor(user=run.requested_by) if run.requested_by is not None else Actor.for_system()
    done: dict[str, dict] = {}

    def on_step(name: str, step: int, total: int, reports: dict[str, Any]) -> None:
        done.update({finished: asdict(report) for finished, report in reports.items()})
        ScanRun.objects.filter(pk=run.pk).update(current=name, step=step, total=total, report=done)

    try:
        reports = promotions_scan(actor=actor, scanner=run.scanner, on_step=on_step)
    except Exception as exc:
        # Recorded on the run (and logged), not raised: the run must not stay "running", and the
        # scanners that finished first keep their report (each commits its own proposals).
        logger.exception("promotion scan %s failed", run.pk)
        _scan_run_finish(run=run, status=ScanStatus.FAILED, reports=done, error=f"{type(exc).__name__}: {exc}")
        return run
    done = {name: asdict(report) for name, report in reports.items()}
    _scan_run_finish(run=run, status=ScanStatus.SUCCEEDED, reports=done, error="")
    return run


def _scan_run_finish(*, run: ScanRun, status: str, reports: dict[str, dict], error: str) -> None:
    run.status, run.report, run.error, run.finished_at = status, reports, error[:10_000], timezone.now()
    run.current, run.step = "", run.total
    run.save(update_fields=["status", "report", "error", "finished_at", "current", "step"])


def scan_run_now(*, scanner: str) -> ScanRun | None:
    """The scheduled scans: queue a run of ``scanner`` for the system and run it here, in the worker
    (if a run of it is already open, that one is run if still queued, else left to its worker)."""
    run, _ = scan_run_request(actor=Actor.for_system(), scanner=scanner, enqueue=False)
    return scan_run_execute(scan_run_id=str(run.pk))
