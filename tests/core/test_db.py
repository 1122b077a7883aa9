"""A transaction that PostgreSQL aborted to break a deadlock is run again; nothing else is."""

from __future__ import annotations

import json

import numpy as np
import pytest
from django.db import OperationalError, connection, transaction
from django.test.utils import CaptureQueriesContext

from accounts.actors import Actor
from accounts.models import Project
from core.db import (
    PARAMETERS_PER_STATEMENT,
    atomic_retrying_deadlocks,
    commit_without_waiting_for_disk,
    insert_with_children,
    rows_insert,
)
from learning.services.messages import message_observe
from promotions.models import RetrievalScanJudgement
from retrieval.models import RetrievalFeedback, RetrievalQuery, TraceRollup
from retrieval.rollups import COUNTS
from retrieval.services import search
from tests.factories import UserFactory


class _SqlError(Exception):
    def __init__(self, sqlstate: str) -> None:
        super().__init__(sqlstate)
        self.sqlstate = sqlstate


def _failing(times: int, sqlstate: str):
    calls = []

    def write() -> int:
        calls.append(1)
        Project.objects.create(slug=f"p{len(calls)}", name="p")
        if len(calls) <= times:
            raise OperationalError("deadlock detected") from _SqlError(sqlstate)
        return len(calls)

    return write, calls


@pytest.mark.django_db(transaction=True)
def test_a_deadlock_is_retried_and_its_aborted_writes_are_gone():
    write, _calls = _failing(2, "40P01")
    assert atomic_retrying_deadlocks(write) == 3
    # The aborted attempts were rolled back: only the third attempt's row is left.
    assert list(Project.objects.values_list("slug", flat=True)) == ["p3"]


@pytest.mark.django_db(transaction=True)
def test_a_deadlock_past_the_attempts_is_raised():
    write, calls = _failing(3, "40P01")
    with pytest.raises(OperationalError):
        atomic_retrying_deadlocks(write, attempts=3)
    assert len(calls) == 3
    assert not Project.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_other_database_errors_are_not_retried():
    write, calls = _failing(1, "53300")  # too many connections
    with pytest.raises(OperationalError):
        atomic_retrying_deadlocks(write)
    assert len(calls) == 1


@pytest.mark.django_db(transaction=True)
def test_inside_an_outer_transaction_nothing_is_retried():
    write, calls = _failing(1, "40P01")
    with pytest.raises(OperationalError), transaction.atomic():
        atomic_retrying_deadlocks(write)
    assert len(calls) == 1


@pytest.mark.django_db
def test_rows_insert_writes_every_row_nulls_included_and_upserts_in_few_short_statements():
    """On PostgreSQL the rows go by COPY into a temporary table and one INSERT ... SELECT writes them
    with the suffix; elsewhere VALUES lists within the parameter limit. NULLs (a column all NULL too)
    and an ON CONFLICT suffix pass through, and nothing of the temporary table is left."""
    columns = ("ident", "chunk_id", "project_id", "terms", "rank", "explored", "shown", *COUNTS)
    types = ("varchar", "bigint", "bigint", "text", "smallint", "boolean", *["integer"] * (1 + len(COUNTS)))
    n = 3 * PARAMETERS_PER_STATEMENT // len(columns) + 7
    rows = [(f"r{i}", i + 1, None, f"flutter {i % 3}", i % 10 + 1, i % 2 == 0, 1, 1, *[0] * 6) for i in range(n)]
    table = TraceRollup._meta.db_table
    upsert = f"ON CONFLICT (ident) DO UPDATE SET shown = {table}.shown + excluded.shown"
    with CaptureQueriesContext(connection) as captured:
        rows_insert(table=table, columns=columns, types=types, rows=rows, suffix=upsert)
    inserts = [q["sql"] for q in captured if q["sql"].startswith("INSERT")]
    if connection.vendor == "postgresql":
        assert len(inserts) == 1
    else:
        assert len(inserts) == 4  # 15 parameters a row
    rows_insert(table=table, columns=columns, types=types, rows=rows[:5], suffix=upsert)
    stored = {r.ident: r for r in TraceRollup.objects.all()}
    assert len(stored) == n
    assert {r.project_id for r in stored.values()} == {None}
    assert (stored["r4"].chunk_id, stored["r4"].terms, stored["r4"].rank, stored["r4"].explored) == (
        5,
        "flutter 1",
        5,
        True,
    )
    assert [stored[f"r{i}"].shown for i in (0, 4, 5)] == [2, 2, 1]
    assert stored["r5"].explored is False
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_class WHERE relname = '_rows_insert'")
            assert cursor.fetchone()[0] == 0


