"""document_chunks.project_id: each chunk carries its document's project, kept by the database.

A project member's search walks the HNSW index until it has enough chunks the member may read.
Before this column every candidate's visibility was a lookup of its document's project; now it is a
test on the row the index scan fetches anyway.

A copy that drifted from its document would show a project's passage to everyone (a NULL reads as
organisation-wide), so the database keeps it, whoever writes (the ORM, raw SQL, an older release
during a rolling deployment): a chunk takes its document's project when it is inserted or its
document or project column is written, and a document's new project is written to its chunks in
the same statement. Triggers on both backends (SQLite's cannot change NEW, so they update the row
after). Existing chunks get their value in 0016, after these triggers exist.
"""

from django.db import migrations, models

POSTGRESQL = """
CREATE OR REPLACE FUNCTION document_chunks_project() RETURNS trigger AS $$
BEGIN
    NEW.project_id := (SELECT project_id FROM document_metadata WHERE id = NEW.document_id);
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER document_chunks_project
    BEFORE INSERT OR UPDATE OF document_id, project_id ON document_chunks
    FOR EACH ROW EXECUTE FUNCTION document_chunks_project();

CREATE OR REPLACE FUNCTION document_metadata_project_to_chunks() RETURNS trigger AS $$
BEGIN
    UPDATE document_chunks SET project_id = NEW.project_id WHERE document_id = NEW.id;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER document_metadata_project_to_chunks
    AFTER UPDATE OF project_id ON document_metadata
    FOR EACH ROW WHEN (OLD.project_id IS DISTINCT FROM NEW.project_id)
    EXECUTE FUNCTION document_metadata_project_to_chunks();
"""

POSTGRESQL_DROP = """
DROP TRIGGER IF EXISTS document_metadata_project_to_chunks ON document_metadata;
DROP FUNCTION IF EXISTS document_metadata_project_to_chunks();
DROP TRIGGER IF EXISTS document_chunks_project ON document_chunks;
DROP FUNCTION IF EXISTS document_chunks_project();
"""

_OWN = "(SELECT project_id FROM document_metadata WHERE id = NEW.document_id)"
SQLITE = [
    f"""CREATE TRIGGER document_chunks_project_insert AFTER INSERT ON document_chunks
    FOR EACH ROW WHEN NEW.project_id IS NOT {_OWN}
    BEGIN UPDATE document_chunks SET project_id = {_OWN} WHERE id = NEW.id; END""",
    f"""CREATE TRIGGER document_chunks_project_update AFTER UPDATE OF document_id, project_id ON document_chunks
    FOR EACH ROW WHEN NEW.project_id IS NOT {_OWN}
    BEGIN UPDATE document_chunks SET project_id = {_OWN} WHERE id = NEW.id; END""",
    """CREATE TRIGGER document_metadata_project_to_chunks AFTER UPDATE OF project_id ON document_metadata
    FOR EACH ROW WHEN OLD.project_id IS NOT NEW.project_id
    BEGIN UPDATE document_chunks SET project_id = NEW.project_id WHERE document_id = NEW.id; END""",
]
SQLITE_DROP = [
    "DROP TRIGGER IF EXISTS document_metadata_project_to_chunks",
    "DROP TRIGGER IF EXISTS document_chunks_project_update",
    "DROP TRIGGER IF EXISTS document_chunks_project_insert",
]


def triggers_create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRESQL, params=None)
    elif schema_editor.connection.vendor == "sqlite":
        for statement in SQLITE:
            schema_editor.execute(statement, params=None)


def triggers_drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRESQL_DROP, params=None)
    elif schema_editor.connection.vendor == "sqlite":
        for statement in SQLITE_DROP:
            schema_editor.execute(statement, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_initial"),
        ("retrieval", "0014_feedback_no_redundant_fk_indexes"),
    ]

    operations = [
        migrations.AddField(
            model_name="chunk",
            name="project",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                db_index=False,
                editable=False,
                null=True,
                on_delete=models.deletion.DO_NOTHING,
                related_name="+",
                to="accounts.project",
            ),
        ),
        migrations.RunPython(triggers_create, triggers_drop, elidable=False),
    ]
