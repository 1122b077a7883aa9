"""Database helpers every app shares."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from django.db import OperationalError, connection, transaction

T = TypeVar("T")

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
