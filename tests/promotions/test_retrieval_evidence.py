"""The retrieval scan's estimator: position-debiased relevance, skips as evidence, the propensity
fitted on explored results, and the figures a proposal carries."""

from __future__ import annotations

import numpy as np
import pytest
from django.utils import timezone

from core.embeddings import get_embedder
from promotions.models import LearningPromotion
from promotions.scanners.retrieval import (
    GRID,
    Propensity,
    ScanReport,
    _query_decisions,
    propensity_estimate,
    relevance_prior,
    retrieval_scan,
    wilson,
)
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
    assert report.propensity == {
        "model": "(1/rank)^eta",
        "eta": 1.0,
        "eta_sd": 0.5,
        "source": "prior",
        "explored": 0,
        "explored_clicks": 0,
    }
    boosts = LearningPromotion.objects.filter(proposed_learning__reason="helpful")
    assert [p.proposed_learning["chunk"] for p in boosts] == [chunks["deep"].pk]
    evidence = boosts.get().proposed_learning["evidence"]
    figures = evidence["neighbourhoods"][0]
    # A boost is judged with eta one standard deviation lower (the prior's 1 - 0.5: more examinations
    # low on the page, so less relevance per use): 16 uses / (100 searches x p(5) = 5^-0.5).
    assert figures["eta"] == 0.5
    assert figures["effective_examinations"] == pytest.approx(100 * 5**-0.5, abs=1e-3)
    assert figures["relevance"] == pytest.approx(16 / (100 * 5**-0.5), abs=1e-3)
    assert figures["lower"] > figures["baseline"] * evidence["thresholds"]["min_lift"]
    assert (figures["shown"], figures["positives"], figures["skips"]) == (100, 16, 84)
    assert figures["terms"] == ["experiment", "flutter", "tunnel", "wind"]
    assert evidence["propensity"]["source"] == "prior"
    assert set(evidence["thresholds"]) >= {"min_effective_examinations", "confidence", "min_support"}
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
    # Eight searches: with two groups in the window the relevance prior is nearly uniform, and five
    # uses of five are not yet 90 % sure to beat 1.1 times the neighbourhood's baseline of 2/3.
    for _ in range(8):
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


def test_few_explored_clicks_move_eta_little_from_the_prior(world, chunks):
    # Was: fewer than 200 explored results fell back to the prior, more were fitted by maximum
    # likelihood. The information is in the clicks: 13 clicks (a bench run's, users examining as 1/r)
    # put the maximum-likelihood eta at 2.76; the posterior stays near the prior and says how unsure it is.
    explored_rollups({4: (120, 4), 5: (120, 5), 6: (120, 2), 7: (120, 1), 8: (120, 0), 9: (120, 0), 10: (120, 1)})
    estimate = propensity_estimate()
    assert (estimate.source, estimate.explored, estimate.clicks) == ("exploration", 840, 13)
    assert 1.0 < estimate.eta < 1.6
    assert estimate.sd > 0.3
    assert estimate.describe()["eta_sd"] == round(estimate.sd, 3)


def test_without_explored_clicks_eta_is_the_prior(world, chunks):
    explored_rollups({4: (50, 0), 8: (50, 0)})
    estimate = propensity_estimate()
    assert (estimate.source, estimate.eta, estimate.sd, estimate.explored) == ("prior", 1.0, 0.5, 100)


def test_wilson_bounds():
    lower, upper = wilson(8, 10, 1.28)
    assert 0.6 < lower < 0.8 < upper < 0.95
    assert wilson(0, 0, 1.28) == (0.0, 1.0)
    assert wilson(3, 2, 1.28)[1] == 1.0  # an inverse-propensity estimate above 1 is capped


def _groups(rng: np.random.Generator, n: int, relevant_share: float) -> list[dict]:
    """``n`` (uses, examinations) groups: a share relevant (used half the time they are looked at),
    the rest hardly ever used, each looked at 2 to 13 times."""
    groups = []
    for i in range(n):
        examined = float(rng.integers(2, 14))
        theta = 0.5 if i < relevant_share * n else 0.04
        groups.append({"examined": examined, "used": float(rng.binomial(int(examined), theta))})
    return groups


def test_the_relevance_prior_learns_how_relevance_is_spread_over_the_window():
    prior = relevance_prior(_groups(np.random.default_rng(7), 400, relevant_share=0.3))
    assert prior.fitted_on == 400
    assert prior.weights.sum() == pytest.approx(1.0)
    assert prior.weights[GRID < 0.15].sum() == pytest.approx(0.7, abs=0.08)  # the rarely used majority
    assert prior.weights[(GRID > 0.3) & (GRID < 0.7)].sum() == pytest.approx(0.3, abs=0.08)
    assert prior.weights[GRID > 0.8].sum() < 0.03
    # The prior makes the same evidence mean more: nothing used in 4 looks is likely irrelevant here...
    skipped = prior.posterior(0.0, 4.0)
    assert skipped[GRID < 0.15].sum() > 0.9
    # ...and 3 uses in 4 looks likely relevant, though not as relevant as 3/4.
    used = prior.posterior(3.0, 4.0)
    assert used[GRID > 0.3].sum() > 0.9
    assert GRID @ used < 0.75


