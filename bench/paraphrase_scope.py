"""Which re-askings a query-scoped weight reaches, and which other queries it wrongly reaches.

    .venv/bin/python bench/paraphrase_scope.py [--folds 5] [--explore path/to/paraphrases.py]

Each Cranfield query (../shared/data/cranfield/cran.qry) is the anchor of a weight. For each rule
(today's: embedding >= 0.85 and Jaccard of crudely stemmed content words >= 0.8; the new one in
retrieval/scope.py at several thresholds) it prints:

- reach: the share of an anchor's re-askings the weight reaches, per kind — this script's own
  generators (light: filler, reorder, inflections; strong: light plus one word replaced by a
  synonym from a hand table), the hand-written natural re-askings (bench/paraphrase_handwritten.py),
  and, with --explore, the generators of bench/paraphrases.py (explore's, built independently);
- false reach: the share of (anchor, other Cranfield query) pairs reached; of "near-miss" pairs
  (two Cranfield queries with many words in common and no judged-relevant document in common); and
  of "contrast" near-misses (the anchor with one word replaced by its opposite: theoretical ->
  experimental, laminar -> turbulent ...). Every false reach would move a result for a query the
  weight's evidence says nothing about.

The synonym threshold is chosen by cross-validation over query folds (the most reach on the training
folds with no false reach there) and the figures printed are those of the held-out folds. The
embedding gate (``minimum``, 0.85, the scan's setting) is the same for every rule. Last, the time
``near_paraphrase`` adds per candidate weight in search.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import re
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402
from lemminflect import getAllInflections, getAllLemmas  # noqa: E402
from paraphrase_handwritten import REASKINGS  # noqa: E402
from retrieval_learning import parse_smart  # noqa: E402  (one reader of the SMART files, shared with the retrieval bench)

from core.embeddings import get_embedder  # noqa: E402
from core.text import content_words, stem  # noqa: E402
from retrieval.scope import ScopeRule, near_paraphrase, query_terms  # noqa: E402


def data_dir() -> Path:
    for candidate in (ROOT.parent / "shared", ROOT.parents[1] / "shared", Path("/work/shared")):
        if (candidate / "data" / "cranfield" / "cran.qry").exists():
            return candidate / "data" / "cranfield"
    raise SystemExit("../shared/data/cranfield not found")


def load() -> tuple[list[str], dict[int, set[str]]]:
    data = data_dir()
    queries = [" ".join(q.get("W", "").split()) for q in parse_smart(data / "cran.qry").values()]
    relevant: dict[int, set[str]] = defaultdict(set)
    for line in (data / "cranqrel").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 3 and int(parts[2]) > 0:
            relevant[int(parts[0]) - 1].add(parts[1])
    return queries, relevant


# --- this script's own re-askings (independent of bench/paraphrases.py) ---------------------------

OPENERS = [
    "i am looking for work on",
    "any literature about",
    "find me papers discussing",
    "what is known about",
    "need information regarding",
    "looking for research on",
    "please find studies on",
    "references on",
]
CLOSERS = ["", "", "- any papers?", "please", "(published results)", "thanks"]
LEADING = re.compile(
    r"^(what|which|how|why|is|are|can|does|do|has|have|was|were|in what|to what extent|"
    r"is it possible to|has anyone|have any|are there|is there|what are|what is)\b\s*",
)

# A hand table of domain and general synonyms (both directions), written for this script.
SYNONYMS = {
    "speed": "velocity",
    "velocity": "speed",
    "effect": "influence",
    "effects": "influences",
    "influence": "effect",
    "method": "technique",
    "methods": "techniques",
    "technique": "method",
    "techniques": "methods",
    "problem": "question",
    "problems": "questions",
    "calculate": "compute",
    "calculated": "computed",
    "calculating": "computing",
    "calculation": "computation",
    "calculations": "computations",
    "determine": "find",
    "determined": "found",
    "predict": "forecast",
    "predicted": "forecast",
    "accurate": "precise",
    "approximate": "rough",
    "solution": "answer",
    "solutions": "answers",
    "large": "big",
    "small": "little",
    "aircraft": "airplane",
    "distribution": "spread",
    "distributions": "spreads",
    "behaviour": "behavior",
    "behavior": "behaviour",
    "simple": "basic",
    "fluid": "liquid",
    "measure": "gauge",
    "measured": "gauged",
    "measurements": "readings",
    "model": "replica",
    "models": "replicas",
    "cylinder": "tube",
    "cylinders": "tubes",
    "tube": "pipe",
    "tubes": "pipes",
    "shell": "casing",
    "shells": "casings",
    "load": "force",
    "loads": "forces",
    "loading": "forcing",
    "vibration": "oscillation",
    "vibrations": "oscillations",
    "stability": "steadiness",
    "theory": "theorem",
    "analysis": "examination",
    "analytical": "mathematical",
    "heat": "thermal energy",
    "temperature": "heat level",
    "wing": "airfoil",
    "wings": "airfoils",
    "body": "object",
    "bodies": "objects",
    "layer": "film",
    "layers": "films",
    "surface": "face",
    "plate": "sheet",
    "plates": "sheets",
    "pressure": "stress",
    "data": "measurements",
    "wall": "surface",
    "possible": "feasible",
    "obtain": "get",
    "obtained": "got",
    "use": "employ",
    "used": "employed",
    "using": "employing",
    "experimental": "empirical",
}

# Contrast pairs: one replaced word that changes the question.
OPPOSITES = {
    "theoretical": "experimental",
    "experimental": "theoretical",
    "laminar": "turbulent",
    "turbulent": "laminar",
    "subsonic": "supersonic",
    "supersonic": "subsonic",
    "hypersonic": "subsonic",
    "transonic": "hypersonic",
    "compressible": "incompressible",
    "incompressible": "compressible",
    "high": "low",
    "low": "high",
    "steady": "unsteady",
    "unsteady": "steady",
    "viscous": "inviscid",
    "inviscid": "viscous",
    "two-dimensional": "three-dimensional",
    "three-dimensional": "two-dimensional",
    "thin": "thick",
    "thick": "thin",
    "small": "large",
    "large": "small",
    "upper": "lower",
    "lower": "upper",
    "inner": "outer",
    "outer": "inner",
    "equilibrium": "nonequilibrium",
    "heated": "cooled",
    "heating": "cooling",
    "cooling": "heating",
    "stable": "unstable",
    "linear": "nonlinear",
    "nonlinear": "linear",
    "elastic": "plastic",
    "plastic": "elastic",
    "tension": "compression",
    "compression": "tension",
    "leading": "trailing",
    "trailing": "leading",
    "swept": "unswept",
    "blunt": "sharp",
    "sharp": "blunt",
    "cylindrical": "conical",
    "conical": "cylindrical",
    "axial": "radial",
    "radial": "axial",
    "maximum": "minimum",
    "minimum": "maximum",
    "analytical": "numerical",
    "numerical": "analytical",
    "internal": "external",
    "external": "internal",
}


def inflect(word: str, rng: random.Random) -> str:
    """Another inflection of the word (plural/singular, verb form), or the word."""
    lemmas = getAllLemmas(word)
    options: set[str] = set()
    pos = next((p for p in ("NOUN", "VERB", "ADJ") if p in lemmas), None)
    if pos is not None:
        for lemma in lemmas[pos]:
            for inflections in getAllInflections(lemma, upos=pos).values():
                options.update(inflections)
            options.add(lemma)
    options.discard(word)
    return rng.choice(sorted(options)) if options else word


def core_text(query: str) -> str:
    text = query.rstrip(" .?")
    return LEADING.sub("", text, count=1)


def own_light(query: str, index: int) -> str:
    """Filler around, a clause moved, one or two words inflected: same question, same content words."""
    rng = random.Random(f"light-{index}")
    words = core_text(query).split()
    for position in rng.sample(range(len(words)), k=min(2, len(words))):
        if words[position].isalpha() and len(words[position]) > 3:
            words[position] = inflect(words[position], rng)
    cut = [i for i, w in enumerate(words) if w in {"of", "on", "in", "for", "about", "at", "with"} and i > 1]
    if cut and rng.random() < 0.6:  # "X of Y" -> "Y, X"
        i = rng.choice(cut)
        words = [*words[i + 1 :], ",", *words[:i]]
    text = " ".join(words).replace(" ,", ",")
    return f"{rng.choice(OPENERS)} {text} {rng.choice(CLOSERS)}".strip()


def own_strong(query: str, index: int) -> str:
    """The light re-asking with one content word replaced by a synonym from the hand table."""
    rng = random.Random(f"strong-{index}")
    light = own_light(query, index)
    words = light.split()
    candidates = [i for i, w in enumerate(words) if w.strip(",.?") in SYNONYMS]
    if not candidates:
        return light
    i = rng.choice(candidates)
    words[i] = SYNONYMS[words[i].strip(",.?")]
    return " ".join(words)


def contrast(query: str, index: int) -> str | None:
    """The query with one word replaced by its opposite: many words shared, another question."""
    rng = random.Random(f"contrast-{index}")
    words = query.split()
    candidates = [i for i, w in enumerate(words) if w in OPPOSITES and OPPOSITES[w] not in words]
    if not candidates:
        return None
    i = rng.choice(candidates)
    words[i] = OPPOSITES[words[i]]
    return " ".join(words)


def old_terms(text: str) -> list[str]:
    return sorted({stem(word) for word in content_words(text)})


def old_rule(query_vector, terms, anchors, anchor_terms, minimum) -> bool:
    """Today's rule (before this change), for comparison."""
    similarities = anchors.reshape(-1, query_vector.shape[0]) @ query_vector
    for similarity, words in zip(similarities, anchor_terms, strict=False):
        if similarity < minimum:
            continue
        union = terms | set(words)
        if not words or (len(terms & set(words)) / len(union) if union else 0.0) >= 0.8:
            return True
    return False


