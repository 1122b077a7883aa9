"""Migration operations every app shares."""

from __future__ import annotations

from django.db import migrations


class VendorOnlySQL(migrations.RunSQL):
    """SQL that only one database vendor runs (``vendor``, as ``connection.vendor`` names it)."""

    vendor = ""

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == self.vendor:
            super().database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == self.vendor:
            super().database_backwards(app_label, schema_editor, from_state, to_state)


class PostgresOnlySQL(VendorOnlySQL):
    """SQL that only PostgreSQL runs (pgvector columns and indexes, BRIN indexes); SQLite, the embedded
    default, skips it."""

    vendor = "postgresql"


class SqliteOnlySQL(VendorOnlySQL):
    """SQL that only SQLite runs (its dialect of what a PostgresOnlySQL beside it does)."""

    vendor = "sqlite"


def created_at_brin(table: str) -> PostgresOnlySQL:
    """A BRIN index on ``table.created_at`` (named ``<table>_created_brin``), PostgreSQL only. For
    append-mostly tables whose rows arrive in created_at order: the index stays a few pages however
    large the table grows, and a date window skips the older blocks."""
    name = f"{table}_created_brin"
    return PostgresOnlySQL(
        f"CREATE INDEX IF NOT EXISTS {name} ON {table} USING brin (created_at)",
        f"DROP INDEX IF EXISTS {name}",
        elidable=False,
    )
