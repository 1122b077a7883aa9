"""document_chunks.project_id: each chunk carries its document's project.

A project member's search walks the HNSW index until it has enough chunks the member may read.
Before this column every candidate's visibility was a lookup of its document's project (a join
per candidate); now it is a test on the row the index scan fetches anyway. Import and
``retrieval.services.document_set_project``, the only writers of a document's project, keep the
two equal.

The backfill is one UPDATE in the migration's transaction, so no chunk is ever read with a missing
project (which would make a project's passage look organisation-wide). On PostgreSQL each updated
row gets a new version and a new HNSW entry: measured at 1,000,000 chunks, half of them in projects,
in the closing note of the change that added it. Organisation-wide chunks are not touched.
"""

from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def chunks_take_their_documents_project(apps, schema_editor):
    Chunk = apps.get_model("retrieval", "Chunk")
    Document = apps.get_model("retrieval", "Document")
    project = Document.objects.filter(pk=OuterRef("document_id")).values("project_id")[:1]
    Chunk.objects.filter(document__project__isnull=False).update(project_id=Subquery(project))


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
                db_index=False,
                null=True,
                on_delete=models.deletion.CASCADE,
                related_name="+",
                to="accounts.project",
            ),
        ),
        migrations.RunPython(chunks_take_their_documents_project, migrations.RunPython.noop, elidable=False),
    ]
