"""Workflow detection measured on learning/analyzer/data/workflow_sessions.jsonl (tuning set) and
workflow_sessions_heldout.jsonl (held out: never used to choose anything).

Group-wise: each group is replayed as a fresh user's history in day order; a real group "forms"
when one of its first three requests has two earlier ones that match it and each other (the
detection's triangle rule); a trap forms when any of its requests does. The two thresholds are
chosen on the other folds' groups only (grid search, 7 folds: leave groups out), so these figures
are for groups the thresholds were not chosen on. One history: all requests of a file replayed as
one user's, in day order; a formation is "spurious" when the triangle is not three requests of one
kind. Also printed: the share of cross-task pairs that match, the shipped thresholds on all tuning
groups (not cross-validated) and on the held-out file (thresholds fixed, nothing chosen there), and
the name each held-out group would get.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand

from core.embeddings import get_embedder
from core.text import content_words
from learning.analyzer import workflows

DATA = Path(workflows.__file__).parent / "data" / "workflow_sessions.jsonl"
HELD_OUT = Path(workflows.__file__).parent / "data" / "workflow_sessions_heldout.jsonl"
GRID_RESIDUAL = [round(0.05 + 0.01 * i, 2) for i in range(21)]
GRID_SENTENCE = [round(0.05 + 0.025 * i, 3) for i in range(17)]
FOLDS = 7


class _Replay:
    def __init__(self, rows: list[dict[str, Any]], sims: dict, residual: float, sentence: float) -> None:
        self.rows, self.sims, self.residual, self.sentence = rows, sims, residual, sentence

    def same(self, i: int, j: int) -> bool:
        s = self.sims[(min(i, j), max(i, j))]
        return s.residual >= self.residual and s.sentence >= self.sentence

    def triangles(self, i: int, prior: list[int]) -> list[tuple[int, int]]:
        matched = [j for j in prior if self.same(i, j)]
        return [(a, b) for a, b in itertools.combinations(matched, 2) if self.same(a, b)]

    def groups(self, groups: list[str]) -> dict:
        out: dict[str, Any] = {"real": 0, "real_total": 0, "trap": 0, "trap_total": 0, "wrong": []}
        for group in groups:
            members = sorted((i for i, r in enumerate(self.rows) if r["group"] == group), key=self._day)
            is_trap = self.rows[members[0]]["trap"]
            horizon = len(members) if is_trap else min(3, len(members))
            formed = any(self.triangles(members[n], members[:n]) for n in range(horizon))
            kind = "trap" if is_trap else "real"
            out[f"{kind}_total"] += 1
            out[kind] += formed
            if formed == is_trap:
                out["wrong"].append(group)
        cross = [
            self.same(i, j)
            for (i, j) in self.sims
            if self.rows[i]["kind"] != self.rows[j]["kind"]
            and (self.rows[i]["group"] in groups or self.rows[j]["group"] in groups)
        ]
        out["cross"] = sum(cross) / max(1, len(cross))
        return out

    def one_history(self) -> tuple[int, int]:
        order = sorted(range(len(self.rows)), key=lambda i: (self._day(i), self.rows[i]["group"]))
        good = spurious = 0
        for n, i in enumerate(order):
            found = self.triangles(i, order[:n])
            if found:
                kind = self.rows[i]["kind"]
                if any(self.rows[a]["kind"] == self.rows[b]["kind"] == kind for a, b in found):
                    good += 1
                else:
                    spurious += 1
        return good, spurious

    def _day(self, i: int) -> int:
        return self.rows[i]["day"]


def _utility(s: dict) -> float:
    # A false workflow costs more than a missed one, and in a history of a hundred prompts every
    # percent of cross-task matches is another unrelated request counted in: they weigh heavily.
    return s["real"] - 2 * s["trap"] - 50 * s["cross"]


def _load(path: Path) -> tuple[list[dict[str, Any]], dict]:
    """The rows of a sessions file and the task similarity of every pair of its requests."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    texts = [r["text"] for r in rows]
    sentence = workflows.centred(get_embedder().embed(texts))
    workflows._vectors([w for t in texts for w in content_words(t)])
    sims = {
        (i, j): workflows.task_similarity(texts[i], texts[j], float(sentence[i] @ sentence[j]))
        for i, j in itertools.combinations(range(len(rows)), 2)
    }
    return rows, sims


