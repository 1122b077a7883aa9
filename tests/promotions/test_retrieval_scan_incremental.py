"""The retrieval scan keeps its judgements between scans: it re-judges only the neighbourhoods whose
rollups changed (new traces, marks, erasure, the window moving on), and what it keeps is what a full
judgement under the same reference gives; it re-judges everything when the fitted reference moved
beyond the tolerance, the settings changed or the rollups were reset."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from core.embeddings import get_embedder
from promotions.erasure import user_erase
from promotions.models import LearningPromotion, RetrievalScanJudgement, RetrievalScanState
from promotions.scanners import retrieval as scanner
from promotions.scanners.retrieval import (
    Decision,
    ScanReport,
    _evidence,
    _judge,
    _query_decisions,
    _Reference,
    _reference,
    _stored,
    propensity_estimate,
    retrieval_scan,
)
from retrieval.models import Chunk, Document, RetrievalFeedback, TraceRollup
from retrieval.rollups import neighbourhood
from retrieval.services import DocumentInput, ResultFeedback, documents_import, retrieval_feedback_record, search

DOCS = {
    "flutter": "Flutter of aircraft wings: aeroelastic coupling of bending and torsion.",
    "flutter-tests": "Wind tunnel tests of wing flutter with control surfaces.",
    "buckling": "Buckling of thin cylindrical shells under axial compression.",
    "heating": "Aerodynamic heating of blunt bodies in hypersonic flow.",
}
FLUTTER, BUCKLING, HEATING = "wind tunnel flutter experiments", "buckling of cylindrical shells", "hypersonic heating"


@pytest.fixture
def corpus(world):
    get_embedder()
    documents_import(actor=world.actor("service"), items=[DocumentInput(id=k, raw_text=v) for k, v in DOCS.items()])
    return {c.document_id: c for c in Chunk.objects.all()}


@pytest.fixture
def pinned(settings):
    """A tolerance no change in these small windows reaches: the reference stays, the scans stay incremental."""
    settings.RETRIEVAL_SCAN_REJUDGE_TOLERANCE = 0.5


def ask(world, query, *, used_rank, times=3, role="other", outcome=None):
    """Search ``times`` times; each time the result at ``used_rank`` (0-based) is cited, used and helpful
    (or marked with ``outcome``). Returns the searches."""
    actor = world.actor(role)
    results = []
    for _ in range(times):
        result = search(actor=actor, query=query, k=4)
        chunk_id = result.hits[used_rank].chunk.chunk_id
        item = (
            ResultFeedback(chunk_id=chunk_id, outcome=outcome)
            if outcome
            else ResultFeedback(chunk_id=chunk_id, cited=True, used_in_answer=True, outcome="helpful")
        )
        retrieval_feedback_record(actor=actor, trace_id=result.trace_id, items=[item])
        results.append(result)
    return results


def comparable(decisions: list[Decision]) -> list[tuple]:
    return sorted(
        (d.chunk_id, d.project_id, d.keys[0], d.kind, d.multiplier, d.strength, json.dumps(d.figures, sort_keys=True))
        for d in decisions
    )


def assert_as_a_full_judgement():
    """The stored judgements (decisions, groups judged, boosts left out) equal a judgement of every
    neighbourhood from scratch under the stored reference."""
    reference = _Reference.from_json(RetrievalScanState.objects.get().reference)
    verdicts = _judge(_evidence(TraceRollup.objects.all()), reference)
    assert comparable(_stored()) == comparable([d for v in verdicts.values() for d in v.decisions])
    stored = {(j.project_id, j.terms): (j.groups, j.already_first) for j in RetrievalScanJudgement.objects.all()}
    assert stored == {key: (v.groups, v.already_first) for key, v in verdicts.items()}


def test_incremental_scans_keep_what_a_full_judgement_gives(world, corpus, pinned):
    owned = ask(world, FLUTTER, used_rank=1, role="owner")
    oldest = ask(world, BUCKLING, used_rank=2)
    ask(world, HEATING, used_rank=1, role="member")
    first = retrieval_scan()
    assert (first.judged["mode"], first.judged["reason"]) == ("full", "no judgement yet")
    assert first.boosts >= 1
    assert first.penalties >= 1
    assert_as_a_full_judgement()
    assert retrieval_scan().judged["mode"] == "unchanged"
    assert_as_a_full_judgement()

    # New searches with feedback in one neighbourhood: only it is judged again.
    ask(world, BUCKLING, used_rank=3, times=4)
    report = retrieval_scan()
    assert (report.judged["mode"], report.judged["neighbourhoods"]) == ("incremental", 1)
    assert set(report.judged["drift"]) == {"eta", "eta_sd", "rate", "prior"}
    assert_as_a_full_judgement()

    # A mark changed on an older search: its result now counts as unhelpful.
    retrieval_feedback_record(
        actor=world.actor("member"),
        trace_id=RetrievalFeedback.objects.filter(query_text=HEATING).order_by("id").first().trace_id,
        items=[ResultFeedback(chunk_id=corpus["flutter"].chunk_id, outcome="unhelpful")],
    )
    report = retrieval_scan()
    assert (report.judged["mode"], report.judged["neighbourhoods"]) == ("incremental", 1)
    assert_as_a_full_judgement()

    # Erasure takes the owner's searches out: their neighbourhood's decisions go with their evidence.
    user_erase(actor=world.actor("admin"), user=world.owner)
    assert not RetrievalFeedback.objects.filter(trace_id__in=[r.trace_id for r in owned]).exists()
    report = retrieval_scan()
    assert (report.judged["mode"], report.judged["neighbourhoods"]) == ("incremental", 1)
    assert_as_a_full_judgement()
    assert not RetrievalScanJudgement.objects.filter(terms=neighbourhood(FLUTTER)).exists()

    # The window moves on: the first buckling searches (the oldest left) are now 100 days old.
    before = RetrievalScanJudgement.objects.get(terms=neighbourhood(BUCKLING)).decisions
    RetrievalFeedback.objects.filter(trace_id__in=[r.trace_id for r in oldest]).update(
        created_at=timezone.now() - timedelta(days=100)
    )
    report = retrieval_scan()
    assert report.rollups["expired_rows"] == 12
    assert (report.judged["mode"], report.judged["neighbourhoods"]) == ("incremental", 1)
    assert_as_a_full_judgement()
    assert RetrievalScanJudgement.objects.get(terms=neighbourhood(BUCKLING)).decisions != before

    # A passage deleted takes its rollups with it (which neighbourhoods is not recorded): all again.
    Document.objects.filter(pk="buckling").delete()
    report = retrieval_scan()
    assert (report.judged["mode"], report.judged["reason"]) == ("full", "the rollups were rebuilt or reset")
    assert_as_a_full_judgement()


def test_a_scan_with_nothing_new_proposes_what_it_would_after_a_full_judgement(world, corpus, pinned):
    ask(world, FLUTTER, used_rank=1)
    ask(world, BUCKLING, used_rank=2)
    retrieval_scan()
    proposed = sorted(LearningPromotion.objects.values_list("subject_id", "proposed_learning__reason"))
    LearningPromotion.objects.all().delete()
    again = retrieval_scan()  # the judgements kept, nothing re-judged: the same proposals
    assert again.judged["mode"] == "unchanged"
    assert sorted(LearningPromotion.objects.values_list("subject_id", "proposed_learning__reason")) == proposed
    LearningPromotion.objects.all().delete()
    RetrievalScanState.objects.all().delete()
    full = retrieval_scan()
    assert full.judged["mode"] == "full"
    assert sorted(LearningPromotion.objects.values_list("subject_id", "proposed_learning__reason")) == proposed


def test_a_reference_that_moved_beyond_the_tolerance_makes_the_scan_judge_everything_again(
    world, corpus, settings, monkeypatch
):
    settings.RETRIEVAL_SCAN_REJUDGE_TOLERANCE = 0.0
    ask(world, FLUTTER, used_rank=1)
    ask(world, BUCKLING, used_rank=2)
    retrieval_scan()
    ask(world, HEATING, used_rank=3, times=6)  # a new neighbourhood: the prior and the global rate move
    fits = []
    monkeypatch.setattr(scanner, "_reference", lambda *a, **kw: fits.append(1) or _reference(*a, **kw))
    report = retrieval_scan()
    assert (report.judged["mode"], report.judged["reason"]) == ("full", "the fitted eta, global rate or prior moved")
    assert len(fits) == 1  # the fresh fit that moved is the one judged under (same window, same sample)
    assert report.judged["drift"]["prior"] > 0
    # A fresh full judgement (the reference fitted now) is what is stored.
    assert comparable(_stored()) == comparable(_query_decisions(propensity_estimate(), ScanReport()))
    assert_as_a_full_judgement()


def test_changed_settings_make_the_scan_judge_everything_again(world, corpus, settings, pinned):
    ask(world, FLUTTER, used_rank=1)
    retrieval_scan()
    settings.RETRIEVAL_SCAN_MIN_LIFT = 1.3
    report = retrieval_scan()
    assert (report.judged["mode"], report.judged["reason"]) == ("full", "the settings changed")
    assert_as_a_full_judgement()


def test_the_report_counts_every_neighbourhood_judged_not_only_those_judged_again(world, corpus, pinned):
    ask(world, FLUTTER, used_rank=1)
    ask(world, BUCKLING, used_rank=2)
    first = retrieval_scan()
    ask(world, BUCKLING, used_rank=2)
    later = retrieval_scan()
    assert (later.judged["mode"], later.judged["neighbourhoods"]) == ("incremental", 1)
    reference = _Reference.from_json(RetrievalScanState.objects.get().reference)
    verdicts = _judge(_evidence(TraceRollup.objects.all()), reference)
    assert later.groups == sum(v.groups for v in verdicts.values())
    assert later.groups > RetrievalScanJudgement.objects.get(terms=neighbourhood(BUCKLING)).groups
    assert later.propensity == first.propensity  # judged under the stored reference
    assert later.relevance_prior == first.relevance_prior


def test_the_decisions_a_scan_proposes_from_are_those_stored_whichever_way_it_judged(world, corpus, monkeypatch):
    """A full judgement proposes from what it has just written, without reading the judgements back; an
    incremental one reads back only the neighbourhoods it did not judge again: the decisions are
    what reading every stored judgement gives, in the same order."""
    returned: list[list[Decision]] = []
    judgements = scanner._judgements
    monkeypatch.setattr(scanner, "_judgements", lambda report: returned.append(judgements(report)) or returned[-1])
    ask(world, FLUTTER, used_rank=1)
    ask(world, BUCKLING, used_rank=2)
    ask(world, HEATING, used_rank=1)
    with CaptureQueriesContext(connection) as queries:
        first = retrieval_scan()
    assert first.judged["mode"] == "full"
    assert returned[-1]
    read_back = re.compile(r"SELECT .*decisions.* FROM .ai_retrieval_scan_judgements")
    assert not [q for q in queries.captured_queries if read_back.search(q["sql"])]
    assert as_compared(returned[-1]) == as_compared(_stored())
    ask(world, BUCKLING, used_rank=3, times=4)
    with override_settings(RETRIEVAL_SCAN_REJUDGE_TOLERANCE=0.5):
        later = retrieval_scan()
    assert later.judged["mode"] == "incremental"
    assert as_compared(returned[-1]) == as_compared(_stored())
    assert retrieval_scan().judged["mode"] == "unchanged"
    assert as_compared(returned[-1]) == as_compared(_stored())


def as_compared(decisions: list[Decision]) -> list[tuple]:
    """In order, with the figures as stored JSON (key order aside)."""
    return [
        (d.chunk_id, d.project_id, d.keys, d.kind, d.multiplier, d.strength, json.dumps(d.figures, sort_keys=True))
        for d in decisions
    ]


@pytest.mark.parametrize("modulus", [1, 2, 3])
def test_the_prior_sample_taken_from_the_window_in_memory_is_the_one_read_from_the_rollups(world, corpus, modulus):
    """A judgement of everything fits its reference on the window it has just read: the sample of
    chunks whose id is a multiple of the modulus, taken from that evidence, gives the fit that
    reading those chunks' rollups again gives (the scan no longer reads them twice)."""
    ask(world, FLUTTER, used_rank=1, role="owner")
    ask(world, BUCKLING, used_rank=2)
    ask(world, HEATING, used_rank=1, role="member")
    retrieval_scan()  # the rollups, refreshed
    evidence = _evidence(TraceRollup.objects.all())
    sample = evidence.sample(modulus)
    assert sample.keys
    assert all(chunk_id % modulus == 0 for chunk_id, _, _ in sample.keys)
    read = _evidence(TraceRollup.objects.filter(chunk_id__in=[c for c, _, _ in evidence.keys if c % modulus == 0]))
    assert sample.keys == read.keys
    assert (sample.by_rank == read.by_rank).all()
    assert all((sample.counts[k] == read.counts[k]).all() for k in read.counts)
    propensity = propensity_estimate()
    in_memory = _reference(propensity, modulus=modulus, evidence=evidence)
    reread = _reference(propensity, modulus=modulus)
    assert in_memory.to_json() == reread.to_json()
