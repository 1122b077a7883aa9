"""The retrieval scan's estimator: position-debiased relevance, skips as evidence, the propensity
fitted on explored results, and the figures a proposal carries."""

from __future__ import annotations

import pytest
from django.utils import timezone

from core.embeddings import get_embedder
from promotions.models import LearningPromotion
from promotions.scanners.retrieval import propensity_estimate, retrieval_scan, wilson
from retrieval.models import Chunk, RetrievalFeedback, RetrievalQuery, TraceRollup
from retrieval.services import DocumentInput, ResultFeedback, documents_import, retrieval_feedback_record

DOCS = {
    "top": "Flutter of aircraft wings: aeroelastic coupling of bending and torsion.",
    "second": "Wind tunnel tests of wing flutter with control surfaces.",
    "third": "Buckling of thin cylindrical shells under axial compression.",
    "deep": "Aerodynamic heating of blunt bodies in hypersonic flow.",
}
QUERY = "wind tunnel flutter experiments"


@pytest.fixture
def chunks(world):
    documents_import(actor=world.actor("service"), items=[DocumentInput(id=k, raw_text=v) for k, v in DOCS.items()])
    return {c.document_id: c for c in Chunk.objects.all()}


def position_biased_log(world, chunks, *, searches=100, with_feedback=True):
    """A deterministic click log of ``searches`` searches of one query by users who examine rank r with
    probability 1/r: "top" at rank 1 is used in 30 % of searches (relevance 0.3), "second" at rank 2 in
    15 % (relevance 0.3), "third" at rank 3 never (relevance 0), "deep" at rank 5 in 16 % (relevance
    0.8, examined a fifth of the time). Every search gets feedback (what was used, possibly nothing).
    Raw counts rank "top" first; relevance ranks "deep" first."""
    vector = get_embedder().embed_one(QUERY)
    placed = {"top": 1, "second": 2, "third": 3, "deep": 5}
    used = {
        "top": lambda i: i % 10 < 3,
        "second": lambda i: i % 20 < 3,
        "third": lambda i: False,
        "deep": lambda i: i % 25 < 4,
    }
    actor = world.actor("other")
    for i in range(searches):
        trace = RetrievalQuery.objects.create(user=actor.user, query_text=QUERY, embedding=vector, k=5)
        RetrievalFeedback.objects.bulk_create(
            RetrievalFeedback(
                trace=trace,
                user=actor.user,
                query_text=QUERY,
                document_id=chunks[name].document_id,
                chunk=chunks[name],
                rank=rank,
                score=0.5,
            )
            for name, rank in placed.items()
        )
        if with_feedback:  # what was used, possibly nothing (the rest counts as skipped)
            items = [
                ResultFeedback(chunk_id=chunks[name].chunk_id, cited=True, used_in_answer=True)
                for name in placed
                if used[name](i)
            ]
            retrieval_feedback_record(actor=actor, trace_id=str(trace.pk), items=items)


def test_the_debiased_estimate_finds_the_relevant_result_where_raw_counts_fail(world, chunks):
    position_biased_log(world, chunks)
    raw = {name: RetrievalFeedback.objects.filter(chunk=c, cited=True).count() for name, c in chunks.items()}
    assert raw["top"] > raw["deep"]  # raw counts of marks would boost the top result, not the deep one
    report = retrieval_scan()
    assert report.propensity == {"model": "(1/rank)^eta", "eta": 1.0, "source": "prior", "explored": 0}
    boosts = LearningPromotion.objects.filter(proposed_learning__reason="helpful")
    assert [p.proposed_learning["chunk"] for p in boosts] == [chunks["deep"].pk]
    evidence = boosts.get().proposed_learning["evidence"]
    figures = evidence["neighbourhoods"][0]
    assert figures["relevance"] == pytest.approx(0.8)  # 16 uses / (100 searches x p(5) = 0.2)
    assert figures["effective_examinations"] == pytest.approx(20.0)
    assert figures["lower"] > figures["baseline"] * evidence["thresholds"]["min_lift"]
    assert (figures["shown"], figures["positives"], figures["skips"]) == (100, 16, 84)
    assert figures["terms"] == ["experiment", "flutter", "tunnel", "wind"]
    assert evidence["propensity"]["source"] == "prior"
    assert set(evidence["thresholds"]) >= {"min_effective_examinations", "confidence_z", "min_support"}
    learning = boosts.get().proposed_learning
    assert learning["scope"] == "query"
    assert learning["multiplier"] > 1.0
    assert len(learning["anchor_traces"]) == 1


