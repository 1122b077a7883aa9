"""On PostgreSQL, refuse UPDATE and DELETE on ai_feedback_events at the database.

The ORM already refuses both; the trigger also stops raw SQL and other clients. TRUNCATE
is left alone on purpose: it is an operator's (and the test runner's) explicit reset,
not a row change.
"""
from django.db import migrations

CREATE = """
CREATE OR REPLACE FUNCTION ai_feedback_events_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'ai_feedback_events is append-only: % refused', TG_OP
        USING ERRCODE = 'restrict_violation';
END;
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS ai_feedback_events_no_update_delete ON ai_feedback_events;
CREATE TRIGGER ai_feedback_events_no_update_delete
    BEFORE UPDATE OR DELETE ON ai_feedback_events
    FOR EACH ROW EXECUTE FUNCTION ai_feedback_events_append_only();
"""

DROP = """
DROP TRIGGER IF EXISTS ai_feedback_events_no_update_delete ON ai_feedback_events;
DROP FUNCTION IF EXISTS ai_feedback_events_append_only();
"""


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE, params=None)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP, params=None)


class Migration(migrations.Migration):
    dependencies = [("feedback", "0001_initial")]

    operations = [migrations.RunPython(forwards, backwards)]
