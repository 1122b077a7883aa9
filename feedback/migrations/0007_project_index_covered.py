"""The event stream's own index on project_id goes: fe_project_family_created leads with the same
column and serves every read by project, and each appended event maintained both.

Only the index is dropped. Django's AlterField would drop and re-add the foreign key as well, which on
PostgreSQL re-validates it over the whole stream under a lock that stops ingestion meanwhile."""

import django.db.models.deletion
from django.db import migrations, models

INDEX = "ai_feedback_events_project_id_b3bdbcd7"


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0003_admin_names"),
        ("feedback", "0006_created_at_brin"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="feedbackevent",
                    name="project",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="accounts.project",
                    ),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    f'DROP INDEX IF EXISTS "{INDEX}"',
                    reverse_sql=f'CREATE INDEX IF NOT EXISTS "{INDEX}" ON "ai_feedback_events" ("project_id")',
                ),
            ],
        ),
    ]
