"""Drop the foreign keys from ``ai_memories.promotion_id`` and ``agent_learnings.promotion_id``
into the promotion ledger.

0003 created them as foreign keys to ``promotions.LearningPromotion``; it was edited to create
plain UUID columns of the same name (learning must not depend on promotions). A database
migrated before that edit still has the constraints: this removes them and keeps the data. On a
database created after the edit there is nothing to drop, so this does nothing.

PostgreSQL (and any backend that can drop a constraint): ``ALTER TABLE ... DROP CONSTRAINT``.
SQLite cannot drop a constraint: the table is rebuilt from the historical model, which has no
reference (the schema editor's own way of altering a SQLite table).
"""

from django.db import migrations

TABLES = ("Memory", "AgentLearning")


def _ledger_foreign_keys(connection, table):
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, table)
    return [
        name
        for name, constraint in constraints.items()
        if constraint["foreign_key"] and constraint["columns"] == ["promotion_id"]
    ]


def drop_ledger_foreign_keys(apps, schema_editor):
    connection = schema_editor.connection
    for model_name in TABLES:
        model = apps.get_model("learning", model_name)
        stale = _ledger_foreign_keys(connection, model._meta.db_table)
        if not stale:
            continue
        if connection.vendor == "sqlite":
            schema_editor._remake_table(model)
            continue
        for name in stale:
            schema_editor.execute(schema_editor._delete_constraint_sql(schema_editor.sql_delete_fk, model, name))


class Migration(migrations.Migration):
    dependencies = [
        ("learning", "0003_taste_agent_learnings_shared_memories"),
    ]

    # Not recreated on the way back: the model has no foreign key to restore.
    operations = [migrations.RunPython(drop_ledger_foreign_keys, migrations.RunPython.noop)]
