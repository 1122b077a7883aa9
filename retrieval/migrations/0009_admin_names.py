"""Names the admin shows (verbose names only: no change to the database)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("retrieval", "0008_trace_rollups"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="retrievalfeedback",
            options={"ordering": ["trace", "rank"], "verbose_name_plural": "retrieval feedback"},
        ),
        migrations.AlterModelOptions(
            name="retrievalprojectsettings",
            options={"verbose_name_plural": "retrieval project settings"},
        ),
        migrations.AlterModelOptions(
            name="retrievalquery",
            options={"ordering": ["-created_at"], "verbose_name_plural": "retrieval queries"},
        ),
    ]
