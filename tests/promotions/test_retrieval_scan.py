"""The retrieval promotion scan, retrieval weights, and search applying them."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

from config.exceptions import Conflict
from core.embeddings import get_embedder
from feedback.models import FeedbackEvent
from promotions import services
from promotions.models import LearningPromotion
from promotions.scanners.retrieval import retrieval_scan
from retrieval.models import Chunk, RetrievalFeedback, RetrievalQuery, RetrievalWeight
from retrieval.services import (
    DocumentInput,
    ResultFeedback,
    documents_import,
    retrieval_feedback_record,
    search,
    weight_create,
)
from tests.concurrency import at_once

DOCS = {
    "flutter": "Flutter of aircraft wings: aeroelastic coupling of bending and torsion.",
    "flutter-tests": "Wind tunnel tests of wing flutter with control surfaces.",
    "buckling": "Buckling of thin cylindrical shells under axial compression.",
    "heating": "Aerodynamic heating of blunt bodies in hypersonic flow.",
}


@pytest.fixture
def corpus(world):
    get_embedder()
    documents_import(actor=world.actor("service"), items=[DocumentInput(id=k, raw_text=v) for k, v in DOCS.items()])
    return {c.document_id: c for c in Chunk.objects.all()}


def ask(world, query, *, mark=None, outcome=None, times=3, k=4, role="other"):
    """Search ``times`` times; each time mark chunk ``mark`` cited+used (or with ``outcome``)."""
    actor = world.actor(role)
    for _ in range(times):
        result = search(actor=actor, query=query, k=k)
        if mark is not None:
            chunk_id = f"{mark}#0"
            item = (
                ResultFeedback(chunk_id=chunk_id, outcome=outcome)
                if outcome
                else ResultFeedback(chunk_id=chunk_id, cited=True, used_in_answer=True, outcome="helpful")
            )
            retrieval_feedback_record(actor=actor, trace_id=result.trace_id, items=[item])


def ranks(world, query, k=4):
    return [hit.chunk.document_id for hit in search(actor=world.actor("admin"), query=query, k=k).hits]


def only_the_boost(world):
    """Reject the scan's other candidates (the top result all three users skipped is penalised: skips
    are evidence), leaving the boost."""
    for promotion in LearningPromotion.objects.filter(status="candidate").exclude(proposed_learning__reason="helpful"):
        services.promotion_transition(actor=world.actor("admin"), promotion_id=str(promotion.pk), action="reject")
    return LearningPromotion.objects.get(status="candidate")


def approve_and_apply_all(world):
    admin = world.actor("admin")
    for promotion in LearningPromotion.objects.filter(status="candidate"):
        services.promotion_transition(actor=admin, promotion_id=str(promotion.pk), action="approve")
        services.promotion_transition(actor=admin, promotion_id=str(promotion.pk), action="apply")


def test_repeated_use_below_the_top_becomes_a_query_scoped_boost(world, corpus):
    query = "wind tunnel flutter experiments"
    before = ranks(world, query)
    lower = before[1]  # used every time although ranked second
    ask(world, query, mark=lower)
    report = retrieval_scan()
    # The boost, and (intentionally, since skips count) a penalty of the top result all three skipped.
    assert (report.boosts, report.penalties) == (1, 1)
    skipped = LearningPromotion.objects.get(proposed_learning__reason="unhelpful").proposed_learning
    assert (skipped["chunk"], skipped["scope"]) == (corpus[before[0]].pk, "query")
    assert skipped["evidence"]["neighbourhoods"][0]["positives"] == 0
    assert skipped["evidence"]["neighbourhoods"][0]["skips"] == 3
    promotion = only_the_boost(world)
    learning = promotion.proposed_learning
    assert (promotion.subject_id, learning["scope"], learning["reason"]) == (str(corpus[lower].pk), "query", "helpful")
    assert 1.0 < learning["multiplier"] <= 1.5
    assert len(learning["anchor_traces"]) == 1  # one distinct query behind it
    approve_and_apply_all(world)
    assert ranks(world, query)[0] == lower  # the boost applies to this neighbourhood...
    assert ranks(world, "buckling of cylindrical shells")[0] == "buckling"  # ...not to unrelated queries
    hit = next(h for h in search(actor=world.actor("admin"), query=query, k=4).hits if h.chunk.document_id == lower)
    assert hit.weight == pytest.approx(learning["multiplier"])


def test_two_signals_are_not_enough(world, corpus, settings):
    ask(world, "wind tunnel flutter experiments", mark="flutter-tests", times=2)
    assert retrieval_scan().boosts == 0
    assert not LearningPromotion.objects.exists()


def test_two_stale_marks_are_not_enough(world, corpus):
    ask(world, "hypersonic heating", mark="heating", outcome="stale", times=2)
    retrieval_scan()
    assert not LearningPromotion.objects.filter(proposed_learning__reason="stale").exists()


def test_repeatedly_stale_content_is_penalised_everywhere(world, corpus):
    ask(world, "hypersonic heating", mark="heating", outcome="stale")
    retrieval_scan()
    learning = LearningPromotion.objects.get().proposed_learning
    assert (learning["scope"], learning["reason"]) == ("global", "stale")
    assert 0.65 <= learning["multiplier"] < 1.0
    approve_and_apply_all(world)
    weight = RetrievalWeight.objects.get()
    assert (weight.scope, weight.status) == ("global", "active")


def test_a_single_contrary_mark_does_not_block_a_boost(world, corpus):
    # Was: any problem mark blocked the chunk's boost. Now a contrary mark is evidence like any other.
    query = "wind tunnel flutter experiments"
    lower = ranks(world, query)[1]
    ask(world, query, mark=lower)
    ask(world, query, mark=lower, outcome="unhelpful", times=1)
    assert retrieval_scan().boosts == 1
    evidence = LearningPromotion.objects.get(proposed_learning__reason="helpful").proposed_learning["evidence"]
    assert (evidence["positives"], evidence["problems"]) == (3, 1)


def test_as_many_contrary_marks_as_uses_make_no_boost(world, corpus):
    query = "wind tunnel flutter experiments"
    lower = ranks(world, query)[1]
    ask(world, query, mark=lower)
    ask(world, query, mark=lower, outcome="unhelpful", times=3)
    assert retrieval_scan().boosts == 0


def test_no_second_open_candidate_and_scanning_twice_adds_nothing(world, corpus):
    ask(world, "hypersonic heating", mark="heating", outcome="stale")
    first = retrieval_scan()
    second = retrieval_scan()
    assert (first.penalties, second.penalties, second.skipped_open) == (1, 0, 1)
    assert LearningPromotion.objects.count() == 1


def test_a_candidate_opened_meanwhile_is_skipped_and_every_opened_one_is_audited(world, corpus):
    ask(world, "hypersonic heating", mark="heating", outcome="stale")
    ask(world, "cylindrical shell buckling", mark="buckling", outcome="stale")
    # Another scan (or an admin) opened one of the two subjects after this scan read the ledger.
    services.promotions_propose_bulk(
        actor=world.actor("admin"),
        promotion_type="retrieval_weight",
        subject_type="chunk",
        proposals=[services.Proposal(subject_id=str(corpus["heating"].pk), proposed_learning={}, confidence=0.5)],
    )
    report = retrieval_scan()
    assert (report.penalties, report.skipped_open) == (1, 1)
    assert LearningPromotion.objects.filter(status="candidate").count() == 2
    proposed = FeedbackEvent.objects.filter(event_type="promotion_propose").values_list("subject_id", flat=True)
    assert sorted(proposed) == sorted(str(p.pk) for p in LearningPromotion.objects.all())


@pytest.mark.django_db(transaction=True)
def test_two_scans_at_once_open_each_candidate_once(world, corpus):
    if connection.vendor != "postgresql":
        pytest.skip("concurrent writers need PostgreSQL; the PostgreSQL run covers this")
    ask(world, "hypersonic heating", mark="heating", outcome="stale")
    ask(world, "cylindrical shell buckling", mark="buckling", outcome="stale")
    reports = at_once(retrieval_scan)
    assert sum(r.penalties for r in reports) == 2
    assert LearningPromotion.objects.count() == 2
    assert FeedbackEvent.objects.filter(event_type="promotion_propose").count() == 2


def test_applying_after_the_evidence_queries_were_deleted_is_a_clear_conflict(world, corpus):
    query = "wind tunnel flutter experiments"
    ask(world, query, mark=ranks(world, query)[1])
    retrieval_scan()
    promotion = only_the_boost(world)
    admin = world.actor("admin")
    services.promotion_transition(actor=admin, promotion_id=str(promotion.pk), action="approve")
    RetrievalQuery.objects.all().delete()  # trace retention removed the queries behind the anchors
    with pytest.raises(Conflict, match="no longer exist"):
        services.promotion_transition(actor=admin, promotion_id=str(promotion.pk), action="apply")
    assert LearningPromotion.objects.get(pk=promotion.pk).status == "approved"
    assert not RetrievalWeight.objects.exists()


def test_paused_and_superseded_weights_are_ignored(world, corpus):
    query = "wind tunnel flutter experiments"
    lower = ranks(world, query)[1]
    ask(world, query, mark=lower)
    retrieval_scan()
    promotion = only_the_boost(world)
    approve_and_apply_all(world)
    assert ranks(world, query)[0] == lower
    services.promotion_transition(actor=world.actor("admin"), promotion_id=str(promotion.pk), action="pause")
    assert ranks(world, query)[0] != lower
    services.promotion_transition(actor=world.actor("admin"), promotion_id=str(promotion.pk), action="resume")
    assert ranks(world, query)[0] == lower
    services.promotion_transition(actor=world.actor("admin"), promotion_id=str(promotion.pk), action="supersede")
    assert RetrievalWeight.objects.get().status == "superseded"
    assert ranks(world, query)[0] != lower


def test_an_apply_delivered_twice_makes_one_weight(world, corpus):
    ask(world, "hypersonic heating", mark="heating", outcome="stale")
    retrieval_scan()
    approve_and_apply_all(world)
    promotion = LearningPromotion.objects.get()
    weight_create(promotion_id=promotion.pk, learning=promotion.proposed_learning)
    assert RetrievalWeight.objects.count() == 1


def test_the_database_refuses_a_weight_outside_its_bounds(world, corpus):
    chunk = next(iter(corpus.values()))
    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO ai_retrieval_weights (created_at, updated_at, subject_type, chunk_id, document_id, scope, "
            "multiplier, status, reason) VALUES (CURRENT_TIMESTAMP, CURRENT_TIMESTAMP, 'chunk', %s, %s, 'global', "
            "2.0, 'active', '')",
            [chunk.pk, chunk.document_id],
        )


def test_scan_endpoint_queues_a_run_whose_report_is_the_scanners(world, corpus, django_capture_on_commit_callbacks):
    ask(world, "hypersonic heating", mark="heating", outcome="stale")
    with django_capture_on_commit_callbacks(execute=True):
        response = world.client("admin").post("/api/v1/promotions/scan", {"scanner": "retrieval"}, format="json")
    assert response.status_code == 202
    run = world.client("admin").get(f"/api/v1/promotions/scans/{response.json()['id']}").json()
    assert run["status"] == "succeeded"
    report = run["report"]["retrieval"]
    assert (report["boosts"], report["penalties"], report["skipped_open"]) == (0, 1, 0)
    assert report["propensity"]["source"] == "prior"  # no exploration here
    assert report["rollups"]["new_rows"] == 12
    assert RetrievalFeedback.objects.filter(outcome="stale").count() == 3


def test_impact_preview_replays_the_queries_the_weight_touches(world, corpus):
    query = "wind tunnel flutter experiments"
    lower = ranks(world, query)[1]
    ask(world, query, mark=lower)
    search(actor=world.actor("other"), query="buckling of cylindrical shells", k=4)  # outside the neighbourhood
    retrieval_scan()
    promotion = only_the_boost(world)
    response = world.client("admin").get(f"/api/v1/promotions/{promotion.pk}/preview")
    assert response.status_code == 200
    preview = response.json()
    # The four searches of this query (three judged by their users), not the unrelated one.
    assert preview["summary"]["touched"] == 4
    assert {(q["rank_before"], q["rank_after"]) for q in preview["queries"]} == {(2, 1)}
    assert (preview["summary"]["judged"], preview["summary"]["improved"]) == (3, 3)
    assert all(q["ndcg_after"] > q["ndcg_before"] for q in preview["queries"] if q["ndcg_before"] is not None)
    assert world.client("owner").get(f"/api/v1/promotions/{promotion.pk}/preview").status_code == 403
    assert LearningPromotion.objects.get(pk=promotion.pk).status == "candidate"  # previewing changes nothing


def test_a_rejected_change_is_not_proposed_again_on_the_same_evidence(world, corpus):
    ask(world, "hypersonic heating", mark="heating", outcome="stale")
    retrieval_scan()
    rejected = LearningPromotion.objects.get()
    services.promotion_transition(actor=world.actor("admin"), promotion_id=str(rejected.pk), action="reject")
    report = retrieval_scan()
    assert (report.penalties, report.skipped_decided) == (0, 1)
    assert LearningPromotion.objects.count() == 1  # the reviewer's answer stands


def test_a_rejected_change_comes_back_once_its_evidence_has_grown_enough(world, corpus, settings):
    ask(world, "hypersonic heating", mark="heating", outcome="stale")
    retrieval_scan()
    rejected = LearningPromotion.objects.get()
    services.promotion_transition(actor=world.actor("admin"), promotion_id=str(rejected.pk), action="reject")
    ask(world, "hypersonic heating", mark="heating", outcome="stale", times=2)
    assert retrieval_scan().penalties == 0  # grown, but not twofold (RETRIEVAL_SCAN_RENEWAL)
    ask(world, "hypersonic heating", mark="heating", outcome="stale", times=4)
    assert retrieval_scan().penalties == 1
    again = LearningPromotion.objects.get(status="candidate")
    grown = again.proposed_learning["evidence"]["effective_examinations"]
    assert grown >= 2 * rejected.proposed_learning["evidence"]["effective_examinations"]


def test_an_applied_change_is_not_proposed_again_but_a_contrary_one_is(world, corpus):
    query = "wind tunnel flutter experiments"
    lower = ranks(world, query)[1]
    ask(world, query, mark=lower)
    retrieval_scan()
    only_the_boost(world)
    approve_and_apply_all(world)
    ask(world, query, mark=lower)  # more of the same: the weight is already in force
    report = retrieval_scan()
    assert report.boosts == 0
    assert report.skipped_decided >= 1
    # The boosted passage goes out of date and users say so, far more often than they used it: news.
    ask(world, query, mark=lower, outcome="stale", times=20)
    assert retrieval_scan().penalties >= 1
    assert LearningPromotion.objects.filter(
        status="candidate", subject_id=str(corpus[lower].pk), proposed_learning__reason="stale"
    ).exists()
