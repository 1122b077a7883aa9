"""A transaction that PostgreSQL aborted to break a deadlock is run again; nothing else is."""

from __future__ import annotations

import pytest
from django.db import OperationalError, connection, transaction
from django.test.utils import CaptureQueriesContext

from accounts.models import Project
from core.db import PARAMETERS_PER_STATEMENT, atomic_retrying_deadlocks, rows_insert
from retrieval.models import TraceRollup
from retrieval.rollups import COUNTS


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
    """On PostgreSQL one statement of array parameters (its text a few hundred characters, whatever
    the rows); elsewhere VALUES lists within the parameter limit. NULLs (a column all NULL too) and
    an ON CONFLICT suffix pass through."""
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