def _names(rows: list[dict[str, Any]]) -> list[str]:
    """Each real group's workflow name (from its first three requests, as detection would name it
    on the third) beside the task the file says it is."""
    lines = []
    for group in sorted({r["group"] for r in rows if not r["trap"]}):
        texts = [r["text"] for r in sorted((r for r in rows if r["group"] == group), key=lambda r: r["day"])][:3]
        kind = next(r["kind"] for r in rows if r["group"] == group)
        lines.append(f"  {group} {kind!r} -> {workflows.workflow_name(texts)!r}")
    return lines


def _shipped(rows: list[dict[str, Any]], sims: dict) -> str:
    replay = _Replay(rows, sims, workflows.RESIDUAL_MIN, workflows.SENTENCE_MIN)
    result = replay.groups(sorted({r["group"] for r in rows}))
    good, spurious = replay.one_history()
    return (
        f"real {result['real']}/{result['real_total']}, traps {result['trap']}/{result['trap_total']}, cross-task "
        f"pairs matched {result['cross']:.1%}; all {len(rows)} requests as one history: {good} formations from "
        f"three requests of one kind, {spurious} spurious; misjudged {sorted(result['wrong'])}"
    )


class Command(BaseCommand):
    help = "Workflow detection on the paraphrase/trap set, with group-wise cross-validation and a held-out file."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--held-out", default=str(HELD_OUT), help="sessions file to score with fixed thresholds")

    def handle(self, *args: Any, **options: Any) -> None:
        rows, sims = _load(DATA)
        groups = sorted({r["group"] for r in rows})
        real = [g for g in groups if not next(r for r in rows if r["group"] == g)["trap"]]
        traps = [g for g in groups if g not in real]
        folds = [real[k::FOLDS] + traps[k::FOLDS] for k in range(FOLDS)]
        grid = [(r, s) for r in GRID_RESIDUAL for s in GRID_SENTENCE]
        totals: dict[str, Any] = {"real": 0, "real_total": 0, "trap": 0, "trap_total": 0, "wrong": [], "cross": []}
        for fold in folds:
            train = [g for g in groups if g not in fold]
            best = max(grid, key=lambda rs: _utility(_Replay(rows, sims, *rs).groups(train)))
            test = _Replay(rows, sims, *best).groups(fold)
            for key in ("real", "real_total", "trap", "trap_total"):
                totals[key] += test[key]
            totals["wrong"] += test["wrong"]
            totals["cross"].append(test["cross"])
            self.stdout.write(f"fold {fold}: residual>={best[0]} sentence>={best[1]} -> misjudged {test['wrong']}")
        self.stdout.write(
            f"cross-validated ({FOLDS} folds over groups): real groups forming a workflow by the 3rd request "
            f"{totals['real']}/{totals['real_total']}; traps forming one {totals['trap']}/{totals['trap_total']}; "
            f"cross-task pairs matched {sum(totals['cross']) / FOLDS:.1%}; misjudged {sorted(totals['wrong'])}"
        )
        chosen = max(grid, key=lambda rs: _utility(_Replay(rows, sims, *rs).groups(groups)))
        self.stdout.write(f"chosen on all groups (ship these): residual>={chosen[0]} sentence>={chosen[1]}")
        thresholds = f"residual>={workflows.RESIDUAL_MIN} sentence>={workflows.SENTENCE_MIN}"
        self.stdout.write(f"shipped thresholds ({thresholds}), all groups, not cross-validated: {_shipped(rows, sims)}")
        held_out = Path(options["held_out"])
        if held_out.exists():
            held_rows, held_sims = _load(held_out)
            self.stdout.write(
                f"held out ({held_out.name}, {thresholds}, nothing chosen on it): {_shipped(held_rows, held_sims)}"
            )
            self.stdout.write("held-out workflow names (the task as written in the file -> the name given):")
            for line in _names(held_rows):
                self.stdout.write(line)
