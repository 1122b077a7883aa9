"""An index on ai_retrieval_feedback (chunk_id, project_id, id) for the retrieval scan's anchors.

The scan picks each proposed weight's anchor queries among a chunk's newest results in its project
(promotions/scanners/retrieval.py, ``_anchors``). On PostgreSQL it reads them per (chunk, project)
newest first with a LIMIT, which walks this index backwards and stops, instead of sorting every
result of the chunks (bench/search_scan.py, 10M trace rows: 57-71 s -> 25 s for the first scan's
anchors; this index took 10 s to build there).

On PostgreSQL the index is built CONCURRENTLY: the table takes a row for every search result, and a
plain CREATE INDEX would hold off those writes for the whole build. That cannot run inside a
transaction, hence ``atomic = False``; a build that failed half-way leaves an invalid index of this
name, which the DROP before it removes when the migration is run again.
"""

from django.db import migrations, models

from core.migrations_ops import PostgresOnlySQL, SqliteOnlySQL

NAME = "retrieval_fb_chunk_project_id"
COLUMNS = "ai_retrieval_feedback (chunk_id, project_id, id)"


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("retrieval", "0012_rollup_fillfactor")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddIndex(
                    model_name="retrievalfeedback",
                    index=models.Index(fields=["chunk", "project", "id"], name=NAME),
                ),
            ],
            database_operations=[
                PostgresOnlySQL(f"DROP INDEX CONCURRENTLY IF EXISTS {NAME}", migrations.RunSQL.noop, elidable=False),
                PostgresOnlySQL(
                    f"CREATE INDEX CONCURRENTLY {NAME} ON {COLUMNS}",
                    f"DROP INDEX CONCURRENTLY IF EXISTS {NAME}",
                    elidable=False,
                ),
                SqliteOnlySQL(f"CREATE INDEX {NAME} ON {COLUMNS}", f"DROP INDEX {NAME}", elidable=False),
            ],
        ),
    ]
