"""Open-set preferences (axis, embedding, low-confidence candidates, supersession time), what a
message taught, idempotent observation (client_message_id), and memory edits.

Existing preferences keep their catalogue slug as their key and their catalogue description; the
catalogue slugs that lie on a canonical axis get it, so contradictions keep being detected. Their
embeddings are computed on first comparison (loading the model in a migration would be slow).
"""

import core.fields
from django.conf import settings
from django.db import migrations, models


# The old catalogue's slugs that lie on a canonical axis (learning/analyzer/data/README.md).
AXIS_OF_SLUG = {
    "concise": "length:short",
    "detailed": "length:long",
    "formal": "tone:formal",
    "casual": "tone:casual",
    "expert": "expertise:expert",
    "beginner": "expertise:basic",
    "basic": "expertise:basic",
    "bullet_points": "format:bullets",
    "bullets": "format:bullets",
    "prose": "format:prose",
    "tables": "format:table",
    "ask_clarifying": "followups:ask",
    "no_clarifying": "followups:none",
}


def axes_from_slugs(apps, schema_editor):
    Preference = apps.get_model("learning", "Preference")
    for slug, axis in AXIS_OF_SLUG.items():
        Preference.objects.filter(preference=slug, axis="").update(axis=axis)
    # Rows already superseded: the last change is the best known time it happened.
    Preference.objects.filter(superseded_by__isnull=False, superseded_at__isnull=True).update(
        superseded_at=models.F("updated_at")
    )


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_initial"),
        ("learning", "0006_copy_command_runs_from_events"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="chatmessage",
            name="client_message_id",
            field=models.CharField(blank=True, max_length=255, null=True),
        ),
        migrations.AddField(
            model_name="chatmessage",
            name="learned",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddField(
            model_name="chatmessage",
            name="replay_context",
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="memory",
            name="edited_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="preference",
            name="axis",
            field=models.CharField(blank=True, default="", max_length=64),
        ),
        migrations.AddField(
            model_name="preference",
            name="candidate",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="preference",
            name="embedding",
            field=core.fields.EmbeddingField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="preference",
            name="superseded_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddConstraint(
            model_name="chatmessage",
            constraint=models.UniqueConstraint(
                condition=models.Q(("client_message_id__isnull", False)),
                fields=("user", "client_message_id"),
                name="chat_unique_client_message_id",
            ),
        ),
        migrations.RunPython(axes_from_slugs, migrations.RunPython.noop),
    ]
