"""Names the admin shows (verbose names only: no change to the database)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("intelligence", "0001_initial"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="insightcardevidence",
            options={"ordering": ["card_id", "-observed_at"], "verbose_name_plural": "insight card evidence"},
        ),
    ]
