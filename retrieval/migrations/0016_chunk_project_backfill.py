"""Existing chunks take their document's project (the column and its triggers are 0015's).

In batches of BATCH chunk ids, each its own short transaction, so that search and imports go on
during it: on PostgreSQL every updated row gets a new row version and a new HNSW entry, a cost that
grows with the chunks in projects (measured at 1,000,000 chunks in the README's deployment notes).
Organisation-wide chunks are not written. Re-running it after an interruption only does what is
left (rows written meanwhile already have their value from the triggers). Search must not run on a
release that reads the column before this has finished: ``migrate`` completes it first.
"""

from django.db import migrations, transaction
from django.db.models import Max, Min, OuterRef, Subquery

BATCH = 1000


def chunks_take_their_documents_project(apps, schema_editor):
    Chunk = apps.get_model("retrieval", "Chunk")
    Document = apps.get_model("retrieval", "Document")
    alias = schema_editor.connection.alias
    bounds = Chunk.objects.using(alias).aggregate(low=Min("id"), high=Max("id"))
    if bounds["low"] is None:
        return
    project = Document.objects.using(alias).filter(pk=OuterRef("document_id")).values("project_id")[:1]
    for start in range(bounds["low"], bounds["high"] + 1, BATCH):
        with transaction.atomic(using=alias):
            Chunk.objects.using(alias).filter(
                pk__gte=start, pk__lt=start + BATCH, project__isnull=True, document__project__isnull=False
            ).update(project_id=Subquery(project))


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("retrieval", "0015_chunk_project")]

    operations = [
        migrations.RunPython(chunks_take_their_documents_project, migrations.RunPython.noop, atomic=False),
    ]
