"""Background work of the promotion ledger."""

from __future__ import annotations

from celery import shared_task

from promotions import services


@shared_task(name="promotions.expire_candidates", ignore_result=True)
def expire_candidates() -> int:
    """Candidates nobody reviewed before their expires_at become expired."""
    return services.promotions_expire()


@shared_task(name="promotions.retrieval_scan", ignore_result=True)
def retrieval_scan() -> dict:
    """Propose retrieval-weight candidates from the search traces (scheduled and on demand)."""
    from dataclasses import asdict

    from promotions.scanners import retrieval_scan as scan

    return asdict(scan())


@shared_task(name="promotions.agent_learning_scan", ignore_result=True)
def agent_learning_scan() -> dict:
    """Propose prevention prompts from repeated thumbs-down on similar responses."""
    from dataclasses import asdict

    from promotions.scanners import agent_learning_scan as scan

    return asdict(scan())


@shared_task(name="promotions.task_example_scan", ignore_result=True)
def task_example_scan() -> dict:
    """Propose completed, well-rated tasks as task examples."""
    from dataclasses import asdict

    from promotions.scanners import task_example_scan as scan

    return asdict(scan())
