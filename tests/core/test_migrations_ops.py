"""core.migrations_ops: SQL only PostgreSQL runs, and the BRIN indexes on created_at built with it."""

from __future__ import annotations

import pytest
from django.db import connection

from core.migrations_ops import created_at_brin

BRIN_TABLES = ("ai_feedback_events", "agent_learning_usages", "ai_retrieval_feedback")


@pytest.mark.django_db
def test_the_created_at_brin_indexes_exist_on_postgresql_only():
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT tablename, indexdef FROM pg_indexes WHERE indexname = ANY(%s)",
                [[f"{t}_created_brin" for t in BRIN_TABLES]],
            )
            found = dict(cursor.fetchall())
            assert set(found) == set(BRIN_TABLES)
            assert all("USING brin (created_at)" in definition for definition in found.values())
        else:
            names = {index["name"] for t in BRIN_TABLES for index in _sqlite_indexes(cursor, t)}
            assert not any(name.endswith("_created_brin") for name in names)


def _sqlite_indexes(cursor, table: str) -> list[dict]:
    return [{"name": name} for _, name, *_ in cursor.execute(f"PRAGMA index_list({table})").fetchall()]


def test_the_operation_names_its_index_after_the_table():
    operation = created_at_brin("some_table")
    assert operation.sql == "CREATE INDEX IF NOT EXISTS some_table_created_brin ON some_table USING brin (created_at)"
    assert operation.reverse_sql == "DROP INDEX IF EXISTS some_table_created_brin"
    assert not operation.elidable