@pytest.mark.django_db
def test_rows_insert_without_a_suffix_writes_json_text_and_empty_values_as_given():
    """Without a suffix PostgreSQL COPYs straight into the table (no INSERT at all): JSON text lands
    in a jsonb column, quotes, tabs, backslashes and line breaks in text survive."""
    table = RetrievalScanJudgement._meta.db_table
    columns = ("ident", "project_id", "terms", "groups", "already_first", "decided", "decisions")
    types = ("varchar", "bigint", "text", "integer", "integer", "integer", "jsonb")
    odd = 'tab\there "quoted" back\\slash\nline'
    rows = [
        ("a", None, odd, 3, 1, 1, json.dumps([{"chunk": 7, "note": odd}])),
        ("b", None, "", 0, 0, 0, "[]"),
    ]
    with CaptureQueriesContext(connection) as captured:
        rows_insert(table=table, columns=columns, types=types, rows=rows)
        rows_insert(table=table, columns=columns, types=types, rows=[])
    inserts = [q["sql"] for q in captured if q["sql"].startswith("INSERT")]
    assert len(inserts) == (0 if connection.vendor == "postgresql" else 1)
    stored = {r.ident: r for r in RetrievalScanJudgement.objects.all()}
    assert stored["a"].terms == odd
    assert stored["a"].decisions == [{"chunk": 7, "note": odd}]
    assert (stored["b"].terms, stored["b"].decisions, stored["b"].groups) == ("", [], 0)


@pytest.mark.django_db
def test_insert_with_children_refuses_children_that_differ_outside_varying():
    """A field not named in ``varying`` is written once for all children (PostgreSQL): children that
    differ there would be written wrong, so they are refused before anything is written."""
    if connection.vendor != "postgresql":
        pytest.skip("elsewhere each child is written as it is (bulk_create)")
    trace = RetrievalQuery(query_text="q", embedding=np.zeros(384, dtype=np.float32), k=2)
    children = [
        RetrievalFeedback(query_text=text, document_id="d", rank=rank, score=0.5) for rank, text in ((1, "q"), (2, "x"))
    ]
    with pytest.raises(ValueError, match="query_text differs"):
        insert_with_children(parent=trace, children=children, link="trace", varying=("rank",))
    assert not RetrievalQuery.objects.exists()


def _synchronous_commit() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_an_observation_commits_without_waiting_for_the_disk_in_its_own_transaction_only(settings):
    if connection.vendor != "postgresql":
        pytest.skip("synchronous_commit is PostgreSQL's; the PostgreSQL run covers this")
    settings.OBSERVATIONS_ASYNC_COMMIT = True
    with transaction.atomic():
        commit_without_waiting_for_disk()
        assert _synchronous_commit() == "off"
    assert _synchronous_commit() == "on"  # SET LOCAL: the connection's next transactions wait again
    with transaction.atomic():  # a caller's transaction, which other writes may share: left as it is
        with transaction.atomic():
            commit_without_waiting_for_disk()
        assert _synchronous_commit() == "on"
    settings.OBSERVATIONS_ASYNC_COMMIT = False
    with transaction.atomic():
        commit_without_waiting_for_disk()
        assert _synchronous_commit() == "on"


def test_committing_without_waiting_needs_a_transaction():
    with pytest.raises(RuntimeError, match="inside atomic"):
        commit_without_waiting_for_disk()


@pytest.mark.django_db(transaction=True)
def test_observed_messages_and_search_traces_are_the_writes_that_do_not_wait(settings):
    if connection.vendor != "postgresql":
        pytest.skip("synchronous_commit is PostgreSQL's; the PostgreSQL run covers this")
    settings.OBSERVATIONS_ASYNC_COMMIT = True
    user = UserFactory()

    def first_write_after_relaxing(captured: list[dict]) -> str:
        statements = [q["sql"] for q in captured]
        at = statements.index("SET LOCAL synchronous_commit TO OFF")
        return statements[at + 1].split("(")[0]

    with CaptureQueriesContext(connection) as observed:
        message_observe(user=user, session_id="s", content="I have two cats.")
    assert first_write_after_relaxing(observed.captured_queries).startswith('INSERT INTO "chat_history"')
    with CaptureQueriesContext(connection) as searched:
        search(actor=Actor(user=user), query="boundary layer transition", k=3)
    assert '"retrieval_queries"' in first_write_after_relaxing(searched.captured_queries)
