"""Drop the foreign key from ``ai_retrieval_weights.promotion_id`` into the promotion ledger.

0002 created that column as a foreign key to ``promotions.LearningPromotion`` until it was edited
to create a plain UUID column (retrieval must not depend on promotions). A database migrated
before the edit still has the constraint: left in place it would refuse deleting a promotion and
writing a weight for an id the ledger does not hold. Fresh databases have no such constraint, so
this finds nothing to do there, and running it again does nothing either.
"""

from __future__ import annotations

from django.db import migrations

TABLE = "ai_retrieval_weights"
COLUMN = "promotion_id"


def _foreign_keys(schema_editor) -> list[str]:
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, TABLE)
    return [name for name, info in constraints.items() if info["foreign_key"] and info["columns"] == [COLUMN]]


def drop_promotion_foreign_key(apps, schema_editor) -> None:
    names = _foreign_keys(schema_editor)
    if not names:
        return
    model = apps.get_model("retrieval", "RetrievalWeight")
    if schema_editor.connection.vendor == "sqlite":
        # SQLite cannot drop a constraint: rebuild the table from the historical model, whose
        # promotion_id is a plain UUID column (the same rebuild Django's own AlterField does there).
        schema_editor._remake_table(model)
        return
    for name in names:
        schema_editor.execute(schema_editor._delete_fk_sql(model, name))


class Migration(migrations.Migration):
    dependencies = [("retrieval", "0002_weights")]

    operations = [migrations.RunPython(drop_promotion_foreign_key, migrations.RunPython.noop)]
