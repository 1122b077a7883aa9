"""Re-importing a document: unchanged passages keep their chunks (and the weights and traces on
them); the weights of changed or removed passages become orphaned, audited, and say so when acted on."""

from __future__ import annotations

import importlib
import re
from types import SimpleNamespace

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from core.text import digest
from feedback.models import FeedbackEvent
from promotions import services as promotion_services
from promotions.models import LearningPromotion
from promotions.scanners.retrieval import retrieval_scan
from retrieval.models import Chunk, Document, IndexGeneration, RetrievalFeedback, RetrievalQuery, RetrievalWeight
from retrieval.selectors import weights_for
from retrieval.services import (
    DocumentInput,
    ResultFeedback,
    StoredPassage,
    documents_import,
    passages_match,
    retrieval_feedback_record,
    search,
)
from tests.concurrency import at_once
from tests.promotions.conftest import promote

# Each paragraph is one passage at RETRIEVAL_CHUNK_CHARS = 100 (two never fit together).
A = "Flutter of aircraft wings couples bending and torsion at transonic speed."
B = "Laminar boundary layers on flat plates undergo transition under pressure gradients."
B2 = "Turbulent boundary layers on flat plates separate under adverse pressure gradients."
C = "Thin cylindrical shells buckle under axial compression well below the classical load."
D = "Blunt bodies in hypersonic flow suffer intense stagnation point heating."


@pytest.fixture(autouse=True)
def _short_passages(settings):
    settings.RETRIEVAL_CHUNK_CHARS = 100


def load(world, *paragraphs: str, doc: str = "doc", title: str = "Aerodynamics"):
    return documents_import(
        actor=world.actor("service"), items=[DocumentInput(id=doc, title=title, raw_text="\n\n".join(paragraphs))]
    )


def chunks(doc: str = "doc") -> list[tuple[int, str, str]]:
    """(pk, chunk_id, content) in position order."""
    return [
        (c.pk, c.chunk_id, c.content)
        for c in Chunk.objects.filter(document_id=doc).order_by("position").only("pk", "chunk_id", "content")
    ]


def by_content(doc: str = "doc") -> dict[str, int]:
    return {content: pk for pk, _, content in chunks(doc)}


def generation() -> int:
    return IndexGeneration.objects.get().generation


def apply_weight(world, chunk_pk: int, multiplier: float = 1.3) -> LearningPromotion:
    """A global weight on the chunk, proposed, approved and applied by the admin."""
    promotion, _ = promotion_services.promotion_propose(
        actor=world.actor("admin"),
        promotion_type="retrieval_weight",
        subject_type="chunk",
        subject_id=str(chunk_pk),
        proposed_learning={"chunk": chunk_pk, "scope": "global", "multiplier": multiplier, "reason": "helpful"},
    )
    return promote(world, promotion, "approve", "apply")


def trace_on(world, query: str) -> str:
    """A search by the member that shows every passage of the small corpus; the trace id."""
    return search(actor=world.actor("other"), query=query, k=10).trace_id


def weight_of(promotion: LearningPromotion) -> RetrievalWeight:
    return RetrievalWeight.objects.get(promotion_id=promotion.pk)


def act(world, promotion, action, role="admin"):
    return world.client(role).post(f"/api/v1/promotions/{promotion.pk}/{action}", {}, format="json")


# --- matching passages to stored chunks --------------------------------------------------------


def stored(*hashes: str) -> list[StoredPassage]:
    return [StoredPassage(pk=100 + i, position=i, content_hash=h, chunk_id=f"d#{i}") for i, h in enumerate(hashes)]


