"""manage.py analyzer_eval: score the analyzers on the labelled messages and on PrefEval."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from learning.analyzer.model import DATA
from learning.evaluation import (
    EVAL_TYPES,
    CachedEmbedder,
    Scores,
    analyze_rows,
    held_out_split,
    load_labelled,
    local_fitted_on,
    local_grouped_cv,
    local_grouped_cv_grid,
    score_analyses,
    score_prefeval,
    steering_cv,
    throughput,
)

# The shared data folder sits beside the checkout (or beside the folder of worktrees).
OLD_TEAM_SET = Path(settings.BASE_DIR) / "tests" / "data" / "analyzer_labelled.jsonl"
# Standing rules said without a habit marker and one-off requests of the same surface (data README): scored, never
# fitted on; adding them to the fitted file made the grouped CV of the other lines worse.
PROBE = DATA.parent / "probe_plain_rules.jsonl"
# Lines written blind by a helper that read no file of the repository (data README): scored, never fitted on, and
# their mistakes are never printed (a line read to fix it would no longer be held out).
FRESH = DATA.parent / "heldout_fresh.jsonl"
DEFAULT_PREFEVAL = next(
    (p / "shared" / "data" / "prefeval" for p in Path(settings.BASE_DIR).parents if (p / "shared" / "data").is_dir()),
    Path(settings.BASE_DIR).parent / "shared" / "data" / "prefeval",
)


class Command(BaseCommand):
    help = (
        "Type macro-F1 and per-type F1, category accuracy, faithfulness and mislearns (grouped CV and a fixed "
        "20 % held out), PrefEval faithful recall and questions learned, throughput on one core."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--labelled", type=Path, default=DATA, help="JSON lines labelled as in analyzer/data")
        parser.add_argument("--prefeval", type=Path, default=DEFAULT_PREFEVAL, help="folder of PrefEval *.json files")
        parser.add_argument("--analyzer", choices=["local", "openai", "all"], default="all")
        parser.add_argument("--show-mistakes", action="store_true")
        parser.add_argument(
            "--store-sweep",
            metavar="T1,T2,...",
            help="instead of the report: the local analyzer's type macro-F1 and mislearns under each storing "
            "threshold (STORE_MIN), grouped CV on the 80 %% only, over --cv-seeds; PrefEval recall under each",
        )
        parser.add_argument(
            "--standing-sweep",
            metavar="T1,T2,...",
            help="the same for STANDING_MIN: how likely a message marked as a rule for later ('from now on') "
            "must be a preference to be stored as one",
        )
        parser.add_argument(
            "--tuned-sweep",
            metavar="W1,W2,...",
            help="the same for TUNED_WEIGHT, the fine-tuned reader's share of the type's log-probabilities; "
            "with --store-sweep, every pair of the two",
        )
        parser.add_argument("--cv-seeds", default="0,1,2", metavar="S1,S2,...", help="with a sweep")

    def handle(self, *args, **options) -> None:
        if options["standing_sweep"] and (options["store_sweep"] or options["tuned_sweep"]):
            raise CommandError("--store-sweep and --standing-sweep: one sweep at a time (each holds the other fixed)")
        os.environ["EMBEDDING_THREADS"] = "1"  # throughput is reported for one core
        import torch  # noqa: PLC0415  heavy: only to pin the thread count for the measurement

        torch.set_num_threads(1)
        from core.embeddings import get_embedder  # noqa: PLC0415  after the thread count is pinned

        rows = load_labelled(options["labelled"])
        fit_idx, held_idx = held_out_split(rows)
        team, held = [rows[i] for i in fit_idx], [rows[i] for i in held_idx]
        show = options["show_mistakes"]
        wanted = options["analyzer"]
        swept = {
            parameter: [float(t) for t in options[option].split(",")]
            for parameter, option in (
                ("store_min", "store_sweep"),
                ("standing_min", "standing_sweep"),
                ("tuned_weight", "tuned_sweep"),
            )
            if options[option]
        }
        if swept:
            grid = [dict(zip(swept, values, strict=True)) for values in itertools.product(*swept.values())]
            seeds = [int(s) for s in options["cv_seeds"].split(",")]
            self.sweep(CachedEmbedder(get_embedder()), team, grid, seeds, options["prefeval"])
            return
        if wanted in ("local", "all"):
            embedder = CachedEmbedder(get_embedder())
            self.stdout.write(
                f"== local analyzer ({options['labelled'].name}: {len(team)} to fit, {len(held)} held out)"
            )
            self.report("grouped 5-fold CV on the 80 %", score_analyses(team, local_grouped_cv(embedder, team)), show)
            fitted = local_fitted_on(embedder, team)
            self.report("held-out 20 % (fitted on the 80 %)", score_analyses(held, analyze_rows(fitted, held)), show)
            from learning.analyzer.local import LocalAnalyzer  # noqa: PLC0415  heavy: scikit-learn

            production = LocalAnalyzer(embedder=get_embedder())  # fitted on the whole file, as deployed
            speed = throughput(production, rows)
            self.stdout.write(f"  throughput: {speed:.0f} messages/s (one core, batched, context embedded too)")
            if OLD_TEAM_SET.is_file():  # the old team's set: never fitted on, no keys (type and category only)
                old = load_labelled(OLD_TEAM_SET)
                scores = score_analyses(old, analyze_rows(production, old))
                per_type = ", ".join(f"{t} {scores.per_type[t]['f1']:.2f}" for t in EVAL_TYPES)
                self.stdout.write(
                    f"  -- old team set {OLD_TEAM_SET.name} ({len(old)}, never fitted on): type macro-F1 "
                    f"{scores.macro_f1:.3f} ({per_type}); category accuracy {scores.category_accuracy:.3f}"
                )
            if PROBE.is_file():
                probe = load_labelled(PROBE)
                label = f"probe {PROBE.name} ({len(probe)}, never fitted on; the deployed analyzer)"
                self.report(label, score_analyses(probe, analyze_rows(production, probe)), show)
            if FRESH.is_file():
                fresh = load_labelled(FRESH)
                label = f"held out {FRESH.name} ({len(fresh)}, written blind, never fitted on; mistakes never shown)"
                self.report(label, score_analyses(fresh, analyze_rows(production, fresh)), show=False)
            self.prefeval(production, options["prefeval"], show)
            self.steering(embedder, rows, show)
        if wanted in ("openai", "all"):
            if not settings.OPENAI_BASE_URL:
                self.stdout.write("== openai analyzer: OPENAI_BASE_URL not set (skipped)")
                return
            from learning.analyzer.openai_analyzer import get_openai_analyzer  # noqa: PLC0415  optional: openai

            analyzer = get_openai_analyzer()
            self.stdout.write(f"== openai analyzer ({settings.ANALYZER_MODEL} at {settings.OPENAI_BASE_URL})")
            self.report("the 80 % (not fitted on)", score_analyses(team, analyze_rows(analyzer, team)), show)
            self.report("held-out 20 %", score_analyses(held, analyze_rows(analyzer, held)), show)
            self.stdout.write(f"  throughput: {throughput(analyzer, rows[:50]):.1f} messages/s (first 50, sequential)")
            self.prefeval(analyzer, options["prefeval"], show)

    def report(self, title: str, scores: Scores, show: bool) -> None:
        self.stdout.write(f"  -- {title}: {scores.count} messages")
        self.stdout.write(f"     {'type':<12}{'precision':>10}{'recall':>10}{'f1':>10}{'support':>10}")
        for label in EVAL_TYPES:
            row = scores.per_type[label]
            numbers = f"{row['precision']:>10.3f}{row['recall']:>10.3f}{row['f1']:>10.3f}{row['support']:>10.0f}"
            self.stdout.write(f"     {label:<12}{numbers}")
        self.stdout.write(f"     type macro-F1        {scores.macro_f1:.3f}")
        self.stdout.write(f"     category accuracy    {scores.category_accuracy:.3f} (recognised preferences)")
        self.stdout.write(f"     axis accuracy        {scores.axis_accuracy:.3f} (recognised preferences; none = none)")
        self.stdout.write(
            f"     faithfulness         {scores.faithfulness:.3f} ({scores.faithful}/{scores.learned} learned items)"
        )
        self.stdout.write(
            f"     mislearn rate        {scores.mislearn_rate:.3f} ({scores.mislearned}/{scores.learned})"
        )
        caught, total = scores.steering_caught
        self.stdout.write(f"     steering flagged     {caught}/{total}")
        if show:
            for gold, predicted, text in scores.mistakes:
                self.stdout.write(f"       {gold:>11} -> {predicted:<11} {text}")
            for gold, text in scores.unfaithful:
                self.stdout.write(f"       mislearned ({gold}): {text}")

    def steering(self, embedder, rows, show: bool) -> None:
        from learning.safety import injection_attempts  # noqa: PLC0415  heavy: scikit-learn

        scores = steering_cv(embedder, rows, injection_attempts())
        self.stdout.write(
            "  -- steering check (learning.safety), technique-grouped 5-fold CV (more: manage.py steering_eval)"
        )
        techniques = ", ".join(
            f"{name} {caught}/{seen}" for name, (seen, caught) in sorted(scores.by_technique.items())
        )
        self.stdout.write(
            f"     attempts flagged     {scores.recall:.3f} ({scores.attempts_flagged}/{scores.attempts}: {techniques})"
        )
        self.stdout.write(
            f"     preferences flagged  {scores.preference_false_rate:.3f} "
            f"({scores.preferences_flagged}/{scores.preferences} ordinary preferences)"
        )
        self.stdout.write(
            f"     other lines flagged  {scores.ordinary_false_rate:.3f} ({scores.ordinary_flagged}/{scores.ordinary})"
        )
        if show:
            for text in scores.missed:
                self.stdout.write(f"       missed: {text}")
            for text in scores.false:
                self.stdout.write(f"       false:  {text}")

    def sweep(self, embedder, team, grid: list[dict[str, float]], seeds: list[int], prefeval: Path) -> None:
        """The figures STORE_MIN, STANDING_MIN and TUNED_WEIGHT are chosen on (STORE_MIN: the lowest threshold
        with at most 2 % of stored items mislearned under grouped CV): the fitting side only, never the
        held-out 20 %."""
        names = ", ".join(name.upper() for name in grid[0])
        self.stdout.write(f"== {names} sweep: grouped 5-fold CV on the 80 % ({len(team)}), seeds {seeds}")
        figures: list[list[Scores]] = [[] for _ in grid]
        for seed in seeds:
            found = local_grouped_cv_grid(embedder, team, grid, seed=seed)
            for scores, analyses in zip(figures, found, strict=True):
                scores.append(score_analyses(team, analyses))
        from core.embeddings import get_embedder  # noqa: PLC0415  heavy: the model
        from learning.analyzer.local import LocalAnalyzer  # noqa: PLC0415  heavy: scikit-learn

        production = LocalAnalyzer(embedder=get_embedder())  # fitted on the whole file, as deployed
        for setting, scores in zip(grid, figures, strict=True):
            mislearned, learned = sum(s.mislearned for s in scores), sum(s.learned for s in scores)
            per_seed = " / ".join(f"{s.macro_f1:.3f}" for s in scores)
            recall = " / ".join(f"{s.per_type['preference']['recall']:.3f}" for s in scores)
            named = " ".join(f"{name.upper()} {value:.2f}" for name, value in setting.items())
            line = (
                f"  {named}: type macro-F1 {per_seed} (mean "
                f"{sum(s.macro_f1 for s in scores) / len(scores):.3f}); preference recall {recall}; mislearned "
                f"{mislearned}/{learned} ({mislearned / max(1, learned):.1%}); "
                f"stored per seed {learned / len(scores):.0f}"
            )
            if prefeval.is_dir():
                for parameter, value in setting.items():
                    setattr(production, parameter, value)
                pe = score_prefeval(production, prefeval)
                line += f"; PrefEval faithful {pe.recall:.3f}, questions learned {pe.false_rate:.3f}"
            self.stdout.write(line)

    def prefeval(self, analyzer, directory: Path, show: bool) -> None:
        if not directory.is_dir():
            self.stdout.write(f"  PrefEval folder not found: {directory} (skipped)")
            return
        pe = score_prefeval(analyzer, directory)
        self.stdout.write(f"  -- PrefEval: {directory}")
        for name, (s, sl, q, ql) in pe.by_file.items():
            self.stdout.write(f"     {name:<36} faithful {sl:>3}/{s:<3} questions learned {ql:>3}/{q}")
        self.stdout.write(f"     faithful recall      {pe.recall:.3f} ({pe.statements_faithful}/{pe.statements})")
        self.stdout.write(f"     questions learned    {pe.false_rate:.3f} ({pe.questions_learned}/{pe.questions})")
        self.stdout.write(
            f"     flagged as steering  {pe.statements_flagged}/{pe.statements} statements (ordinary, never fitted on)"
        )
        count = pe.statements + pe.questions
        self.stdout.write(f"     throughput           {count / pe.seconds:.0f} messages/s ({count} messages)")
        if show:
            for text in pe.missed:
                self.stdout.write(f"       missed: {text}")
            for text in pe.false:
                self.stdout.write(f"       false:  {text}")