def test_results_shown_high_and_skipped_are_penalised(world, chunks):
    position_biased_log(world, chunks)
    retrieval_scan()
    penalties = LearningPromotion.objects.filter(proposed_learning__reason="unhelpful")
    assert [p.proposed_learning["chunk"] for p in penalties] == [chunks["third"].pk]  # examined 33 times, unused
    figures = penalties.get().proposed_learning["evidence"]["neighbourhoods"][0]
    assert (figures["positives"], figures["skips"]) == (0, 100)
    assert figures["upper"] * 1.1 <= figures["baseline"]
    # "top" and "second" are used as often as the neighbourhood's average: no penalty, no boost.
    assert not LearningPromotion.objects.filter(subject_id__in=[str(chunks["top"].pk), str(chunks["second"].pk)])


def test_searches_without_any_feedback_are_no_evidence(world, chunks):
    position_biased_log(world, chunks, with_feedback=False)
    report = retrieval_scan()
    assert (report.boosts, report.penalties, report.groups) == (0, 0, 0)
    assert not TraceRollup.objects.exists()  # shown, but nobody said what they did with it


def test_a_boost_for_a_result_already_first_is_not_proposed(world, chunks):
    vector = get_embedder().embed_one(QUERY)
    for _ in range(5):
        trace = RetrievalQuery.objects.create(
            user=world.other, query_text=QUERY, embedding=vector, k=2, feedback_at=timezone.now()
        )
        for rank, name in ((1, "top"), (2, "second")):
            RetrievalFeedback.objects.create(
                trace=trace,
                user=world.other,
                query_text=QUERY,
                document_id=name,
                chunk=chunks[name],
                rank=rank,
                score=0.5,
                cited=name == "top",
            )
    report = retrieval_scan()
    assert (report.boosts, report.already_first) == (0, 1)


def explored_rollups(counts: dict[int, tuple[int, int]]) -> None:
    chunk = Chunk.objects.first()
    TraceRollup.objects.bulk_create(
        TraceRollup(
            ident=f"explored-{rank}",
            chunk=chunk,
            terms="flutter",
            rank=rank,
            explored=True,
            shown=n,
            skipped=n - clicks,
            clicked=clicks,
        )
        for rank, (n, clicks) in counts.items()
    )


def test_the_propensity_is_fitted_on_explored_results(world, chunks):
    # Explored results at ranks 4..10, 1,000 each, clicked at 0.6 * r^-0.7 (exact counts).
    explored_rollups({r: (1000, round(1000 * 0.6 * r**-0.7)) for r in range(4, 11)})
    estimate = propensity_estimate()
    assert estimate.source == "exploration"
    assert estimate.eta == pytest.approx(0.7, abs=0.05)
    assert estimate.at(1) == 1.0
    assert estimate.at(50) == pytest.approx(max(0.1, 50**-estimate.eta))


def test_too_few_explored_results_fall_back_to_the_prior(world, chunks, settings):
    explored_rollups({4: (50, 10), 8: (50, 5)})
    estimate = propensity_estimate()
    assert (estimate.source, estimate.eta, estimate.explored) == ("prior", 1.0, 100)


def test_wilson_bounds():
    lower, upper = wilson(8, 10, 1.28)
    assert 0.6 < lower < 0.8 < upper < 0.95
    assert wilson(0, 0, 1.28) == (0.0, 1.0)
    assert wilson(3, 2, 1.28)[1] == 1.0  # an inverse-propensity estimate above 1 is capped
