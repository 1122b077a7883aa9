"""Taste that stays consistent: a run says whether the tool succeeded and when its applied
patterns were judged (by its decision or by its uncorrected success, once), and a plugin-wide
pattern (command NULL) is unique per direction too (the existing constraint lets NULLs differ).
Existing runs have neither: they were judged, if at all, by their decision."""

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("learning", "0008_workflow_details"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="commandrun",
            name="judged_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="commandrun",
            name="succeeded",
            field=models.BooleanField(blank=True, null=True),
        ),
        migrations.AddConstraint(
            model_name="tastepattern",
            constraint=models.UniqueConstraint(
                condition=models.Q(("command__isnull", True)),
                fields=("user", "plugin", "correction_type", "direction"),
                name="taste_unique_plugin_direction",
            ),
        ),
    ]