@pytest.mark.parametrize(
    ("old", "new", "kept", "gone"),
    [
        ("abc", "abc", {0: 100, 1: 101, 2: 102}, []),
        ("abc", "cab", {0: 102, 1: 100, 2: 101}, []),
        ("abc", "axc", {0: 100, 2: 102}, [101]),
        ("abc", "ac", {0: 100, 1: 102}, [101]),
        # duplicates: the k-th occurrence keeps the k-th stored one, in old position order
        ("aba", "aab", {0: 100, 1: 102, 2: 101}, []),
        ("aba", "ba", {0: 101, 1: 100}, [102]),
        ("aa", "aaa", {0: 100, 1: 101}, []),
    ],
)
def test_passages_match_by_content_in_order(old, new, kept, gone):
    matched, removed = passages_match(stored(*old), list(new))
    assert {position: row.pk for position, row in matched.items()} == kept
    assert sorted(row.pk for row in removed) == gone
    assert passages_match(list(reversed(stored(*old))), list(new))[0] == matched  # input order does not matter


# --- re-import ------------------------------------------------------------------------------------


def test_an_unchanged_text_keeps_every_chunk_weight_and_trace(world, embedder):
    load(world, A, B, C)
    before = chunks()
    promotion = apply_weight(world, by_content()[B])
    trace = trace_on(world, "boundary layer transition")
    shown = RetrievalFeedback.objects.filter(trace_id=trace).count()
    start = generation()
    report = load(world, A, B, C, title="Aerodynamics, second edition")  # the document changed, its text did not
    assert (report.updated, report.chunks_kept, report.chunks_removed, report.chunks_embedded) == (1, 3, 0, 0)
    assert chunks() == before
    assert generation() == start  # no vector changed: no re-index
    assert weight_of(promotion).status == "active"
    assert RetrievalFeedback.objects.filter(trace_id=trace, chunk__isnull=False).count() == shown


def test_reordered_passages_keep_their_ids_and_chunk_ids(world, embedder):
    load(world, A, B, C)
    before = {content: (pk, chunk_id) for pk, chunk_id, content in chunks()}
    promotion = apply_weight(world, before[C][0])
    start = generation()
    report = load(world, C, A, B)
    assert (report.chunks_kept, report.chunks_removed, report.chunks_embedded) == (3, 0, 0)
    assert [content for _, _, content in chunks()] == [C, A, B]
    # chunk_id names the passage, not the slot: a client's id from an earlier search still means this text
    assert {content: (pk, chunk_id) for pk, chunk_id, content in chunks()} == before
    assert generation() == start
    assert weight_of(promotion).chunk_id == before[C][0]
    assert weights_for(chunk_ids=[before[C][0]], project=None, query_vector=embedder.embed_one("x")) == {
        before[C][0]: 1.3
    }


def test_an_edited_passage_orphans_its_weight_with_an_audit_event_and_keeps_the_rest(world, embedder):
    load(world, A, B, C)
    ids = by_content()
    on_b, on_a = apply_weight(world, ids[B]), apply_weight(world, ids[A], 0.8)
    trace = trace_on(world, "boundary layer transition")
    start = generation()
    report = load(world, A, B2, C)
    assert (report.chunks_kept, report.chunks_removed, report.weights_orphaned, report.chunks_embedded) == (2, 1, 1, 1)
    after = by_content()
    assert (after[A], after[C]) == (ids[A], ids[C])
    assert B not in after
    assert after[B2] not in ids.values()
    assert generation() == start + 1  # a vector went and one came: the index is rebuilt
    orphan = weight_of(on_b)
    assert (orphan.status, orphan.chunk_id, orphan.document_id, orphan.multiplier) == ("orphaned", None, "doc", 1.3)
    assert orphan.content_hash == digest(B)  # the passage it was learned on
    assert weight_of(on_a).status == "active"
    assert weight_of(on_a).chunk_id == ids[A]
    event = FeedbackEvent.objects.get(event_type="retrieval_weight_orphaned")
    assert (event.subject_type, event.subject_id, event.source_record_id, event.signal) == (
        "promotion",
        str(on_b.pk),
        str(orphan.pk),
        "stale",
    )
    assert event.before_snapshot["weight_status"] == "active"
    assert event.before_snapshot["chunk"] == ids[B]
    assert event.after_snapshot == {
        "weight_status": "orphaned",
        "document": "doc",
        "document_content_hash": Document.objects.get().content_hash,
    }
    # the trace keeps every row it showed; the edited passage's row points at no chunk
    rows = dict(RetrievalFeedback.objects.filter(trace_id=trace).values_list("rank", "chunk_id"))
    assert len(rows) == 3
    assert list(rows.values()).count(None) == 1
    assert set(rows.values()) - {None} == {ids[A], ids[C]}
    # search applies the weight that survived, never the orphaned one
    hits = search(actor=world.actor("admin"), query="boundary layers", k=3).hits
    assert {hit.chunk.pk: hit.weight for hit in hits} == {ids[A]: 0.8, ids[C]: 1.0, after[B2]: 1.0}


