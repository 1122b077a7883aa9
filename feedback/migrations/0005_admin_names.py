"""Names the admin shows (verbose names only: no change to the database)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("feedback", "0004_ledger_rows"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="taskfeedback",
            options={"ordering": ["-created_at"], "verbose_name_plural": "task feedback"},
        ),
    ]
