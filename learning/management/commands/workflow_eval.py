"""Workflow detection measured on learning/analyzer/data/workflow_sessions.jsonl, group-wise.

Each group is replayed as a fresh user's history in day order: a real group "forms" when one of
its first three requests matches at least two earlier ones; a trap forms when any of its requests
does. The two thresholds are chosen on the other folds' groups only (grid search, 7 folds), so
every figure is for groups the thresholds were not chosen on. Also printed: the share of pairs
from different tasks that match (cross-task false matches) and the result with the shipped
thresholds on all groups (not cross-validated).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand

from core.text import content_words
from learning.analyzer import workflows

DATA = Path(workflows.__file__).parent / "data" / "workflow_sessions.jsonl"
GRID_RESIDUAL = [round(0.26 + 0.02 * i, 2) for i in range(10)]
GRID_WHOLE = [round(0.24 + 0.02 * i, 2) for i in range(10)]
FOLDS = 7


def _score(rows: list[dict[str, Any]], sims: dict, groups: list[str], residual: float, whole: float) -> dict:
    def same(i: int, j: int) -> bool:
        s = sims[(min(i, j), max(i, j))]
        return s.residual >= residual and s.whole >= whole

    real = trap = real_total = trap_total = 0
    wrong: list[str] = []
    for group in groups:
        members = sorted((i for i, r in enumerate(rows) if r["group"] == group), key=lambda i: rows[i]["day"])
        is_trap = rows[members[0]]["trap"]
        horizon = len(members) if is_trap else min(3, len(members))
        formed = any(sum(same(members[n], j) for j in members[:n]) >= workflows.MIN_MATCHES for n in range(horizon))
        if is_trap:
            trap_total += 1
            trap += formed
        else:
            real_total += 1
            real += formed
        if formed == is_trap:
            wrong.append(group)
    cross = [
        same(i, j)
        for (i, j) in sims
        if rows[i]["kind"] != rows[j]["kind"] and (rows[i]["group"] in groups or rows[j]["group"] in groups)
    ]
    return {
        "real": real,
        "real_total": real_total,
        "trap": trap,
        "trap_total": trap_total,
        "cross_false_match": sum(cross) / max(1, len(cross)),
        "wrong": wrong,
    }


def _utility(s: dict) -> float:
    # A false workflow costs more than a missed one; cross-task matches break ties.
    return s["real"] - 2 * s["trap"] - 5 * s["cross_false_match"]


class Command(BaseCommand):
    help = "Workflow detection on the paraphrase/trap set, with group-wise cross-validation."

    def handle(self, *args: Any, **options: Any) -> None:
        rows = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
        vectors = workflows._vectors([w for r in rows for w in content_words(r["text"])])
        sims = {
            (i, j): workflows.task_similarity(rows[i]["text"], rows[j]["text"], vectors)
            for i, j in itertools.combinations(range(len(rows)), 2)
        }
        groups = sorted({r["group"] for r in rows})
        real = [g for g in groups if not next(r for r in rows if r["group"] == g)["trap"]]
        traps = [g for g in groups if g not in real]
        folds = [real[k::FOLDS] + traps[k::FOLDS] for k in range(FOLDS)]
        totals = {"real": 0, "real_total": 0, "trap": 0, "trap_total": 0, "wrong": []}
        cross = []
        for fold in folds:
            train = [g for g in groups if g not in fold]
            grid = [(r, w) for r in GRID_RESIDUAL for w in GRID_WHOLE]
            best = max(grid, key=lambda rw: _utility(_score(rows, sims, train, *rw)))
            test = _score(rows, sims, fold, *best)
            for key in ("real", "real_total", "trap", "trap_total"):
                totals[key] += test[key]
            totals["wrong"] += test["wrong"]
            cross.append(test["cross_false_match"])
            self.stdout.write(
                f"fold {fold}: thresholds residual>={best[0]} whole>={best[1]} -> {test['wrong'] or 'ok'}"
            )
        self.stdout.write(
            f"cross-validated ({FOLDS} folds over groups): real groups forming a workflow by the 3rd request "
            f"{totals['real']}/{totals['real_total']}; traps forming one {totals['trap']}/{totals['trap_total']}; "
            f"cross-task pairs matched {sum(cross) / len(cross):.1%}; misjudged {sorted(totals['wrong'])}"
        )
        shipped = _score(rows, sims, groups, workflows.RESIDUAL_MIN, workflows.WHOLE_MIN)
        self.stdout.write(
            f"shipped thresholds (residual>={workflows.RESIDUAL_MIN} whole>={workflows.WHOLE_MIN}, all groups, "
            f"not cross-validated): real {shipped['real']}/{shipped['real_total']}, "
            f"traps {shipped['trap']}/{shipped['trap_total']}, cross-task pairs matched "
            f"{shipped['cross_false_match']:.1%}, misjudged {shipped['wrong']}"
        )