def test_a_small_window_leaves_the_relevance_prior_open():
    prior = relevance_prior(_groups(np.random.default_rng(7), 3, relevant_share=0.0))
    assert prior.weights[GRID < 0.15].sum() < 0.3  # mostly the uniform prior: 3 groups are no population
    assert prior.posterior(0.0, 4.0)[GRID < 0.15].sum() < 0.9


def _rollup(chunk: Chunk, terms: str, rank: int, shown: int, clicked: int) -> TraceRollup:
    return TraceRollup(
        ident=f"{chunk.pk}-{terms}-{rank}",
        chunk=chunk,
        terms=terms,
        rank=rank,
        shown=shown,
        skipped=shown - clicked,
        clicked=clicked,
    )


def _busy_window(*ordered: Chunk) -> list[TraceRollup]:
    """60 other neighbourhoods of these results in rank order, each searched 13 times: the first used
    6 times, the rest never (one look in four is used, most results go unused)."""
    return [
        _rollup(chunk, f"topic {i}", rank, 13, 6 if rank == 1 else 0)
        for i in range(60)
        for rank, chunk in enumerate(ordered, start=1)
    ]


def _population(
    ordered: list[Chunk], *, size: int, answered: int, searches: int, eta: float, seed: int
) -> tuple[list[TraceRollup], dict[str, int | None]]:
    """``size`` neighbourhoods "topic i" of these results in rank order, searched ``searches`` times
    with feedback by users who look at rank r with probability r^-eta. In the first ``answered`` one
    result drawn at random is relevant (used 60 % of the times it is looked at); every other result is
    used 4 % of the time. Returns the rollups and each neighbourhood's relevant position (or None)."""
    rng = np.random.default_rng(seed)
    relevant: dict[str, int | None] = {}
    rows = []
    for i in range(size):
        terms = f"topic {i}"
        relevant[terms] = int(rng.integers(len(ordered))) if i < answered else None
        for rank, chunk in enumerate(ordered, start=1):
            theta = 0.6 if rank - 1 == relevant[terms] else 0.04
            looked = rng.binomial(searches, rank**-eta)
            rows.append(_rollup(chunk, terms, rank, searches, int(rng.binomial(looked, theta))))
    return rows, relevant


def _decided(propensity: Propensity) -> dict[tuple[int, str], str]:
    return {(d.chunk_id, d.keys[0]): d.kind for d in _query_decisions(propensity, ScanReport())}


def test_a_few_skips_weigh_more_in_a_window_where_most_results_go_unused(world, chunks):
    top, second, third, deep = (chunks[k] for k in ("top", "second", "third", "deep"))
    probe = [_rollup(top, "probe", 1, 13, 6), _rollup(second, "probe", 2, 8, 0)]  # second: 4 looks, no use
    TraceRollup.objects.bulk_create(probe)
    prior_eta = Propensity(1.0, "prior", 0, 0.1)
    alone = _decided(prior_eta)
    assert (second.pk, "probe") not in alone  # 0 uses in 4 looks, and nothing else to compare with
    # The same evidence in a window of 60 other neighbourhoods where one result in four is used.
    TraceRollup.objects.bulk_create(_busy_window(top, second, third, deep))
    assert _decided(prior_eta)[(second.pk, "probe")] == "unhelpful"


def test_results_nobody_uses_are_penalised_where_nothing_is_used(world, chunks):
    """A simulated population like the one below, with five searches per neighbourhood: in 60 of 80
    one result of four is relevant, in 20 none is (every result used 4 % of the times it is looked
    at). Judged only against their own neighbourhood's baseline, near zero where nothing is used,
    the results at the top of those 20 were kept there, and nothing made room for the results below."""
    ordered = [chunks[k] for k in ("top", "second", "third", "deep")]
    rows, relevant = _population(ordered, size=80, answered=60, searches=5, eta=1.0, seed=7)
    TraceRollup.objects.bulk_create(rows)
    decided = _decided(Propensity(1.0, "prior", 0, 0.1))
    rank_of = {chunk.pk: rank for rank, chunk in enumerate(ordered)}
    penalties = [(chunk_id, terms) for (chunk_id, terms), kind in decided.items() if kind == "unhelpful"]
    assert all(rank_of[chunk_id] != relevant[terms] for chunk_id, terms in penalties)
    hopeless_tops = [terms for terms, r in relevant.items() if r is None]
    found = {terms for chunk_id, terms in penalties if relevant[terms] is None and rank_of[chunk_id] == 0}
    assert len(found) >= 0.5 * len(hopeless_tops)


