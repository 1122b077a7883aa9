"""Scanners: rules that turn repeated evidence into promotion candidates, one module each
(``retrieval``, ``agent_learning``, ``task_example``, ``packet_rule``, ``attribution``), run through
``promotions_scan``.

A scan is background work: the API, the console and the beat schedule queue a ``ScanRun``
(see ``promotions.scans``), and a worker runs it through here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from accounts.actors import Actor
from config.exceptions import ApplicationError
from promotions.models import Scanner
from promotions.scanners.agent_learning import agent_learning_scan
from promotions.scanners.attribution import attribution_scan
from promotions.scanners.eval_failure import eval_failure_scan
from promotions.scanners.packet_rule import packet_rule_scan
from promotions.scanners.retrieval import retrieval_scan
from promotions.scanners.task_example import task_example_scan
from promotions.scanners.task_rating import task_rating_scan
from promotions.scanners.tool_failure import tool_failure_scan
from promotions.scanners.workflow_outcome import workflow_outcome_scan

# Each scanner by name, in the order "all" runs them.
SCANNERS: dict[str, Callable[..., Any]] = {
    Scanner.RETRIEVAL: retrieval_scan,
    Scanner.AGENT_LEARNING: agent_learning_scan,
    Scanner.TASK_EXAMPLE: task_example_scan,
    Scanner.PACKET_RULE: packet_rule_scan,
    Scanner.ATTRIBUTION: attribution_scan,
    Scanner.TOOL_FAILURE: tool_failure_scan,
    Scanner.TASK_RATING: task_rating_scan,
    Scanner.WORKFLOW_OUTCOME: workflow_outcome_scan,
    Scanner.EVAL_FAILURE: eval_failure_scan,
}

# Progress of a scan: (scanner starting now, its 0-based step, number of steps, reports so far).
OnStep = Callable[[str, int, int, dict[str, Any]], None]


def scanners_for(scanner: str) -> list[str]:
    """The scanners one scan of ``scanner`` ("all" or a scanner's name) runs; unknown names are a 400."""
    if scanner == Scanner.ALL:
        return list(SCANNERS)
    if scanner not in SCANNERS:
        raise ApplicationError(f"scanner must be one of {', '.join(Scanner.values)}.", field="scanner")
    return [scanner]


def promotions_scan(
    *, actor: Actor | None = None, scanner: str = "all", on_step: OnStep | None = None
) -> dict[str, Any]:
    """Run one scanner or all of them; each one's report by name. ``on_step(name, step, total,
    reports)`` is called before each scanner starts, with the reports of those already done."""
    names = scanners_for(scanner)
    reports: dict[str, Any] = {}
    for step, name in enumerate(names):
        if on_step is not None:
            on_step(name, step, len(names), reports)
        reports[name] = SCANNERS[name](actor=actor)
    return reports
