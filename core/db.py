"""Database helpers every app shares."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from django.db import OperationalError, connection, transaction

T = TypeVar("T")
# Rows per INSERT where every value is a parameter (SQLite allows 32,766 parameters a statement).
PARAMETERS_PER_STATEMENT = 30_000
ARRAY_ROWS = 50_000  # rows per INSERT on PostgreSQL, one array parameter per column

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


def rows_insert(
    *, table: str, columns: Sequence[str], types: Sequence[str], rows: Sequence[Sequence[Any]], suffix: str = ""
) -> None:
    """INSERT ``rows`` into ``table`` in few statements. On PostgreSQL each column's values go as one
    array parameter (``unnest``): the statement's text stays short, where a VALUES list of thousands of
    placeholders cost the driver more time parsing it than the server took to run it. Elsewhere, a
    VALUES list as long as the parameter limit allows. ``types`` are the columns' PostgreSQL types,
    ``suffix`` follows the rows (``ON CONFLICT ...``); names are the caller's constants, values parameters."""
    names = ", ".join(columns)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            arrays = ", ".join(f"%s::{kind}[]" for kind in types)
            for start in range(0, len(rows), ARRAY_ROWS):
                batch = rows[start : start + ARRAY_ROWS]
                cursor.execute(
                    f"INSERT INTO {table} ({names}) SELECT * FROM unnest({arrays}) {suffix}",  # noqa: S608
                    [list(column) for column in zip(*batch, strict=True)],
                )
            return
        per = max(1, PARAMETERS_PER_STATEMENT // len(columns))
        row_sql = f"({', '.join(['%s'] * len(columns))})"
        for start in range(0, len(rows), per):
            batch = rows[start : start + per]
            cursor.execute(
                f"INSERT INTO {table} ({names}) VALUES {', '.join([row_sql] * len(batch))} {suffix}",  # noqa: S608
                [value for row in batch for value in row],
            )
