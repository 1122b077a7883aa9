"""A transaction that PostgreSQL aborted to break a deadlock is run again; nothing else is."""

from __future__ import annotations

import pytest
from django.db import OperationalError, transaction

from accounts.models import Project
from core.db import atomic_retrying_deadlocks


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
