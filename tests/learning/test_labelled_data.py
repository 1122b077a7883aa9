"""Schema and coverage checks for the analyzer's labelled data (learning/analyzer/data/).

Pure file checks: no database, no analyzer. See learning/analyzer/data/README.md for the labelling rules.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "learning" / "analyzer" / "data"
MESSAGES = DATA / "labelled_messages.jsonl"
WORKFLOWS = DATA / "workflow_sessions.jsonl"
OLD_SET = ROOT / "tests" / "data" / "analyzer_labelled.jsonl"
PROBE = DATA / "probe_plain_rules.jsonl"  # scored by analyzer_eval, never fitted on
FRESH = DATA / "heldout_fresh.jsonl"  # written blind; scored by analyzer_eval, never fitted on, mistakes never shown

TYPES = {"preference", "correction", "pain_point", "memory", "none"}
CATEGORIES = {"tone", "length", "format", "expertise", "output", "behavior"}
DOMAINS = {
    "customer support",
    "software",
    "healthcare",
    "sales",
    "personal",
    "education",
    "legal",
    "finance",
    "construction",
    "hr",
    "marketing",
    "research",
    "travel",
    "cooking",
    "other",
}
# Each canonical axis belongs to exactly one category.
AXES = {
    "length:short": "length",
    "length:long": "length",
    "tone:formal": "tone",
    "tone:casual": "tone",
    "expertise:basic": "expertise",
    "expertise:expert": "expertise",
    "format:bullets": "format",
    "format:prose": "format",
    "format:table": "format",
    "followups:ask": "behavior",
    "followups:none": "behavior",
}
MESSAGE_KEYS = {
    "id",
    "text",
    "type",
    "category",
    "instruction",
    "key",
    "axis",
    "previous_assistant",
    "recent",
    "domain",
    "steering",
    "family",
    "hard_negative",
}
# Lines added after the first batch carry a ``source`` (see the data README); the first batch has none.
SOURCES = {
    "issue10-item3",
    "issue10-questions",
    "issue10-batch4",
    "issue10-batch5",
    "issue10-batch6",
    "issue10-batch7",
    "issue10-batch8",
}
MIN_PER_TYPE = {"preference": 150, "correction": 70, "pain_point": 70, "memory": 80, "none": 120}


def _load(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@pytest.fixture(scope="module")
def messages() -> list[dict]:
    return _load(MESSAGES)


@pytest.fixture(scope="module")
def probe() -> list[dict]:
    return _load(PROBE)


@pytest.fixture(scope="module")
def fresh() -> list[dict]:
    return _load(FRESH)


@pytest.fixture(scope="module")
def sessions() -> list[dict]:
    return _load(WORKFLOWS)


def _words(text: str) -> list[str]:
    return re.findall(r"[\w'’]+", text.lower())


def _occurs(key: str, text: str) -> bool:
    """The key word, or its stem (all but the last three letters, at least four), occurs in the text."""
    text = text.lower()
    return key in text or (len(key) > 4 and key[: max(4, len(key) - 3)] in text)


def test_message_schema(messages, probe):
    for m in messages + probe:
        where = f"{m.get('id')}: {m.get('text')!r}"
        assert set(m) - {"source"} == MESSAGE_KEYS, where
        assert m.get("source", "issue10-item3") in (SOURCES if m in messages else {"probe-plain-rules"}), where
        assert isinstance(m["text"], str), where
        assert m["text"].strip(), where
        assert m["type"] in TYPES, where
        assert m["domain"] in DOMAINS, where
        assert isinstance(m["steering"], bool), where
        assert isinstance(m["hard_negative"], bool), where
        is_pref = m["type"] == "preference"
        assert (m["category"] in CATEGORIES) if is_pref else m["category"] is None, where
        assert (
            (isinstance(m["instruction"], str) and m["instruction"].strip()) if is_pref else (m["instruction"] is None)
        ), where
        if m["axis"] is not None:
            assert is_pref, where
            assert AXES[m["axis"]] == m["category"], where
        assert isinstance(m["key"], list), where
        assert len(m["key"]) <= 4, where
        assert all(isinstance(k, str) and k == k.lower() and k.strip() for k in m["key"]), where
        if m["type"] in {"preference", "memory"}:
            assert m["key"], where
        if m["type"] == "none":
            assert m["key"] == [], where
        if m["steering"]:
            assert m["type"] == "none", where
        if m["hard_negative"]:
            assert m["type"] == "none", where
        assert m["previous_assistant"] is None or (
            isinstance(m["previous_assistant"], str) and m["previous_assistant"].strip()
        ), where
        assert isinstance(m["recent"], list), where
        assert len(m["recent"]) <= 3, where
        for turn in m["recent"]:
            assert set(turn) == {"role", "content"}, where
            assert turn["role"] in {"user", "assistant"}, where
            assert turn["content"].strip(), where
        assert m["family"] is None or re.fullmatch(r"f\d{2,3}", m["family"]), where


def test_keys_occur_in_text(messages):
    missing = [(m["id"], k) for m in messages for k in m["key"] if not _occurs(k, m["text"])]
    assert not missing


def test_corrections_and_pain_points_name_what_to_change(messages):
    fixes = [m for m in messages if m["type"] in {"correction", "pain_point"}]
    # A bare "No, the other one." names nothing; it is allowed, but rare.
    assert sum(1 for m in fixes if m["key"]) >= 0.95 * len(fixes)


def test_ids_and_texts_unique(messages):
    ids = [m["id"] for m in messages]
    assert all(re.fullmatch(r"m\d{4}", i) for i in ids)
    assert len(set(ids)) == len(ids)
    texts = Counter(m["text"].strip().lower() for m in messages)
    assert [t for t, n in texts.items() if n > 1] == []


def test_counts_meet_minimums(messages):
    assert len(messages) >= 480
    types = Counter(m["type"] for m in messages)
    for type_, minimum in MIN_PER_TYPE.items():
        assert types[type_] >= minimum, type_
    domains = Counter(m["domain"] for m in messages)
    assert all(domains[d] >= 15 for d in DOMAINS), domains
    assert domains["construction"] <= 0.15 * len(messages)
    nones = [m for m in messages if m["type"] == "none"]
    assert sum(1 for m in nones if m["steering"]) >= 20
    assert sum(1 for m in nones if m["hard_negative"] and not m["steering"]) >= 40
    assert sum(1 for m in nones if m["previous_assistant"]) >= 10  # the user simply continues
    prefs = [m for m in messages if m["type"] == "preference"]
    # open-ended: not one of the canonical axes
    assert sum(1 for m in prefs if m["axis"] is None) >= 100
    assert {m["axis"] for m in prefs if m["axis"]} == set(AXES)
    in_context = [m for m in messages if m["type"] in {"correction", "pain_point"} and m["previous_assistant"]]
    assert len(in_context) >= 50
    assert sum(1 for m in messages if m["recent"]) >= 10


def test_paraphrase_families(messages):
    families = defaultdict(list)
    for m in messages:
        if m["family"]:
            families[m["family"]].append(m)
    assert len(families) >= 25
    for name, members in families.items():
        assert 2 <= len(members) <= 3, name
        assert {m["type"] for m in members} == {"preference"}, name
        assert len({m["category"] for m in members}) == 1, name
        assert len({m["axis"] for m in members}) == 1, name
        assert len({m["text"].lower() for m in members}) == len(members), name


def test_added_lines_follow_the_first_batch_and_never_enter_the_held_out_split(messages):
    """The held-out 20 % is drawn from the first batch only, so adding lines leaves it as it was."""
    from learning.evaluation import held_out_split  # noqa: PLC0415  heavy: scikit-learn

    first = [m for m in messages if "source" not in m]
    assert messages[: len(first)] == first  # added lines are appended, never interleaved
    assert len(first) == 589
    fit, held = held_out_split(messages)
    _, held_first = held_out_split(first)
    assert [messages[i]["id"] for i in held] == [first[i]["id"] for i in held_first]
    assert all("source" not in messages[i] for i in held)
    assert sorted(fit + held) == list(range(len(messages)))


def test_no_templated_openings(messages):
    """No two lines share their first four words, except paraphrases within one family."""
    by_opening = defaultdict(set)
    for m in messages:
        by_opening[" ".join(_words(m["text"])[:4])].add(m["family"] or m["id"])
    assert {o: ids for o, ids in by_opening.items() if len(ids) > 1} == {}


def test_not_copied_from_the_old_evaluation_set(messages):
    old = {" ".join(_words(row["text"])) for row in _load(OLD_SET)}
    assert [m["id"] for m in messages if " ".join(_words(m["text"])) in old] == []


def test_workflow_sessions(sessions):
    groups = defaultdict(list)
    for s in sessions:
        assert set(s) == {"group", "kind", "text", "day", "trap"}, s
        assert re.fullmatch(r"g\d{2}", s["group"]), s
        assert isinstance(s["day"], int), s
        assert s["day"] >= 0, s
        assert isinstance(s["trap"], bool), s
        assert s["kind"].strip(), s
        assert s["text"].strip(), s
        groups[s["group"]].append(s)
    assert len({s["text"].lower() for s in sessions}) == len(sessions)
    real = {g: rows for g, rows in groups.items() if not rows[0]["trap"]}
    traps = {g: rows for g, rows in groups.items() if rows[0]["trap"]}
    assert len(real) >= 14
    assert len(traps) >= 14
    for g, rows in groups.items():
        assert len({r["trap"] for r in rows}) == 1, g
    for g, rows in real.items():
        assert 3 <= len(rows) <= 5, g
        assert len({r["kind"] for r in rows}) == 1, g
        assert len({r["day"] for r in rows}) == len(rows), g
        # named by what the task is, not by a request's first words
        assert all(not r["text"].lower().startswith(r["kind"].lower()) for r in rows), g
    for g, rows in traps.items():
        kinds = {r["kind"] for r in rows}
        two_of_a_kind = len(rows) == 2 and len(kinds) == 1
        same_words_other_tasks = 3 <= len(rows) <= 4 and len(kinds) == len(rows)
        assert two_of_a_kind or same_words_other_tasks, g


def test_held_out_workflow_sessions_are_apart_from_the_tuning_set(sessions):
    held_out = _load(DATA / "workflow_sessions_heldout.jsonl")
    groups = defaultdict(list)
    for s in held_out:
        assert set(s) == {"group", "kind", "text", "day", "trap"}, s
        assert re.fullmatch(r"h\d{2}", s["group"]), s  # its own group names: never mixed into the folds
        assert isinstance(s["day"], int), s
        assert s["day"] >= 0, s
        groups[s["group"]].append(s)
    for g, rows in groups.items():
        kinds = {r["kind"] for r in rows}
        if rows[0]["trap"]:
            assert (len(rows) == 2 and len(kinds) == 1) or (3 <= len(rows) <= 4 and len(kinds) == len(rows)), g
        else:
            assert 3 <= len(rows) <= 5, g
            assert len(kinds) == 1, g
    tuning = {" ".join(_words(s["text"])) for s in sessions}
    assert [s["text"] for s in held_out if " ".join(_words(s["text"])) in tuning] == []
    assert not {s["kind"] for s in held_out if not s["trap"]} & {s["kind"] for s in sessions}


def test_the_probe_is_never_fitted_on(messages, probe):
    """The probe set (plain standing rules without a habit marker and one-off requests of the same surface)
    measures the analyzer; none of its lines, ids or four-word openings is in the file it is fitted on."""
    assert len(probe) == 60
    assert not {m["id"] for m in probe} & {m["id"] for m in messages}
    assert not {m["text"].lower() for m in probe} & {m["text"].lower() for m in messages}
    assert not {" ".join(_words(m["text"])[:4]) for m in probe} & {" ".join(_words(m["text"])[:4]) for m in messages}
    assert Counter(m["type"] for m in probe) == {"preference": 32, "none": 22, "memory": 6}


def test_the_fresh_held_out_lines_are_labelled_as_the_others_and_never_fitted_on(messages, probe, fresh):
    """The blind held-out lines keep the schema and the labelling rules' shape (their domains are their author's own),
    and none of their ids or texts is in a file the analyzer is fitted on."""
    assert len(fresh) == 148
    assert Counter(m["type"] for m in fresh) == {
        "none": 52,
        "preference": 41,
        "memory": 21,
        "correction": 19,
        "pain_point": 15,
    }
    for m in fresh:
        where = f"{m.get('id')}: {m.get('text')!r}"
        assert set(m) == MESSAGE_KEYS | {"source"}, where
        assert m["source"] == "heldout-fresh", where
        assert m["type"] in TYPES, where
        assert isinstance(m["domain"], str), where
        assert m["domain"].strip(), where
        is_pref = m["type"] == "preference"
        assert (m["category"] in CATEGORIES) if is_pref else m["category"] is None, where
        assert (m["instruction"] or "").strip() if is_pref else m["instruction"] is None, where
        assert m["axis"] is None or is_pref, where
        assert all(_occurs(k, m["text"]) for k in m["key"]), where
        assert not m["steering"] or m["type"] == "none", where
    fitted = messages + probe
    assert not {m["id"] for m in fresh} & {m["id"] for m in fitted}
    assert not {m["text"].lower() for m in fresh} & {m["text"].lower() for m in fitted}


def test_the_fresh_held_out_lines_are_no_near_copies_of_fitted_ones(messages, probe, fresh, embedder):
    """Lines within MiniLM cosine 0.8 of a line the analyzer is fitted on (or of the probe) were dropped when the
    set was taken in: a near-copy would score what was fitted, not what generalises."""
    fresh_vectors = embedder.embed([m["text"] for m in fresh])
    fitted_vectors = embedder.embed([m["text"] for m in messages + probe])
    assert float((fresh_vectors @ fitted_vectors.T).max()) < 0.8
