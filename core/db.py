"""Database helpers every app shares."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from django.conf import settings
from django.db import OperationalError, connection, models, transaction

T = TypeVar("T")
# Rows per INSERT where every value is a parameter (SQLite allows 32,766 parameters a statement).
PARAMETERS_PER_STATEMENT = 30_000

logger = logging.getLogger(__name__)


def _is_deadlock(exc: OperationalError) -> bool:
    # PostgreSQL's SQLSTATE 40P01; psycopg raises it as errors.DeadlockDetected (Django wraps it).
    return getattr(exc.__cause__, "sqlstate", None) == "40P01"


def atomic_retrying_deadlocks(write: Callable[[], T], *, attempts: int = 3) -> T:
    """Run ``write`` in its own transaction, again (up to ``attempts`` in all) when PostgreSQL
    broke a deadlock by aborting it: the documented remedy, since which of two transactions loses
    is the server's choice. Foreign-key checks that Django defers to COMMIT take row locks in the
    order rows were inserted, so a commit can deadlock with a concurrent writer of the referenced
    rows. Inside an outer transaction there is nothing to retry: the error propagates."""
    if connection.in_atomic_block:
        with transaction.atomic():
            return write()
    for attempt in range(1, attempts + 1):
        try:
            with transaction.atomic():
                return write()
        except OperationalError as exc:
            if attempt == attempts or not _is_deadlock(exc):
                raise
            logger.warning("deadlock broken by the database; retrying the transaction (attempt %s)", attempt)
    raise AssertionError("unreachable")


def commit_without_waiting_for_disk() -> None:
    """Let the current transaction's COMMIT return before its write-ahead log is flushed to disk
    (PostgreSQL's ``synchronous_commit = off``, for this transaction alone), when
    ``OBSERVATIONS_ASYNC_COMMIT`` allows it. For observations only (an observed message, a search
    trace): their request's answer is the context or the results, not a promise that the record
    survives. A crash of the database server (not of this service or its worker) can then lose the
    last such commits, at most three ``wal_writer_delay`` (0.6 s by default); it never corrupts data
    or keeps half a transaction. On the 2-core bench machine a one-row commit took 0.65 / 1.0 ms (p50 /
    p95) quiet and 4.0 / 8.0 ms while a test suite ran beside it, 0.4 / 0.7 and 0.1 / 0.2-1.4 ms without
    the wait: the disk is shared with everything else. Call it inside the transaction it applies to;
    inside a transaction some caller opened around it (other writes may share it) it does nothing."""
    if not connection.in_atomic_block:
        raise RuntimeError("commit_without_waiting_for_disk() applies to a transaction: call it inside atomic().")
    if connection.vendor != "postgresql" or not settings.OBSERVATIONS_ASYNC_COMMIT:
        return
    if len(connection.atomic_blocks) > 1:
        return
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL synchronous_commit TO OFF")


def rows_insert(
    *, table: str, columns: Sequence[str], types: Sequence[str], rows: Sequence[Sequence[Any]], suffix: str = ""
) -> None:
    """INSERT ``rows`` into ``table`` in few statements. On PostgreSQL the rows are streamed with
    ``COPY``, straight into ``table``, or, with a ``suffix`` (``ON CONFLICT ...``, which COPY lacks),
    into a temporary table of ``types`` that one ``INSERT ... SELECT`` then writes from: psycopg
    writes COPY rows in C, where array or VALUES parameters were quoted value by value in Python
    (bench/search_scan.py --part scan, 40,000 rollup upserts: 0.94-1.08 s as arrays, 0.44 s so).
    Elsewhere, a VALUES list as long as the parameter limit allows. ``types`` are the columns'
    PostgreSQL types; names are the caller's constants, values are data."""
    if not rows:
        return
    names = ", ".join(columns)
    if connection.vendor == "postgresql":
        with transaction.atomic(), connection.cursor() as cursor:
            target = table
            if suffix:
                target = "_rows_insert"
                declared = ", ".join(f"{column} {kind}" for column, kind in zip(columns, types, strict=True))
                cursor.execute(f"CREATE TEMPORARY TABLE {target} ({declared}) ON COMMIT DROP")
            with cursor.copy(f"COPY {target} ({names}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            if suffix:
                cursor.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM {target} {suffix}")  # noqa: S608
                cursor.execute(f"DROP TABLE {target}")
        return
    per = max(1, PARAMETERS_PER_STATEMENT // len(columns))
    row_sql = f"({', '.join(['%s'] * len(columns))})"
    with connection.cursor() as cursor:
        for start in range(0, len(rows), per):
            batch = rows[start : start + per]
            cursor.execute(
                f"INSERT INTO {table} ({names}) VALUES {', '.join([row_sql] * len(batch))} {suffix}",  # noqa: S608
                [value for row in batch for value in row],
            )


def insert_with_children(
    *,
    parent: models.Model,
    children: Sequence[models.Model],
    link: str,
    varying: Sequence[str],
) -> None:
    """INSERT ``parent`` and its ``children`` (unsaved instances whose ForeignKey ``link`` points at
    it) in one statement on PostgreSQL: one round trip, and none of Django's per-row work in
    ``bulk_create`` (search writes a trace and its k results on every request: a trace of 10
    results took 5.7 ms at p50 through save and bulk_create, 4.1 ms so, alternated in one
    process at 100,000 chunks). Children's fields named in ``varying`` travel as one array each;
    every other field is taken from the first child (equal in all of them, else ValueError before
    anything is written), defaults and ``auto_now`` included. Rows are inserted in the order given (foreign-key row
    locks are taken in that order). Elsewhere, or without children: ``save()`` and
    ``bulk_create``."""
    if connection.vendor != "postgresql" or not children:
        parent.save(force_insert=True)
        for child in children:
            setattr(child, link, parent)
        if children:
            type(children[0])._default_manager.bulk_create(children)
        return
    first = children[0]
    parent_fields = [f for f in parent._meta.concrete_fields if not f.generated]
    params = [f.get_db_prep_save(f.pre_save(parent, add=True), connection) for f in parent_fields]
    link_column = str(first._meta.get_field(link).column)  # type: ignore[union-attr]
    child_fields = [
        f
        for f in first._meta.concrete_fields
        if not f.generated and not (f.primary_key and f.db_returning) and f.column != link_column
    ]
    selected, arrays = [], []
    for f in child_fields:
        if f.name in varying:
            selected.append(f"r.{connection.ops.quote_name(str(f.column))}")
            arrays.append(f)
        else:
            selected.append(f"%s::{f.db_type(connection)}")
            value = f.pre_save(first, add=True)
            stamped = getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False)  # set here, for all
            if not stamped and any(getattr(child, f.attname) != value for child in children[1:]):
                raise ValueError(f"{f.name} differs between the children: name it in varying.")
            params.append(f.get_db_prep_save(value, connection))
    params.extend([f.get_db_prep_save(getattr(child, f.attname), connection) for child in children] for f in arrays)
    q = connection.ops.quote_name
    pk = q(str(parent._meta.pk.column))
    parent_columns = ", ".join(q(str(f.column)) for f in parent_fields)
    child_columns = ", ".join(q(str(f.column)) for f in child_fields)
    array_columns = ", ".join(q(str(f.column)) for f in arrays)
    # Table and column names and types are the models' own; every value is a parameter.
    sql = (
        f"WITH parent AS (INSERT INTO {q(parent._meta.db_table)} ({parent_columns}) "  # noqa: S608
        f"VALUES ({', '.join(['%s'] * len(parent_fields))}) RETURNING {pk}) "
        f"INSERT INTO {q(first._meta.db_table)} ({q(link_column)}, {child_columns}) "
        f"SELECT parent.{pk}, {', '.join(selected)} FROM parent, "
        f"unnest({', '.join(f'%s::{f.db_type(connection)}[]' for f in arrays)}) "
        f"WITH ORDINALITY AS r({array_columns}, n) ORDER BY r.n"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
    parent._state.adding = False
