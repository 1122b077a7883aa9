"""A passage keeps its chunk across re-imports; a weight or trace whose passage changed or went
keeps its row (chunk NULL, the weight ``orphaned``), and a weight records the content hash of the
passage it was learned on (filled here for the weights that exist)."""

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def chunk_nullable(apps, schema_editor):
    """Traces and weights may point at no chunk. On PostgreSQL only DROP NOT NULL: the usual AlterField
    drops and re-adds the foreign key, re-validating every trace row under a lock that holds up the
    trace writes of every search meanwhile. (on_delete is Django's, not the database's.)"""
    Chunk = apps.get_model("retrieval", "Chunk")
    for name in ("RetrievalFeedback", "RetrievalWeight"):
        model = apps.get_model("retrieval", name)
        old = model._meta.get_field("chunk")
        if schema_editor.connection.vendor == "postgresql":
            table, column = schema_editor.quote_name(model._meta.db_table), schema_editor.quote_name(old.column)
            schema_editor.execute(f"ALTER TABLE {table} ALTER COLUMN {column} DROP NOT NULL")
            continue
        new = models.ForeignKey(Chunk, null=True, on_delete=models.SET_NULL, related_name="+")
        new.set_attributes_from_name("chunk")
        new.model = model
        schema_editor.alter_field(model, old, new)


def weights_name_their_passage(apps, schema_editor):
    Chunk = apps.get_model("retrieval", "Chunk")
    RetrievalWeight = apps.get_model("retrieval", "RetrievalWeight")
    RetrievalWeight.objects.filter(chunk__isnull=False).update(
        content_hash=Subquery(Chunk.objects.filter(pk=OuterRef("chunk_id")).values("content_hash")[:1])
    )


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0002_api_key_project_limit'),
        ('retrieval', '0004_result_explored'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='retrievalweight',
            name='weight_status_valid',
        ),
        migrations.AddField(
            model_name='retrievalweight',
            name='content_hash',
            field=models.CharField(blank=True, default='', max_length=64),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name='retrievalfeedback',
                    name='chunk',
                    field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='retrieval.chunk'),
                ),
                migrations.AlterField(
                    model_name='retrievalweight',
                    name='chunk',
                    field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='retrieval.chunk'),
                ),
            ],
            database_operations=[migrations.RunPython(chunk_nullable, migrations.RunPython.noop)],
        ),
        migrations.AlterField(
            model_name='retrievalweight',
            name='status',
            field=models.CharField(choices=[('active', 'Active'), ('paused', 'Paused'), ('superseded', 'Superseded'), ('orphaned', 'Orphaned')], default='active', max_length=16),
        ),
        migrations.AddConstraint(
            model_name='retrievalweight',
            constraint=models.CheckConstraint(condition=models.Q(('status__in', ['active', 'paused', 'superseded', 'orphaned'])), name='weight_status_valid'),
        ),
        migrations.RunPython(weights_name_their_passage, migrations.RunPython.noop, elidable=True),
    ]