def test_a_removed_passage_orphans_its_weight_and_a_new_passage_never_takes_a_kept_chunk_id(world, embedder):
    load(world, A, B, C)
    ids = {content: (pk, chunk_id) for pk, chunk_id, content in chunks()}
    promotion = apply_weight(world, ids[B][0])
    report = load(world, A, C, D)
    assert (report.chunks_kept, report.chunks_removed, report.weights_orphaned) == (2, 1, 1)
    assert weight_of(promotion).status == "orphaned"
    now = {content: (pk, chunk_id) for pk, chunk_id, content in chunks()}
    assert now[C] == ids[C] == (ids[C][0], "doc#2")  # moved to position 1, same row and chunk_id
    assert now[D][1] == "doc#2.1"  # position 2's usual id is held by the kept passage
    report = load(world, A)
    assert (report.chunks_kept, report.chunks_removed, report.weights_orphaned) == (1, 2, 0)


def test_duplicate_passages_are_matched_in_order(world, embedder):
    load(world, A, B, A)
    first_a, second_a = (pk for pk, _, content in chunks() if content == A)
    on_second = apply_weight(world, second_a)
    load(world, B, A)  # one A is gone: the first stored one is kept, the second's weight orphaned
    assert [pk for pk, _, content in chunks() if content == A] == [first_a]
    assert weight_of(on_second).status == "orphaned"
    load(world, A, A, B)
    pks = [pk for pk, _, _ in chunks()]
    assert pks[0] == first_a
    assert pks[1] not in (first_a, second_a)


def test_a_paused_weight_is_orphaned_too_and_superseded_ones_only_lose_their_chunk(world, embedder):
    load(world, A, B)
    old = apply_weight(world, by_content()[B], 1.2)
    new = apply_weight(world, by_content()[B], 1.4)  # supersedes the first weight
    promote(world, new, "pause")
    load(world, A, B2)
    assert (weight_of(old).status, weight_of(old).chunk_id) == ("superseded", None)
    assert weight_of(new).status == "orphaned"
    event = FeedbackEvent.objects.get(event_type="retrieval_weight_orphaned")
    assert (event.subject_id, event.before_snapshot["weight_status"]) == (str(new.pk), "paused")


# --- lifecycle actions on an orphaned weight ---------------------------------------------------------


def test_pause_and_resume_of_an_orphaned_weight_are_refused_naming_it(world, embedder):
    load(world, A, B)
    applied = apply_weight(world, by_content()[B])
    paused = apply_weight(world, by_content()[A])
    promote(world, paused, "pause")
    load(world, B2)
    for promotion, action in ((applied, "pause"), (paused, "resume")):
        response = act(world, promotion, action)
        assert response.status_code == 409, response.content
        message = response.json()["error"]["message"]
        assert f"Retrieval weight {weight_of(promotion).pk}" in message
        assert "orphaned" in message
        assert "Supersede" in message
        assert weight_of(promotion).status == "orphaned"
        failed = FeedbackEvent.objects.filter(event_type=f"promotion_{action}", subject_id=str(promotion.pk)).last()
        assert failed.signal == "failed"
        assert "orphaned" in failed.after_snapshot["error"]
    assert LearningPromotion.objects.get(pk=applied.pk).status == "applied"
    assert LearningPromotion.objects.get(pk=paused.pk).status == "paused"


