"""Trace rollups: the incremental refresh always equals a count from scratch, through marks, changed
marks, new searches, erasure, deleted chunks, the window moving on and ids committed out of order."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from core.embeddings import get_embedder
from promotions.erasure import user_erase
from retrieval import rollups
from retrieval.models import Document, RetrievalFeedback, RetrievalQuery, TraceRollup, TraceRollupMark
from retrieval.rollups import COUNTS, neighbourhood, trace_rollups_changed, trace_rollups_full, trace_rollups_refresh
from retrieval.services import DocumentInput, ResultFeedback, documents_import, retrieval_feedback_record, search

DOCS = {
    "flutter": "Flutter of aircraft wings: aeroelastic coupling of bending and torsion.",
    "flutter-tests": "Wind tunnel tests of wing flutter with control surfaces.",
    "buckling": "Buckling of thin cylindrical shells under axial compression.",
    "heating": "Aerodynamic heating of blunt bodies in hypersonic flow.",
}
QUERIES = ["wind tunnel flutter experiments", "flutter experiments in a wind tunnel", "buckling of shells"]


@pytest.fixture
def corpus(world):
    get_embedder()
    documents_import(actor=world.actor("service"), items=[DocumentInput(id=k, raw_text=v) for k, v in DOCS.items()])


def refresh(**kwargs):
    return trace_rollups_refresh(days=90, settle_seconds=kwargs.pop("settle_seconds", 300), **kwargs)


def stored() -> dict[str, list]:
    return {
        r.ident: [r.chunk_id, r.project_id, r.terms, r.rank, r.explored, r.shown, *(getattr(r, c) for c in COUNTS)]
        for r in TraceRollup.objects.all()
    }


def assert_in_step():
    assert stored() == trace_rollups_full(days=90)


def searches(world, role, n=2):
    return [search(actor=world.actor(role), query=QUERIES[i % len(QUERIES)], k=4) for i in range(n)]


def mark(world, role, result, position, **fields):
    chunk_id = result.hits[position].chunk.chunk_id
    retrieval_feedback_record(
        actor=world.actor(role), trace_id=result.trace_id, items=[ResultFeedback(chunk_id=chunk_id, **fields)]
    )


def test_incremental_equals_full_through_marks_new_searches_and_changed_marks(world, corpus):
    first = searches(world, "owner", 3) + searches(world, "other", 3)
    report = refresh()
    assert report.new_rows == 0  # no feedback yet: no evidence
    assert not TraceRollup.objects.exists()
    assert_in_step()

    mark(world, "owner", first[0], 1, cited=True, used_in_answer=True)  # the rest of that search: skipped
    mark(world, "other", first[3], 0, outcome="helpful")
    retrieval_feedback_record(actor=world.actor("owner"), trace_id=first[1].trace_id, items=[])  # nothing used
    later = searches(world, "member", 2)
    report = refresh()
    assert (report.rechecked_rows, report.new_rows) == (12, 0)  # the new searches got no feedback
    assert_in_step()
    assert sum(r.shown for r in TraceRollup.objects.all()) == 12
    assert sum(r.skipped for r in TraceRollup.objects.all()) == 3 + 3 + 4

    mark(world, "other", first[3], 0, outcome="unhelpful")  # a mark changed
    mark(world, "member", later[0], 2, outcome="stale")
    retrieval_feedback_record(actor=world.actor("owner"), trace_id=first[2].trace_id, items=[], answer_rating="down")
    refresh()
    assert_in_step()
    assert sum(r.unhelpful for r in TraceRollup.objects.all()) == 1
    assert sum(r.helpful for r in TraceRollup.objects.all()) == 0

    before = stored()
    assert refresh().rollups_written == 0  # nothing changed: nothing written, nothing counted twice
    assert stored() == before
    refresh(rebuild=True)
    assert stored() == before


def test_erasure_and_deleted_chunks_leave_the_rollups_in_step(world, corpus):
    owned = searches(world, "owner", 3)
    others = searches(world, "other", 2)
    mark(world, "owner", owned[0], 1, cited=True)
    mark(world, "other", others[0], 0, cited=True)
    mark(world, "other", others[1], 0, outcome="helpful")
    refresh()
    user_erase(actor=world.actor("admin"), user=world.owner)
    assert not RetrievalFeedback.objects.filter(trace_id__in=[r.trace_id for r in owned]).exists()
    assert_in_step()
    assert sum(r.shown for r in TraceRollup.objects.all()) == 8  # the other user's two searches
    assert (sum(r.clicked for r in TraceRollup.objects.all()), sum(r.helpful for r in TraceRollup.objects.all())) == (
        1,
        1,
    )

    Document.objects.filter(pk="buckling").delete()  # its chunk, traces and rollups go together
    assert_in_step()
    refresh()
    assert_in_step()


def test_rows_leaving_the_window_are_taken_back(world, corpus):
    old = searches(world, "owner", 2)
    mark(world, "owner", old[0], 0, cited=True)
    mark(world, "owner", old[1], 0, cited=True)
    later = searches(world, "other", 2)
    mark(world, "other", later[0], 0, cited=True)
    mark(world, "other", later[1], 1, cited=True)
    refresh()
    # The first searches are now 100 days old (ids grow with time: they are the lowest).
    RetrievalFeedback.objects.filter(trace_id__in=[r.trace_id for r in old]).update(
        created_at=timezone.now() - timedelta(days=100)
    )
    report = refresh()
    assert report.expired_rows == 8
    assert_in_step()
    assert sum(r.shown for r in TraceRollup.objects.all()) == 8


def test_a_row_committed_after_a_larger_id_was_counted_is_still_counted(world, corpus):
    vector = get_embedder().embed_one(QUERIES[0])
    result = searches(world, "owner", 1)[0]
    top = max(RetrievalFeedback.objects.values_list("id", flat=True))
    now = timezone.now()
    trace = RetrievalQuery.objects.create(
        user=world.owner, query_text=QUERIES[0], embedding=vector, k=4, feedback_at=now
    )
    hit = result.hits[0]
    late = {"trace": trace, "query_text": QUERIES[0], "document_id": hit.chunk.document_id, "rank": 1, "score": 0.5}
    RetrievalFeedback.objects.create(id=top + 100, chunk=hit.chunk, **late)
    refresh()
    # A search whose row got a smaller id commits only now.
    other = RetrievalQuery.objects.create(
        user=world.owner, query_text=QUERIES[0], embedding=vector, k=4, feedback_at=now
    )
    RetrievalFeedback.objects.create(id=top + 50, chunk=hit.chunk, **{**late, "trace": other})
    refresh()
    assert_in_step()
    assert sum(r.shown for r in TraceRollup.objects.all()) == 2


def test_only_searches_with_feedback_are_counted_and_recorded(world, corpus):
    results = searches(world, "owner", 3)
    refresh(settle_seconds=0)
    assert not TraceRollupMark.objects.exists()
    retrieval_feedback_record(actor=world.actor("owner"), trace_id=results[0].trace_id, items=[])  # none used
    refresh(settle_seconds=0)
    assert TraceRollupMark.objects.count() == 4  # each counted result, with its category
    assert sum(r.skipped for r in TraceRollup.objects.all()) == 4
    assert_in_step()


def test_traces_deleted_outside_erasure_are_noticed_and_the_rollups_rebuilt(world, corpus):
    results = searches(world, "owner", 3)
    for result in results:
        mark(world, "owner", result, 0, cited=True)
    refresh()
    RetrievalQuery.objects.filter(pk=results[0].trace_id).delete()  # not through trace_rollups_forget
    assert refresh().rebuilt
    assert_in_step()
    assert sum(r.shown for r in TraceRollup.objects.all()) == 8
    assert not refresh().rebuilt


def neighbourhoods_of(*results) -> set:
    rows = RetrievalFeedback.objects.filter(trace_id__in=[r.trace_id for r in results])
    return {(project_id, neighbourhood(text)) for project_id, text in rows.values_list("project_id", "query_text")}


def test_each_generation_names_the_neighbourhoods_it_changed(world, corpus):
    first = searches(world, "owner", 3)
    mark(world, "owner", first[0], 1, cited=True)
    start = refresh().generation
    assert trace_rollups_changed(since=0) == (start, None)  # a reader that has judged nothing: everything

    mark(world, "owner", first[2], 0, cited=True)  # a search of another neighbourhood gets feedback
    report = refresh()
    assert trace_rollups_changed(since=start) == (report.generation, neighbourhoods_of(first[2]))
    assert neighbourhoods_of(first[2]) != neighbourhoods_of(first[0])
    assert refresh().generation == report.generation  # nothing new: no new generation
    assert trace_rollups_changed(since=report.generation) == (report.generation, set())

    # The window moves on: the first search (the lowest ids) is now 100 days old.
    RetrievalFeedback.objects.filter(trace_id=first[0].trace_id).update(created_at=timezone.now() - timedelta(days=100))
    moved = refresh()
    assert moved.expired_rows == 4
    assert trace_rollups_changed(since=report.generation) == (moved.generation, neighbourhoods_of(first[0]))
    assert trace_rollups_changed(since=start)[1] == neighbourhoods_of(first[0], first[2])


def test_erasure_names_its_neighbourhoods_and_deleted_passages_reset(world, corpus):
    owned = searches(world, "owner", 1)
    others = searches(world, "other", 3)
    mark(world, "owner", owned[0], 0, cited=True)
    mark(world, "other", others[2], 0, cited=True)
    start = refresh().generation
    erased = neighbourhoods_of(owned[0])
    user_erase(actor=world.actor("admin"), user=world.owner)
    generation, changed = trace_rollups_changed(since=start)
    assert (generation, changed) == (start + 1, erased)
    report = refresh()
    # The erasure deleted trace rows: this refresh checks the rollups against the mark rows, finds
    # them in step (the erasure took its rows out) and resets nothing.
    assert report.checked
    assert not report.rebuilt
    assert trace_rollups_changed(since=generation) == (generation, set())
    assert not refresh().checked  # nothing deleted since: no check

    Document.objects.filter(pk="buckling").delete()  # its passage's rollups go with it
    report = refresh()
    assert report.checked
    assert not report.rebuilt
    assert trace_rollups_changed(since=generation) == (report.generation, None)  # which neighbourhoods: unknown
    assert_in_step()


def test_the_check_against_the_mark_rows_runs_only_after_trace_rows_were_deleted(world, corpus):
    results = searches(world, "owner", 3)
    for result in results:
        mark(world, "owner", result, 0, cited=True)
    refresh()  # (a database just migrated is checked once)
    assert not refresh().checked
    mark(world, "owner", results[1], 1, outcome="helpful")
    assert not refresh().checked
    RetrievalFeedback.objects.filter(trace_id=results[2].trace_id, rank=4).delete()  # not through forget
    report = refresh()
    assert report.checked
    assert report.rebuilt
    assert_in_step()
    assert not refresh().checked


def test_the_recount_reads_the_marked_searches_rows_without_joining_the_traces(world, corpus):
    """At ten million traces a join (or the traces' default ordering) in the re-count made PostgreSQL
    hash the whole trace table for every batch of searches: 0.4 s a batch. The rows are read alone
    and the searches only by primary key; on PostgreSQL reading, re-marking and grouping the rows is
    one statement a batch, which looks a row's mark up by key (a join hashed every mark row)."""
    results = searches(world, "owner", 3)
    refresh()
    mark(world, "owner", results[0], 1, cited=True)
    mark(world, "owner", results[1], 0, outcome="helpful")
    with CaptureQueriesContext(connection) as captured:
        report = refresh()
    assert report.rechecked_rows == 8
    table = RetrievalFeedback._meta.db_table
    reads = [q["sql"] for q in captured if f'"{table}"."trace_id" IN' in q["sql"]]
    assert reads
    for sql in reads:
        assert "ORDER BY" not in sql
        if connection.vendor == "postgresql":
            assert sql.startswith("WITH found AS MATERIALIZED")
            assert sql.count(RetrievalQuery._meta.db_table) == 1
            assert "t.id = ANY(" in sql
            assert "JOIN" not in sql
        else:
            assert RetrievalQuery._meta.db_table not in sql
    # Which rows were marked since the last refresh: read alone too (the default ordering joined the searches).
    marked = [q["sql"] for q in captured if q["sql"].startswith("SELECT") and f'"{table}"."updated_at" >=' in q["sql"]]
    assert marked
    for sql in marked:
        assert RetrievalQuery._meta.db_table not in sql
    assert_in_step()


@pytest.mark.skipif(connection.vendor != "postgresql", reason="a PostgreSQL storage parameter")
def test_rollup_pages_keep_room_for_their_rows_updated_in_place(world, corpus):
    """A refresh updates tens of thousands of rollups' counts: with room left on each page (fillfactor
    70) PostgreSQL updates a row on its page without touching the table's indexes (a HOT update),
    where on full pages each update wrote a new entry into every index. The storage parameter is what
    this checks; a handful of rows fit on near-empty pages at any fillfactor, so ``hot == updated`` below
    only confirms that the refresh's updates leave the indexed columns alone."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = %s", [TraceRollup._meta.db_table])
        assert "fillfactor=70" in (cursor.fetchone()[0] or [])
    results = searches(world, "owner", 3)
    refresh()
    mark(world, "owner", results[0], 1, cited=True)
    refresh()  # the search's rows counted: new rollups
    mark(world, "owner", results[0], 2, outcome="helpful")
    refresh()  # counted again: the same rollups' counts change
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables WHERE relname = %s",
            [TraceRollup._meta.db_table],
        )
        updated, hot = cursor.fetchone()
    assert updated > 0
    assert hot == updated
    assert_in_step()


def test_a_refresh_with_nothing_new_to_count_records_no_mark_rows(world, corpus):
    """The rows not counted yet are read once: on PostgreSQL one statement reads, records and groups
    them; on SQLite, when none is counted, no second read inserts mark rows."""
    results = searches(world, "owner", 2)
    mark(world, "owner", results[0], 1, cited=True)
    refresh()
    searches(world, "member", 2)  # new searches without feedback: nothing to count
    with CaptureQueriesContext(connection) as captured:
        report = refresh()
    assert report.new_rows == 0
    table = TraceRollupMark._meta.db_table
    # (the re-count of the search marked within the settling margin writes its own, from its read)
    reads = [q["sql"] for q in captured if f"INSERT INTO {table}" in q["sql"] and "counted" in q["sql"]]
    if connection.vendor == "postgresql":
        assert len(reads) == 1
        assert reads[0].startswith("WITH counted AS MATERIALIZED")
        assert "ORDER BY" not in reads[0]  # the rows' default ordering would sort every counted row
    else:
        assert not reads
    assert_in_step()


@pytest.mark.django_db(transaction=True)
def test_a_search_marked_while_new_rows_are_counted_is_counted_and_recorded_alike(world, corpus, monkeypatch):
    """What the refresh counts as new and the mark rows it records are read in one snapshot: a search
    that gets its first feedback (from another connection) in between is either in both or in neither,
    so the next refresh can take back exactly what was counted."""
    if connection.vendor != "postgresql":
        pytest.skip("concurrent writers are PostgreSQL's (SQLite serialises them); the PostgreSQL run covers this")
    counted = searches(world, "owner", 1)
    late = searches(world, "other", 1)
    mark(world, "owner", counted[0], 0, cited=True)
    add = rollups._Deltas.add
    marked_meanwhile: list[bool] = []

    def add_then_mark_elsewhere(self, grouped, *, category_field, sign):
        n = add(self, grouped, category_field=category_field, sign=sign)
        if sign > 0 and not marked_meanwhile:
            marked_meanwhile.append(True)

            def elsewhere():
                try:
                    mark(world, "other", late[0], 1, outcome="helpful")
                finally:
                    connection.close()

            thread = threading.Thread(target=elsewhere)
            thread.start()
            thread.join()
        return n

    monkeypatch.setattr(rollups._Deltas, "add", add_then_mark_elsewhere)
    refresh(settle_seconds=0)
    monkeypatch.undo()
    assert marked_meanwhile
    assert RetrievalQuery.objects.get(pk=late[0].trace_id).feedback_at is not None  # the other connection's mark
    assert TraceRollupMark.objects.count() == sum(r.shown for r in TraceRollup.objects.all()) == 4
    refresh(settle_seconds=0)
    assert_in_step()
    assert sum(r.shown for r in TraceRollup.objects.all()) == 8
    assert sum(r.helpful for r in TraceRollup.objects.all()) == 1


def _mark_versions() -> dict[int, object]:
    """Each mark row's version: PostgreSQL's xmin (a row rewritten gets a new one); on SQLite its category
    (the writes themselves are caught where they are made, see below)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT feedback_id, xmin::text FROM {TraceRollupMark._meta.db_table}")  # noqa: S608
            return dict(cursor.fetchall())
    return dict(TraceRollupMark.objects.values_list("feedback_id", "category"))


def test_a_search_re_counted_unchanged_rewrites_no_mark_row(world, corpus, monkeypatch):
    """Every refresh re-counts the searches marked within the settling margin before the last one (a
    late commit may have been missed); a row whose category has not changed keeps its mark row as it is."""
    results = searches(world, "owner", 2)
    mark(world, "owner", results[0], 1, cited=True, used_in_answer=True)
    refresh()
    before = _mark_versions()
    assert len(before) == 4
    written = []
    real = rollups.rows_insert
    monkeypatch.setattr(rollups, "rows_insert", lambda **kw: written.extend(kw["rows"]) or real(**kw))
    report = refresh()  # within the margin: the marked search is read and counted again
    assert report.rechecked_rows == 4
    assert report.rollups_written == 0
    assert _mark_versions() == before
    assert written == []  # SQLite's path writes from Python: nothing to write
    assert_in_step()

    mark(world, "owner", results[0], 1, outcome="unhelpful")  # one row changes category
    refresh()
    after = _mark_versions()
    changed = {k for k in after if after[k] != before[k]}
    assert len(changed) == 1
    assert_in_step()
