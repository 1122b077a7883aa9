"""manage.py analyzer_eval: score the analyzer on labelled messages and on PrefEval."""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from learning.analyzer import get_analyzer
from learning.analyzer.base import AnalyzerInput
from learning.analyzer.local import get_local_analyzer
from learning.evaluation import EVAL_TYPES, load_labelled, score_labelled, score_prefeval

DEFAULT_LABELLED = Path(settings.BASE_DIR) / "tests" / "data" / "analyzer_labelled.jsonl"
DEFAULT_PREFEVAL = Path(settings.BASE_DIR).parent / "shared" / "data" / "prefeval"


class Command(BaseCommand):
    help = "Per-type precision/recall/F1, category accuracy, PrefEval recall and throughput of the analyzer."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--labelled", type=Path, default=DEFAULT_LABELLED, help="JSON lines: text, type, category")
        parser.add_argument("--prefeval", type=Path, default=DEFAULT_PREFEVAL, help="folder of PrefEval *.json files")
        parser.add_argument("--analyzer", choices=["local", "configured"], default="local")
        parser.add_argument("--show-mistakes", action="store_true")

    def handle(self, *args, **options) -> None:
        os.environ.setdefault("EMBEDDING_THREADS", "1")  # throughput is reported for one core
        analyzer = get_local_analyzer() if options["analyzer"] == "local" else get_analyzer()
        analyzer.analyze_many([])  # warm: model loaded and classifiers fitted before timing
        analyzer.analyze_many([AnalyzerInput(current_message="hello")])

        rows = load_labelled(options["labelled"])
        scores = score_labelled(analyzer, rows)
        self.stdout.write(f"Labelled set: {options['labelled']} ({scores.count} messages), analyzer {analyzer.name}")
        self.stdout.write(f"  {'type':<12}{'precision':>10}{'recall':>10}{'f1':>10}{'support':>10}")
        for label in EVAL_TYPES:
            row = scores.per_type[label]
            self.stdout.write(
                f"  {label:<12}{row['precision']:>10.3f}{row['recall']:>10.3f}{row['f1']:>10.3f}{row['support']:>10.0f}"
            )
        self.stdout.write(f"  type macro-F1          {scores.macro_f1:.3f}")
        self.stdout.write(f"  category accuracy      {scores.category_accuracy:.3f}")
        self.stdout.write(f"  canonical preference   {scores.preference_accuracy:.3f}")
        self.stdout.write(f"  throughput             {scores.messages_per_second:.0f} messages/s (one core, batched)")
        if options["show_mistakes"]:
            for gold, predicted, text in scores.mistakes:
                self.stdout.write(f"    {gold:>11} -> {predicted:<11} {text}")

        if options["prefeval"].is_dir():
            pe = score_prefeval(analyzer, options["prefeval"])
            self.stdout.write(f"PrefEval: {options['prefeval']}")
            for name, (s, sl, q, ql) in pe.by_file.items():
                self.stdout.write(f"  {name:<40} statements {sl:>3}/{s:<3} questions learned {ql:>3}/{q}")
            self.stdout.write(f"  statement recall       {pe.recall:.3f} ({pe.statements_learned}/{pe.statements})")
            self.stdout.write(f"  questions learned      {pe.false_rate:.3f} ({pe.questions_learned}/{pe.questions})")
            count = pe.statements + pe.questions
            self.stdout.write(
                f"  throughput             {count / pe.seconds:.0f} messages/s ({count} messages, one core)"
            )
            if options["show_mistakes"]:
                for text in pe.missed:
                    self.stdout.write(f"    missed: {text}")
                for text in pe.false:
                    self.stdout.write(f"    false:  {text}")
        else:
            self.stdout.write(f"PrefEval folder not found: {options['prefeval']} (skipped)")