def test_superseding_an_orphaned_weight_closes_the_promotion_and_says_the_weight_stays_orphaned(world, embedder):
    load(world, A, B)
    promotion = apply_weight(world, by_content()[B])
    load(world, A, B2)
    response = act(world, promotion, "supersede")
    assert response.status_code == 200
    assert response.json()["status"] == "superseded"
    assert weight_of(promotion).status == "orphaned"
    event = FeedbackEvent.objects.get(event_type="promotion_supersede")
    assert event.after_snapshot == {
        "status": "superseded",
        "weight": weight_of(promotion).pk,
        "weight_status": "orphaned",
        "promotion_path": "human_review",
        "rule": promotion.rule,
    }


def test_applying_a_promotion_whose_passage_changed_is_refused(world, embedder):
    load(world, A, B)
    promotion, _ = promotion_services.promotion_propose(
        actor=world.actor("admin"),
        promotion_type="retrieval_weight",
        subject_type="chunk",
        subject_id=str(by_content()[B]),
        proposed_learning={"chunk": by_content()[B], "scope": "global", "multiplier": 1.3},
    )
    promote(world, promotion, "approve")
    load(world, A, B2)
    response = act(world, promotion, "apply")
    assert response.status_code == 409
    assert f"Chunk {promotion.subject_id} no longer exists" in response.json()["error"]["message"]
    assert not RetrievalWeight.objects.exists()


def test_pausing_a_weight_whose_document_was_deleted_is_refused_not_a_silent_success(world, embedder):
    load(world, A, B)
    promotion = apply_weight(world, by_content()[B])
    Document.objects.all().delete()
    response = act(world, promotion, "pause")
    assert response.status_code == 409
    assert "no longer exists" in response.json()["error"]["message"]


@pytest.mark.parametrize(("role", "expected"), [("anonymous", 401), ("other", 403), ("service", 403), ("admin", 409)])
def test_only_admins_learn_a_weight_is_orphaned(world, embedder, role, expected):
    load(world, A, B)
    promotion = apply_weight(world, by_content()[B])
    load(world, A, B2)
    response = act(world, promotion, "pause", role=role)
    assert response.status_code == expected
    assert ("orphaned" in response.content.decode()) == (role == "admin")


def test_the_console_shows_the_refusal_and_the_orphaning_in_the_audit_trail(world, embedder):
    load(world, A, B)
    promotion = apply_weight(world, by_content()[B])
    load(world, A, B2)
    client = world.session_client("admin")
    page = client.post(f"/console/promotions/{promotion.pk}/pause", follow=True).content.decode()
    assert f"Retrieval weight {weight_of(promotion).pk} of this promotion is orphaned" in page
    assert "Retrieval weight orphaned by the system" in page  # the audit trail, in words
    assert "changed or was removed by a re-import: it applies to nothing and can only be superseded" in page
    assert "is orphaned." in page
    assert "This passage no longer exists: a re-import changed or removed it." in page
    # An orphaned weight can only be superseded: the page offers nothing else.
    assert re.findall(r'data-role="action-(\w+)"', page) == ["supersede"]
    response = world.client("admin").get(f"/api/v1/promotions/{promotion.pk}/preview")
    assert response.status_code == 409
    assert "no longer exists" in response.json()["error"]["message"]
    listing = client.get("/console/promotions/?status=applied").content.decode()
    assert '<div class="metric" data-role="orphaned-weights"><b>1</b>orphaned weights</div>' in listing
    assert "”</a> lost its passage to a re-import (the weight is orphaned)" in listing


# --- traces of removed passages ---------------------------------------------------------------


