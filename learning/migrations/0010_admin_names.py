"""Names the admin shows (verbose names only: no change to the database)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("learning", "0009_taste_consistency"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="memory",
            options={"ordering": ["-created_at"], "verbose_name_plural": "memories"},
        ),
    ]
