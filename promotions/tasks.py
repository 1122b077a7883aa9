"""Background work of the promotion ledger: thin tasks over its services."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from promotions import scans, services


@shared_task(name="promotions.expire_candidates", ignore_result=True)
def expire_candidates() -> int:
    """Candidates nobody reviewed before their expires_at become expired."""
    return services.promotions_expire()


@shared_task(name="promotions.scan_run", ignore_result=True)
def scan_run(scan_run_id: str) -> None:
    """Run a queued scan (the API's and the console's); a missing or finished run is left alone."""
    scans.scan_run_execute(scan_run_id=scan_run_id)


def _scheduled(scanner: str) -> dict[str, Any]:
    run = scans.scan_run_now(scanner=scanner)
    return run.report if run is not None else {}


@shared_task(name="promotions.retrieval_scan", ignore_result=True)
def retrieval_scan() -> dict[str, Any]:
    """Propose retrieval-weight candidates from the search traces (scheduled), through a scan run."""
    return _scheduled("retrieval")


@shared_task(name="promotions.agent_learning_scan", ignore_result=True)
def agent_learning_scan() -> dict[str, Any]:
    """Propose prevention prompts from repeated thumbs-down on similar responses (scheduled)."""
    return _scheduled("agent_learning")


@shared_task(name="promotions.task_example_scan", ignore_result=True)
def task_example_scan() -> dict[str, Any]:
    """Propose completed, well-rated tasks as task examples (scheduled)."""
    return _scheduled("task_example")
