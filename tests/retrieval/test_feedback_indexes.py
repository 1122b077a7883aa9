"""The indexes of the search results table (ai_retrieval_feedback), which every search writes k rows into."""

from __future__ import annotations

from django.db import connection


def test_each_foreign_key_is_indexed_once_as_a_leading_column(db):
    """A single-column index of trace, user or chunk only cost every search's writes: an index already
    leads with each (retrieval 0014), which keeps their lookups and cascading deletes indexed."""
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, "ai_retrieval_feedback")
    indexes = [info["columns"] for info in constraints.values() if info["index"] or info["unique"]]
    for column in ("trace_id", "user_id", "chunk_id"):
        assert [column] not in indexes
        assert any(columns[:1] == [column] for columns in indexes), column


def test_the_rollup_triggers_survive_the_index_changes(db):
    """Dropping those indexes must not rebuild the table (SQLite's AlterField would, taking its triggers)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT tgname FROM pg_trigger WHERE tgrelid = 'ai_retrieval_feedback'::regclass AND NOT tgisinternal"
            )
        else:
            cursor.execute(
                "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'ai_retrieval_feedback'"
            )
        names = {row[0] for row in cursor.fetchall()}
    assert {"retrieval_fb_rollup_outside_delete", "retrieval_fb_rollup_outside_detach"} <= names
