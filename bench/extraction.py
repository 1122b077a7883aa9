"""Signal extraction precision and recall per card type, on phrasing families and seeds not tuned on.

Leave-one-family-out cross-validation over bench/signal_corpus.py's FAMILIES: in each fold the
confidence floor is chosen on the other families (tuning seed), then the extractor is scored on the
held-out family, on corpora of other seeds. Also prints the figures at the configured floor
(INTELLIGENCE_SIGNAL_MIN_CONFIDENCE) on every held-out fold, which is what production runs.

    PYTHONPATH=$PWD DJANGO_SETTINGS_MODULE=config.settings.local .venv/bin/python bench/extraction.py \
        [--tune-seed 1] [--seeds 11 12 13] [--documents 300]
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

import django

django.setup()

from bench.signal_corpus import FAMILIES, LabelledDocument, corpus  # noqa: E402
from intelligence.conf import intelligence_settings  # noqa: E402
from intelligence.models import CardType  # noqa: E402
from intelligence.services.extraction import LocalExtractor, sentences_of, signal_of  # noqa: E402

TYPES = list(CardType.values)


def predictions(documents: list[LabelledDocument]) -> list[tuple[str | None, str, float, str, str]]:
    """(label, predicted type, confidence, labelled owner, extracted owner) of every labelled
    sentence, classified whatever its confidence (the floor is applied by the scorer)."""
    extractor = LocalExtractor(min_confidence=0.0)
    out = []
    for document in documents:
        by_text = {s.text: s for s in document.sentences}
        for sentence in sentences_of(document.text):
            labelled = by_text.get(sentence.statement)
            if labelled is None:
                continue  # greetings, sign-offs and headers the renderer added: unlabelled, not scored
            kind, confidence = extractor.classify(sentence)
            owner = signal_of(sentence, kind, confidence, observed_at=None).owner if kind else ""
            out.append((labelled.label, kind, confidence, labelled.owner, owner))
    return out


def score(rows, floor: float) -> dict[str, tuple[int, int, int]]:
    """Per type: (true positives, predicted, labelled) at this confidence floor."""
    tp, predicted, labelled = Counter(), Counter(), Counter()
    for label, kind, confidence, _, _ in rows:
        if label:
            labelled[label] += 1
        if kind and confidence >= floor:
            predicted[kind] += 1
            if kind == label:
                tp[kind] += 1
    return {t: (tp[t], predicted[t], labelled[t]) for t in TYPES}


def micro(counts: dict[str, tuple[int, int, int]]) -> tuple[float, float, float]:
    tp = sum(c[0] for c in counts.values())
    predicted = sum(c[1] for c in counts.values())
    labelled = sum(c[2] for c in counts.values())
    precision = tp / predicted if predicted else 1.0
    recall = tp / labelled if labelled else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def tune(rows) -> float:
    """The floor with the best micro F1 among those keeping precision at 0.85 or more."""
    best, best_f1 = 0.9, -1.0
    for step in range(20, 91, 2):
        floor = step / 100
        precision, _, f1 = micro(score(rows, floor))
        if precision >= 0.85 and f1 > best_f1:
            best, best_f1 = floor, f1
    return best


def table(title: str, counts: dict[str, tuple[int, int, int]]) -> None:
    print(f"\n{title}")
    print(f"{'type':<14}{'precision':>10}{'recall':>8}{'support':>9}")
    for kind in TYPES:
        tp, predicted, labelled = counts[kind]
        precision = tp / predicted if predicted else float("nan")
        recall = tp / labelled if labelled else float("nan")
        print(f"{kind:<14}{precision:>10.3f}{recall:>8.3f}{labelled:>9}")
    precision, recall, f1 = micro(counts)
    print(f"{'micro':<14}{precision:>10.3f}{recall:>8.3f}   f1 {f1:.3f}")


def add(total: dict[str, tuple[int, int, int]], counts: dict[str, tuple[int, int, int]]) -> None:
    for kind, (a, b, c) in counts.items():
        x, y, z = total.get(kind, (0, 0, 0))
        total[kind] = (x + a, y + b, z + c)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tune-seed", type=int, default=1)
    parser.add_argument("--seeds", type=int, nargs="+", default=[11, 12, 13])
    parser.add_argument("--documents", type=int, default=300)
    args = parser.parse_args()
    configured = intelligence_settings.INTELLIGENCE_SIGNAL_MIN_CONFIDENCE
    cv_total: dict[str, tuple[int, int, int]] = {}
    fixed_total: dict[str, tuple[int, int, int]] = {}
    owners = Counter()
    print(f"tuning seed {args.tune_seed}; report seeds {args.seeds}; {args.documents} documents per corpus")
    for held_out in FAMILIES:
        train = tuple(f for f in FAMILIES if f != held_out)
        floor = tune(predictions(corpus(seed=args.tune_seed, families=train, documents=args.documents)))
        fold: dict[str, tuple[int, int, int]] = {}
        fixed: dict[str, tuple[int, int, int]] = {}
        for seed in args.seeds:
            rows = predictions(corpus(seed=seed, families=(held_out,), documents=args.documents))
            add(fold, score(rows, floor))
            add(fixed, score(rows, configured))
            for label, kind, confidence, labelled_owner, owner in rows:
                if label and kind == label and confidence >= configured and labelled_owner:
                    owners["named"] += 1
                    owners["found"] += bool(owner) and (owner in labelled_owner or labelled_owner in owner)
        precision, recall, f1 = micro(fold)
        print(
            f"fold held out {held_out:<9} floor tuned on {'+'.join(train)}: {floor:.2f}  "
            f"held-out micro precision {precision:.3f} recall {recall:.3f} f1 {f1:.3f}"
        )
        add(cv_total, fold)
        add(fixed_total, fixed)
    table("cross-validated (each family scored when held out, floor tuned on the others)", cv_total)
    table(f"held-out families at the configured floor {configured:.2f}", fixed_total)
    if owners["named"]:
        print(
            f"\nowner named by the sentence and found: {owners['found']}/{owners['named']} "
            f"({owners['found'] / owners['named']:.3f}) among correctly typed signals"
        )


if __name__ == "__main__":
    main()
