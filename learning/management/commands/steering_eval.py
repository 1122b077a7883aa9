"""manage.py steering_eval: the steering check (learning.safety) on lines it was not fitted on, and its cost."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from django.core.management.base import BaseCommand

from learning.analyzer.model import DATA
from learning.management.commands.analyzer_eval import DEFAULT_PREFEVAL

THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


class Command(BaseCommand):
    help = (
        "Steering check: technique-grouped 5-fold CV (threshold curve, recall per technique, false flags per kind "
        "of ordinary line), leave-one-technique-out recall, PrefEval lines flagged, seconds per message."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--labelled", type=Path, default=DATA, help="JSON lines labelled as in analyzer/data")
        parser.add_argument("--prefeval", type=Path, default=DEFAULT_PREFEVAL, help="folder of PrefEval *.json files")
        parser.add_argument("--no-loto", action="store_true", help="skip leave-one-technique-out (one fit each)")
        parser.add_argument("--show-mistakes", action="store_true")

    def handle(self, *args, **options) -> None:
        os.environ["EMBEDDING_THREADS"] = "1"  # cost is reported for one core
        import torch  # noqa: PLC0415  heavy: only to pin the thread count for the measurement

        torch.set_num_threads(1)
        from core.embeddings import get_embedder  # noqa: PLC0415  after the thread count is pinned
        from learning.evaluation import CachedEmbedder, load_labelled  # noqa: PLC0415  heavy: scikit-learn
        from learning.safety import (  # noqa: PLC0415  heavy: scikit-learn
            STEERING_THRESHOLD,
            SteeringModel,
            injection_attempts,
            steering_negatives,
        )
        from learning.steering_eval import (  # noqa: PLC0415  heavy: scikit-learn
            leave_one_technique_out,
            out_of_fold,
            scores_at,
            steering_pool,
            threshold_for,
        )

        self.stdout.write(f"load average {os.getloadavg()[0]:.2f} (2 cores shared)")
        raw = get_embedder()
        embedder = CachedEmbedder(raw)
        rows = load_labelled(options["labelled"])
        pool = steering_pool(rows, injection_attempts(), steering_negatives())
        steering = sum(row.steering for row in pool)
        self.stdout.write(
            f"pool: {len(pool)} lines, {steering} steering ({len({r.technique for r in pool if r.steering})} "
            f"techniques), {len(pool) - steering} not"
        )
        oof = out_of_fold(embedder, pool)
        by_wording = out_of_fold(embedder, pool, by_technique=False)
        self.stdout.write("  -- technique-grouped 5-fold CV (a fold holds whole techniques: new techniques)")
        for threshold in THRESHOLDS:
            s = scores_at(pool, oof, threshold)
            self.stdout.write(
                f"     at {threshold:.2f}: attempts {s.recall:.3f} ({s.attempts_flagged}/{s.attempts}), "
                f"preferences {s.preference_false_rate:.3f} ({s.preferences_flagged}/{s.preferences}), "
                f"ordinary {s.ordinary_false_rate:.3f} ({s.ordinary_flagged}/{s.ordinary})"
            )
        grouped, worded = threshold_for(pool, oof, 0.02), threshold_for(pool, by_wording, 0.02)
        self.stdout.write(
            f"     lowest threshold with <= 2 % of ordinary preferences flagged: {grouped:.2f} in this CV, "
            f"{worded:.2f} in the CV by wording below, so {max(grouped, worded):.2f}; shipped: {STEERING_THRESHOLD:.2f}"
        )
        s = scores_at(pool, oof, STEERING_THRESHOLD)
        self.stdout.write(
            f"     at the shipped threshold: attempts {s.recall:.3f} ({s.attempts_flagged}/{s.attempts}), preferences "
            f"{s.preference_false_rate:.3f} ({s.preferences_flagged}/{s.preferences}), ordinary "
            f"{s.ordinary_false_rate:.3f} ({s.ordinary_flagged}/{s.ordinary}); by technique: " + _shares(s.by_technique)
        )
        kinds: dict[str, tuple[int, int]] = {}
        for row, p in zip(pool, oof, strict=True):
            if not row.steering:
                seen, flagged = kinds.get(row.type, (0, 0))
                kinds[row.type] = (seen + 1, flagged + int(p >= STEERING_THRESHOLD))
        self.stdout.write("     ordinary lines flagged, by kind: " + _shares(kinds))
        if options["show_mistakes"]:
            for text in s.missed:
                self.stdout.write("       missed: " + " ".join(text.split())[:160])
            for text in s.false:
                self.stdout.write("       false:  " + " ".join(text.split())[:160])
        wordings = scores_at(pool, by_wording, STEERING_THRESHOLD)
        self.stdout.write(
            "  -- 5-fold CV, every attempt its own group (new wordings of known techniques), at the shipped threshold: "
            f"attempts {wordings.recall:.3f} ({wordings.attempts_flagged}/{wordings.attempts}), preferences "
            f"{wordings.preference_false_rate:.3f} ({wordings.preferences_flagged}/{wordings.preferences}), "
            f"ordinary {wordings.ordinary_false_rate:.3f} ({wordings.ordinary_flagged}/{wordings.ordinary})"
        )
        if not options["no_loto"]:
            held = leave_one_technique_out(embedder, pool)
            caught = {t: (len(p), int((p >= STEERING_THRESHOLD).sum())) for t, p in held.items()}
            total, hit = sum(n for n, _ in caught.values()), sum(c for _, c in caught.values())
            self.stdout.write("  -- leave one technique out (fitted on every other line)")
            self.stdout.write(f"     attempts flagged {hit / total:.3f} ({hit}/{total}): " + _shares(caught))

        model = SteeringModel(rows, embedder=embedder)  # as deployed: every line of both files
        directory = options["prefeval"]
        if directory.is_dir():
            lines = [
                text
                for path in sorted(directory.glob("*.json"))
                for record in json.loads(path.read_text())
                for text in (record["preference"], record["question"])
            ]
            hits = [t for t, p in zip(lines, model.probabilities(lines), strict=True) if p >= STEERING_THRESHOLD]
            self.stdout.write(f"  -- PrefEval ({directory}): {len(hits)}/{len(lines)} statements, questions flagged")
            for text in hits if options["show_mistakes"] else []:
                self.stdout.write("       false:  " + text)
        self.cost(model, raw, [row.text for row in pool])

    def cost(self, model, embedder, texts: list[str]) -> None:
        """Seconds per message on one core: as steering_reasons runs (embedding included) and as the
        analyzer runs (its embedding at hand); long texts also embed their sentences."""
        from learning.safety import embed_both  # noqa: PLC0415  heavy: scikit-learn

        sample = texts[:: max(1, len(texts) // 200)]
        model.embedder = embedder  # no cache: every message is new
        started = time.perf_counter()
        for text in sample:
            model.probabilities([text])
        alone = (time.perf_counter() - started) / len(sample)
        vectors, layers = embed_both(embedder, sample)
        started = time.perf_counter()
        for i, text in enumerate(sample):
            model.probabilities([text], vectors[i : i + 1], None if layers is None else layers[i : i + 1])
        given = (time.perf_counter() - started) / len(sample)
        self.stdout.write(
            f"  -- cost over {len(sample)} lines: {alone * 1000:.1f} ms per message with its embedding, "
            f"{given * 1000:.1f} ms with the embedding at hand (load {os.getloadavg()[0]:.2f})"
        )


def _shares(counts: dict[str, tuple[int, int]]) -> str:
    return ", ".join(f"{name} {flagged}/{seen}" for name, (seen, flagged) in sorted(counts.items()))
