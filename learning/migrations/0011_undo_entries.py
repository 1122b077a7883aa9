"""Undo entries: the state a user's change to a learned item replaced (a deleted item's whole row),
kept for LEARNING_UNDO_SECONDS so the preferences panel can undo it."""

import django.db.models.deletion
import django.utils.timezone
import uuid

import learning.models.undo
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("learning", "0010_admin_names"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="UndoEntry",
            fields=[
                ("id", models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                (
                    "subject_type",
                    models.CharField(
                        choices=[
                            ("preference", "preference"),
                            ("workflow", "workflow"),
                            ("memory", "memory"),
                            ("taste_pattern", "taste_pattern"),
                        ],
                        max_length=16,
                    ),
                ),
                ("subject_id", models.CharField(max_length=64)),
                ("action", models.CharField(max_length=16)),
                ("before", models.JSONField(default=dict, encoder=learning.models.undo.UndoEncoder)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now, editable=False)),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to=settings.AUTH_USER_MODEL
                    ),
                ),
            ],
            options={
                "db_table": "learning_undo_entries",
                "ordering": ["-created_at"],
                "indexes": [
                    models.Index(
                        models.F("user"),
                        models.F("subject_type"),
                        models.F("subject_id"),
                        models.OrderBy(models.F("created_at"), descending=True),
                        name="undo_subject",
                    ),
                    models.Index(models.F("created_at"), name="undo_created"),
                ],
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(("subject_type__in", ("preference", "workflow", "memory", "taste_pattern"))),
                        name="undo_subject_type_valid",
                    )
                ],
            },
        ),
    ]
