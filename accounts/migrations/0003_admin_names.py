"""Names the admin shows (verbose names only: no change to the database)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0002_api_key_project_limit"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="apikey",
            options={"ordering": ["-created_at"], "verbose_name": "API key"},
        ),
    ]
