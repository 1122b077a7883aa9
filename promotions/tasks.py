"""Background work of the promotion ledger."""

from __future__ import annotations

from celery import shared_task

from promotions import services


@shared_task(name="promotions.expire_candidates", ignore_result=True)
def expire_candidates() -> int:
    """Candidates nobody reviewed before their expires_at become expired."""
    return services.promotions_expire()


def _scan(scanner: str) -> dict:
    from dataclasses import asdict

    from promotions.scanners import promotions_scan

    return {name: asdict(report) for name, report in promotions_scan(scanner=scanner).items()}


@shared_task(name="promotions.retrieval_scan", ignore_result=True)
def retrieval_scan() -> dict:
    """Propose retrieval-weight candidates from the search traces (scheduled and on demand)."""
    return _scan("retrieval")


@shared_task(name="promotions.agent_learning_scan", ignore_result=True)
def agent_learning_scan() -> dict:
    """Propose prevention prompts from repeated thumbs-down on similar responses."""
    return _scan("agent_learning")


@shared_task(name="promotions.task_example_scan", ignore_result=True)
def task_example_scan() -> dict:
    """Propose completed, well-rated tasks as task examples."""
    return _scan("task_example")