def test_two_uses_low_on_a_page_seen_five_times_are_judged(world, chunks):
    # Five searches of a query with feedback; users look at rank r about 1/r of the time, so rank 4
    # was looked at 1.25 times, expected. It was used twice and ranks 1-3 never. Judged with a floor of
    # 2 expected examinations it was not judged at all (and such a query's relevant results below the
    # top 3 rarely are); with a floor of 1, the posterior decides, in a window where most results go unused.
    top, second, third, deep = (chunks[k] for k in ("top", "second", "third", "deep"))
    TraceRollup.objects.bulk_create(
        [
            *_busy_window(top, second, third, deep),
            *(_rollup(chunk, "probe", rank, 5, 0) for rank, chunk in enumerate((top, second, third), start=1)),
            _rollup(deep, "probe", 4, 5, 2),
        ]
    )
    decided = _decided(Propensity(1.0, "prior", 0, 0.1))
    assert decided[(deep.pk, "probe")] == "helpful"
    assert (third.pk, "probe") not in decided  # 1.7 looks without a use: too little against a result


def test_one_use_low_on_a_page_is_enough_when_the_posterior_is_sure(world, chunks):
    """Five searches of a question: a relevant result at rank 4 is looked at 1.25 times, expected, and
    rarely used twice. Used once there while the three above it never were, it is boosted (the posterior
    decides, not a count of uses); one use in five looks at rank 1 says little, and boosts nothing."""
    top, second, third, deep = (chunks[k] for k in ("top", "second", "third", "deep"))
    TraceRollup.objects.bulk_create(
        [
            *_busy_window(top, second, third, deep),
            *(_rollup(chunk, "probe", rank, 5, 0) for rank, chunk in enumerate((top, second, third), start=1)),
            _rollup(deep, "probe", 4, 5, 1),
            _rollup(top, "mixed", 1, 5, 1),
            *(_rollup(chunk, "mixed", rank, 5, 0) for rank, chunk in enumerate((second, third, deep), start=2)),
        ]
    )
    decided = _decided(Propensity(1.0, "prior", 0, 0.1))
    assert decided[(deep.pk, "probe")] == "helpful"
    assert decided.get((top.pk, "mixed")) != "helpful"


def test_estimates_on_a_simulated_population_not_fitted_on(world, chunks):
    """80 neighbourhoods of four results; in each one chosen at random is relevant (used 60 % of the
    times it is looked at), the others are used 4 % of the time; users look at rank r with probability
    r^-0.7 (not the prior's 1/r) in 15 searches with feedback. Boosts and penalties must land on the
    right results."""
    ordered = [chunks[k] for k in ("top", "second", "third", "deep")]
    rows, relevant = _population(ordered, size=80, answered=80, searches=15, eta=0.7, seed=2024)
    TraceRollup.objects.bulk_create(rows)
    decided = _decided(Propensity(1.0, "prior", 0, 0.1))
    rank_of = {chunk.pk: rank for rank, chunk in enumerate(ordered)}
    good = {(chunk_id, terms) for (chunk_id, terms) in decided if rank_of[chunk_id] == relevant[terms]}
    boosts = [key for key, kind in decided.items() if kind == "helpful"]
    penalties = [key for key, kind in decided.items() if kind == "unhelpful"]
    assert boosts
    assert all(key in good for key in boosts)
    assert len([key for key in penalties if key not in good]) >= 0.95 * len(penalties)
    # Most results shown at rank 1 or 2 and not relevant are found out.
    high_irrelevant = sum(1 for terms, r in relevant.items() for rank in (0, 1) if rank != r)
    found = sum(1 for (chunk_id, terms) in penalties if rank_of[chunk_id] in (0, 1))
    assert found >= 0.5 * high_irrelevant


def test_a_penalty_must_hold_across_the_spread_of_eta(world, chunks):
    top, second, third, deep = (chunks[k] for k in ("top", "second", "third", "deep"))
    TraceRollup.objects.bulk_create(
        [
            *_busy_window(top, second, third, deep),
            _rollup(top, "probe", 1, 15, 7),
            _rollup(deep, "probe", 8, 15, 0),  # low on the page, never used
        ]
    )
    # Sure of eta = 0.6: rank 8 is looked at 29 % of the time, 4.3 looks without a use: a penalty.
    assert _decided(Propensity(0.6, "exploration", 500, 0.1))[(deep.pk, "probe")] == "unhelpful"
    # eta = 0.6 give or take 0.4: at eta = 1 the skips are 1.9 looks, too few to judge.
    assert (deep.pk, "probe") not in _decided(Propensity(0.6, "exploration", 500, 0.1, sd=0.4))