def test_marks_on_a_removed_passage_count_for_no_chunk_in_the_scan(world, embedder, settings):
    load(world, A, B, C)
    b = by_content()[B]
    traces = [trace_on(world, "boundary layer transition on flat plates") for _ in range(4)]
    for trace in traces:
        retrieval_feedback_record(
            actor=world.actor("other"),
            trace_id=trace,
            items=[ResultFeedback(chunk_id=Chunk.objects.get(pk=b).chunk_id, outcome="stale")],
        )
    load(world, A, B2, C)
    assert RetrievalFeedback.objects.filter(chunk__isnull=True, outcome="stale").count() == 4
    report = retrieval_scan()
    assert report.penalties == 0
    assert not LearningPromotion.objects.exists()
    # a trace with a detached result still takes marks on its other results, not on the removed one
    a_id = Chunk.objects.get(content=A).chunk_id
    rows = retrieval_feedback_record(
        actor=world.actor("other"), trace_id=traces[0], items=[ResultFeedback(chunk_id=a_id, cited=True)]
    )
    assert [row.chunk.chunk_id for row in rows] == [a_id]
    response = world.client("other").post(
        "/api/v1/retrieval/feedback",
        {"trace_id": traces[0], "results": [{"chunk_id": "doc#1", "cited": True}]},
        format="json",
    )
    # doc#1 is now B2's chunk_id (B2 was new at position 1): it was not in this trace
    assert response.status_code == 400
    assert "chunk_id" in response.json()["error"]["fields"]
    assert RetrievalQuery.objects.count() == 4


def test_the_import_api_reports_kept_removed_and_orphaned(world, embedder):
    load(world, A, B)
    apply_weight(world, by_content()[B])
    body = {"documents": [{"id": "doc", "raw_text": f"{A}\n\n{B2}"}]}
    response = world.client("admin").post("/api/v1/retrieval/documents", body, format="json")
    assert response.status_code == 200, response.content
    assert {k: response.json()[k] for k in ("updated", "chunks_kept", "chunks_removed", "weights_orphaned")} == {
        "updated": 1,
        "chunks_kept": 1,
        "chunks_removed": 1,
        "weights_orphaned": 1,
    }


# --- concurrency (PostgreSQL) -----------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_reimports_of_a_document_end_consistent(world, embedder):
    if connection.vendor != "postgresql":
        pytest.skip("concurrent writers are PostgreSQL's; the PostgreSQL run covers this")
    load(world, A, B, C)
    ids = by_content()
    on_b, on_a = apply_weight(world, ids[B]), apply_weight(world, ids[A])
    versions = iter([(A, B2, C), (C, A, D)])
    texts = [next(versions), next(versions)]
    calls = iter(texts)
    results = at_once(lambda: load(world, *next(calls)))
    assert not [r for r in results if isinstance(r, Exception)], results
    final = [content for _, _, content in chunks()]
    assert tuple(final) in texts  # one import's text, whole: positions 0..n-1, one chunk each
    assert Document.objects.get().raw_text == "\n\n".join(final)
    assert by_content()[A] == ids[A]
    assert weight_of(on_a).status == "active"
    assert weight_of(on_b).status == "orphaned"
    assert weight_of(on_b).chunk_id is None
    assert FeedbackEvent.objects.filter(event_type="retrieval_weight_orphaned").count() == 1
    assert sorted(Chunk.objects.filter(document_id="doc").values_list("position", flat=True)) == [0, 1, 2]


# --- the data migration -------------------------------------------------------------------------------


def test_the_migration_names_the_passage_of_existing_weights(world, embedder):
    migration = importlib.import_module("retrieval.migrations.0005_weights_and_traces_outlive_their_passage")
    load(world, A, B)
    promotion = apply_weight(world, by_content()[B])
    RetrievalWeight.objects.update(content_hash="")  # as weights were before the field
    state = MigrationExecutor(connection).loader.project_state(
        ("retrieval", "0005_weights_and_traces_outlive_their_passage")
    )
    migration.weights_name_their_passage(state.apps, SimpleNamespace(connection=connection))
    assert weight_of(promotion).content_hash == digest(B)