def near_miss_pairs(queries: list[str], relevant: dict[int, set[str]]) -> list[tuple[int, int]]:
    """Cranfield query pairs sharing many content words (Jaccard >= 0.3 on long queries) whose
    judged-relevant documents barely overlap (Jaccard < 0.1): the same words, another question."""
    terms = [set(old_terms(q)) for q in queries]
    pairs = []
    for a in range(len(queries)):
        for b in range(len(queries)):
            if a == b or not terms[a] or not terms[b]:
                continue
            jaccard = len(terms[a] & terms[b]) / len(terms[a] | terms[b])
            shared = len(relevant[a] & relevant[b]) / max(1, len(relevant[a] | relevant[b]))
            if jaccard >= 0.3 and shared < 0.1:
                pairs.append((a, b))
    return pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--minimum", type=float, default=0.85, help="the embedding gate (the scan's setting)")
    parser.add_argument("--explore", default=str(ROOT / "bench" / "paraphrases.py"), help="explore's generators")
    args = parser.parse_args()

    queries, relevant = load()
    n = len(queries)
    kinds: dict[str, dict[int, list[str]]] = {
        "own light": {i: [own_light(q, i)] for i, q in enumerate(queries)},
        "own strong": {i: [own_strong(q, i)] for i, q in enumerate(queries)},
        "hand-written": {i: [text] for i, text in REASKINGS.items()},
    }
    explore_path = Path(args.explore)
    if explore_path.exists():
        spec = importlib.util.spec_from_file_location("explore_paraphrases", explore_path)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        for name, texts in explore_kinds(module, queries).items():
            kinds[f"explore {name}"] = texts
    contrasts = {i: c for i, q in enumerate(queries) if (c := contrast(q, i)) is not None}
    pairs = near_miss_pairs(queries, relevant)

    generated = [t for by_anchor in kinds.values() for texts_ in by_anchor.values() for t in texts_]
    texts = list(dict.fromkeys([*queries, *contrasts.values(), *generated]))
    started = time.perf_counter()
    vectors = dict(zip(texts, get_embedder().embed(texts), strict=True))
    print(f"embedded {len(texts)} texts in {time.perf_counter() - started:.1f} s; load: {os.getloadavg()}")
    anchor = {i: vectors[q][None, :] for i, q in enumerate(queries)}
    matrix = np.vstack([vectors[q] for q in queries])
    close = (matrix @ matrix.T) >= args.minimum - 0.4
    new_anchor_terms = {i: [query_terms(q)] for i, q in enumerate(queries)}
    old_anchor_terms = {i: [old_terms(q)] for i, q in enumerate(queries)}

    term_cache: dict[tuple[str, str], set[str]] = {}

    def terms_of(text: str, kind: str) -> set[str]:
        if (kind, text) not in term_cache:
            term_cache[(kind, text)] = set(old_terms(text) if kind == "old" else query_terms(text))
        return term_cache[(kind, text)]

    def reaches(rule, a: int, text: str, stored: str = "new") -> bool:
        if float(vectors[text] @ anchor[a][0]) < args.minimum - 0.4:  # below every rule's gate
            return False
        if rule == "old":
            return old_rule(vectors[text], terms_of(text, "old"), anchor[a], old_anchor_terms[a], args.minimum)
        terms = old_anchor_terms[a] if stored == "old" else new_anchor_terms[a]
        return near_paraphrase(vectors[text], terms_of(text, "new"), anchor[a], terms, args.minimum, rule)

    def measure(rule, anchors: list[int], stored: str = "new") -> dict[str, tuple[int, int]]:
        result: dict[str, tuple[int, int]] = {}
        for name, by_anchor in kinds.items():
            hits = [reaches(rule, a, t, stored) for a in anchors for t in by_anchor.get(a, [])]
            result[name] = (sum(hits), len(hits))
        gate = [
            float(vectors[t] @ anchor[a][0]) >= args.minimum
            for a in anchors
            for k in kinds.values()
            for t in k.get(a, [])
        ]
        result["(embedding gate passed, all kinds)"] = (sum(gate), len(gate))
        others = [close[a, b] and reaches(rule, a, queries[b], stored) for a in anchors for b in range(n) if b != a]
        result["FALSE: other queries"] = (sum(others), len(others))
        misses = [reaches(rule, a, queries[b], stored) for a, b in pairs if a in set(anchors)]
        result["FALSE: near-miss pairs"] = (sum(misses), len(misses))
        contrast_hits = [reaches(rule, a, contrasts[a], stored) for a in anchors if a in contrasts]
        result["FALSE: contrast (one opposite word)"] = (sum(contrast_hits), len(contrast_hits))
        return result

    def score(result: dict[str, tuple[int, int]]) -> float:
        false = sum(v[0] for k, v in result.items() if k.startswith("FALSE"))
        reach = statistics.mean(v[0] / v[1] for k, v in result.items() if not k.startswith(("FALSE", "(")) and v[1])
        return reach - 10.0 * false

    grid = [
        ScopeRule(0.8, 0, max_dropped=d, max_added=a, same_terms_margin=m, derivations=v)
        for d in (0, 1, 2)
        for a in (0, 1)
        for m in (0.0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35)
        for v in (False, True)
    ]
    grid += [ScopeRule(s, 1, max_dropped=1, max_added=1, same_terms_margin=0.1) for s in (0.6, 0.7, 0.8, 0.9)]
    everyone = list(range(n))
    print(f"\n{len(pairs)} near-miss pairs, {len(contrasts)} contrast queries, {n} anchors; gate {args.minimum}")
    print("\nAll anchors (in-sample, for orientation):")
    table = {"today's rule": measure("old", everyone)}
    shown = [r for r in grid if r.derivations and r.same_terms_margin in (0.0, 0.15, 0.25, 0.35) and r.max_added == 0]
    shown += [r for r in grid if r.derivations and r.same_terms_margin == 0.25 and r.max_added == 1]
    shown += [r for r in grid if not r.derivations and r.same_terms_margin == 0.25 and r.max_added == 0]
    for rule in shown:
        table[label(rule)] = measure(rule, everyone)
    print_table(table)

    # Cross-validation: pick the rule on the training folds, report it on the held-out fold.
    order = random.Random(0).sample(everyone, n)
    folds = [order[f :: args.folds] for f in range(args.folds)]
    held: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # type: ignore[arg-type]
    chosen = []
    for f, test in enumerate(folds):
        train = [a for a in everyone if a not in set(test)]
        best = max(grid, key=lambda rule: score(measure(rule, train)))
        chosen.append(best)
        for name, (hits, total) in measure(best, test).items():
            held[name][0] += hits
            held[name][1] += total
        print(f"fold {f}: chose {label(best)}")
    print("\nHeld-out folds (rule chosen on the other folds):")
    print_table({"cross-validated": {k: (v[0], v[1]) for k, v in held.items()}})

    default = ScopeRule.from_settings()
    print(f"\nShipped default {label(default)}, anchor terms stored by this rule / by the old one")
    print_table({"new terms": measure(default, everyone), "old stored terms": measure(default, everyone, stored="old")})

    latency(vectors, queries, default, args.minimum)


def explore_kinds(module, queries: list[str]) -> dict[str, dict[int, list[str]]]:
    """explore's generators, whatever their names: each public function taking (text, seed|index)."""
    found: dict[str, dict[int, list[str]]] = {}
    for name in dir(module):
        function = getattr(module, name)
        if name.startswith("_") or not callable(function) or getattr(function, "__module__", "") != module.__name__:
            continue
        try:
            sample = function(queries[0], 0)
        except TypeError:
            continue
        if isinstance(sample, str):
            found[name] = {i: [function(q, i)] for i, q in enumerate(queries)}
    return found


def label(rule: ScopeRule) -> str:
    syn = f"syn<={rule.max_synonyms}@{rule.synonym_similarity}" if rule.max_synonyms else "syn 0"
    deriv = " deriv" if rule.derivations else ""
    return f"{syn} drop{rule.max_dropped} add{rule.max_added} m{rule.same_terms_margin}{deriv}"


def print_table(table: dict[str, dict[str, tuple[int, int]]]) -> None:
    rows = list(next(iter(table.values())).keys())
    print(f"{'':40s}" + "".join(f"{col[:28]:>30s}" for col in table))
    for row in rows:
        cells = []
        for col in table.values():
            hits, total = col.get(row, (0, 0))
            cells.append(f"{hits:>5d}/{total:<6d} {100 * hits / total if total else 0:6.1f} %")
        print(f"{row[:40]:40s}" + "".join(f"{c:>30s}" for c in cells))


def latency(vectors: dict, queries: list[str], rule: ScopeRule, minimum: float) -> None:
    """Time of near_paraphrase per candidate weight with 20 anchors: the common case (the query is
    far from every anchor) and a re-asking (the gate passes, terms are compared)."""
    rng = random.Random(1)
    rows = []
    for i in range(0, 200, 10):
        anchors_idx = rng.sample(range(len(queries)), 20)
        anchors = np.vstack([vectors[queries[a]] for a in anchors_idx])
        anchor_terms = [query_terms(queries[a]) for a in anchors_idx]
        q = own_strong(queries[anchors_idx[0]], anchors_idx[0])
        qv = get_embedder().embed_one(q)
        far = queries[i]
        fv = vectors[far]
        for label, text, vector in (("far", far, fv), ("re-asking", q, qv)):
            terms = set(query_terms(text))
            near_paraphrase(vector, terms, anchors, anchor_terms, minimum, rule)  # warm
            started = time.perf_counter()
            for _ in range(50):
                near_paraphrase(vector, terms, anchors, anchor_terms, minimum, rule)
            rows.append((label, (time.perf_counter() - started) / 50 * 1e6))
    print(f"\nnear_paraphrase per candidate weight (20 anchors), load {os.getloadavg()}:")
    for label in ("far", "re-asking"):
        times = sorted(t for lab, t in rows if lab == label)
        print(f"  {label:20s} median {statistics.median(times):8.1f} us   max {times[-1]:8.1f} us")


if __name__ == "__main__":
    main()
