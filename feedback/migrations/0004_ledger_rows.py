"""Snapshots default to {} (new rows; older rows keep their null), a task rating outlives its project,
and on PostgreSQL the append-only trigger allows a second audited change besides erasure: when a
project or an intelligence target is deleted, its events lose that one reference.

UPDATE now passes in exactly two cases (anything else is refused as before):

- erasure, as in 0003, except that the erased snapshots are {} (the new default) instead of null;
- detach: the transaction-local setting ``ai_feedback_events.detach`` names a ``project_deleted``
  event whose subject is the row's project and the new row is the old one with ``project_id`` null,
  or a ``target_deleted`` event whose subject is the row's ``target_id`` and the new row is the old
  one with ``target_id`` ''; every other column unchanged (``feedback.services.detach`` writes that
  event first and sets the setting with ``set_config(..., true)`` in the same transaction).

As for erasure, the setting is no secret: the column rule is what makes it safe. A role abusing it
could only drop a project or target reference under a deletion event it must write first.
"""


import django.db.models.deletion
from django.db import migrations, models


UNCHANGED = """(NEW.id, NEW.created_at, NEW.user_id, NEW.session_id, NEW.source_table, NEW.source_record_id,
             NEW.event_type, NEW.event_family, NEW.surface, NEW.subject_type, NEW.subject_id, NEW.signal,
             NEW.reason_category, NEW.free_text, NEW.before_snapshot, NEW.after_snapshot, NEW.source_context,
             NEW.metadata, NEW.private, NEW.writer, NEW.idempotency_key)
            IS NOT DISTINCT FROM
            (OLD.id, OLD.created_at, OLD.user_id, OLD.session_id, OLD.source_table, OLD.source_record_id,
             OLD.event_type, OLD.event_family, OLD.surface, OLD.subject_type, OLD.subject_id, OLD.signal,
             OLD.reason_category, OLD.free_text, OLD.before_snapshot, OLD.after_snapshot, OLD.source_context,
             OLD.metadata, OLD.private, OLD.writer, OLD.idempotency_key)"""

FUNCTION = """
CREATE OR REPLACE FUNCTION ai_feedback_events_append_only() RETURNS trigger AS $$
DECLARE
    erasure text := current_setting('ai_feedback_events.erasure', true);
    detach text := current_setting('ai_feedback_events.detach', true);
BEGIN
    IF TG_OP = 'UPDATE' AND coalesce(erasure, '') <> '' AND OLD.user_id IS NOT NULL
        AND NEW.user_id IS NULL
        AND NEW.writer = 'erased'
        AND NEW.free_text = ''
        AND NEW.before_snapshot = '{}'::jsonb
        AND NEW.after_snapshot = '{}'::jsonb
        AND NEW.source_context = '{}'::jsonb
        AND NEW.metadata = '{}'::jsonb
        AND NEW.session_id = ''
        AND NEW.idempotency_key IS NULL
        AND (NEW.id, NEW.created_at, NEW.project_id, NEW.target_id, NEW.source_table, NEW.source_record_id,
             NEW.event_type, NEW.event_family, NEW.surface, NEW.subject_type, NEW.subject_id, NEW.signal,
             NEW.reason_category, NEW.private)
            IS NOT DISTINCT FROM
            (OLD.id, OLD.created_at, OLD.project_id, OLD.target_id, OLD.source_table, OLD.source_record_id,
             OLD.event_type, OLD.event_family, OLD.surface, OLD.subject_type, OLD.subject_id, OLD.signal,
             OLD.reason_category, OLD.private)
        AND EXISTS (
            SELECT 1 FROM ai_feedback_events e
            WHERE e.id::text = erasure AND e.event_type = 'user_erased'
              AND e.subject_type = 'user' AND e.subject_id = OLD.user_id::text
        )
    THEN
        RETURN NEW;
    END IF;
    IF TG_OP = 'UPDATE' AND coalesce(detach, '') <> ''
        AND OLD.project_id IS NOT NULL AND NEW.project_id IS NULL AND NEW.target_id = OLD.target_id
        AND %(unchanged)s
        AND EXISTS (
            SELECT 1 FROM ai_feedback_events e
            WHERE e.id::text = detach AND e.event_type = 'project_deleted'
              AND e.subject_type = 'project' AND e.subject_id = OLD.project_id::text
        )
    THEN
        RETURN NEW;
    END IF;
    IF TG_OP = 'UPDATE' AND coalesce(detach, '') <> ''
        AND OLD.target_id <> '' AND NEW.target_id = '' AND NEW.project_id IS NOT DISTINCT FROM OLD.project_id
        AND %(unchanged)s
        AND EXISTS (
            SELECT 1 FROM ai_feedback_events e
            WHERE e.id::text = detach AND e.event_type = 'target_deleted'
              AND e.subject_type = 'intelligence_target' AND e.subject_id = OLD.target_id
        )
    THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'ai_feedback_events is append-only: % refused', TG_OP
        USING ERRCODE = 'restrict_violation';
END;
$$ LANGUAGE plpgsql;
""".replace("%(unchanged)s", UNCHANGED)

PREVIOUS = """
CREATE OR REPLACE FUNCTION ai_feedback_events_append_only() RETURNS trigger AS $$
DECLARE
    erasure text := current_setting('ai_feedback_events.erasure', true);
BEGIN
    IF TG_OP = 'UPDATE' AND coalesce(erasure, '') <> '' AND OLD.user_id IS NOT NULL
        AND NEW.user_id IS NULL
        AND NEW.writer = 'erased'
        AND NEW.free_text = ''
        AND NEW.before_snapshot IS NULL
        AND NEW.after_snapshot IS NULL
        AND NEW.source_context = '{}'::jsonb
        AND NEW.metadata = '{}'::jsonb
        AND NEW.session_id = ''
        AND NEW.idempotency_key IS NULL
        AND (NEW.id, NEW.created_at, NEW.project_id, NEW.target_id, NEW.source_table, NEW.source_record_id,
             NEW.event_type, NEW.event_family, NEW.surface, NEW.subject_type, NEW.subject_id, NEW.signal,
             NEW.reason_category, NEW.private)
            IS NOT DISTINCT FROM
            (OLD.id, OLD.created_at, OLD.project_id, OLD.target_id, OLD.source_table, OLD.source_record_id,
             OLD.event_type, OLD.event_family, OLD.surface, OLD.subject_type, OLD.subject_id, OLD.signal,
             OLD.reason_category, OLD.private)
        AND EXISTS (
            SELECT 1 FROM ai_feedback_events e
            WHERE e.id::text = erasure AND e.event_type = 'user_erased'
              AND e.subject_type = 'user' AND e.subject_id = OLD.user_id::text
        )
    THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'ai_feedback_events is append-only: % refused', TG_OP
        USING ERRCODE = 'restrict_violation';
END;
$$ LANGUAGE plpgsql;
"""


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(FUNCTION, params=None)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(PREVIOUS, params=None)


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0002_api_key_project_limit'),
        ('feedback', '0003_append_only_erasure_and_truncate'),
    ]

    operations = [
        migrations.RunPython(forwards, backwards),
        migrations.AlterField(
            model_name='feedbackevent',
            name='after_snapshot',
            field=models.JSONField(blank=True, default=dict, null=True),
        ),
        migrations.AlterField(
            model_name='feedbackevent',
            name='before_snapshot',
            field=models.JSONField(blank=True, default=dict, null=True),
        ),
        migrations.AlterField(
            model_name='taskfeedback',
            name='project',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='accounts.project'),
        ),
    ]
