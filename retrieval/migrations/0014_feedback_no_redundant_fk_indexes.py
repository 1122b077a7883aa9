"""ai_retrieval_feedback loses the single-column indexes of trace_id, user_id and chunk_id.

Every search writes k rows into this table, each into every index it has. An index already leads with
each of these columns (the unique (trace_id, chunk_id), (user_id, created_at), (chunk_id, outcome) and
(chunk_id, project_id, id)) and serves their lookups and the deletes that cascade through them, so the
single-column ones only cost writes.

The indexes are found by introspection and dropped by name rather than with AlterField: on SQLite an
AlterField rebuilds the table, which would drop its triggers (retrieval 0011). Going back creates them
again.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

TABLE = "ai_retrieval_feedback"
COLUMNS = ("trace_id", "user_id", "chunk_id")


def _single_column_indexes(schema_editor) -> list[str]:
    with schema_editor.connection.cursor() as cursor:
        constraints = schema_editor.connection.introspection.get_constraints(cursor, TABLE)
    return [
        name
        for name, info in constraints.items()
        if info["index"]
        and not info["unique"]
        and not info["primary_key"]
        and len(info["columns"]) == 1
        and info["columns"][0] in COLUMNS
    ]


def drop(apps, schema_editor) -> None:
    for name in _single_column_indexes(schema_editor):
        schema_editor.execute(f"DROP INDEX IF EXISTS {schema_editor.quote_name(name)}")


def create(apps, schema_editor) -> None:
    for column in COLUMNS:
        name = schema_editor.quote_name(f"{TABLE}_{column}_fk")
        schema_editor.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {TABLE} ({column})")


class Migration(migrations.Migration):
    dependencies = [
        ("retrieval", "0013_feedback_chunk_project_id"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="retrievalfeedback",
                    name="chunk",
                    field=models.ForeignKey(
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="retrieval.chunk",
                    ),
                ),
                migrations.AlterField(
                    model_name="retrievalfeedback",
                    name="trace",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="results",
                        to="retrieval.retrievalquery",
                    ),
                ),
                migrations.AlterField(
                    model_name="retrievalfeedback",
                    name="user",
                    field=models.ForeignKey(
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            database_operations=[migrations.RunPython(drop, create, elidable=False)],
        ),
    ]
