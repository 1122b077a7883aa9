"""On PostgreSQL: the append-only trigger allows one change, the audited anonymisation of an erased
user's events, and a statement-level trigger refuses TRUNCATE.

UPDATE passes only when all of these hold (anything else is refused as before):

- the transaction-local setting ``ai_feedback_events.erasure`` names a ``user_erased`` event that
  exists and whose subject is the row's user (``feedback.services.erasure`` writes that event and
  sets the setting with ``set_config(..., true)`` in the same transaction);
- the new row is the old one with exactly the identifying columns cleared to the values of
  ``feedback.models.ANONYMISED`` (no user, writer 'erased', empty text, snapshots, context,
  metadata, session and idempotency key) and every other column unchanged.

Any role can set a custom setting, so the setting is not a secret: what makes it safe is the column
rule. An application role that abused it could only anonymise events (destroy what identifies a
person, under an erasure event it must write first), never change what an event says.

TRUNCATE is refused for everyone, unless the session set ``ai_feedback_events.allow_truncate`` to
'on' *and* its role owns the table: the owner could drop the trigger anyway, so this only makes an
owner's reset explicit (the test runner's flush does it; see tests/conftest.py). The application
role neither owns the table nor has the TRUNCATE privilege (scripts/db-roles).
"""

from django.db import migrations

CREATE = """
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

CREATE OR REPLACE FUNCTION ai_feedback_events_no_truncate() RETURNS trigger AS $$
BEGIN
    IF current_setting('ai_feedback_events.allow_truncate', true) = 'on'
        AND pg_has_role(current_user, (SELECT relowner FROM pg_class WHERE oid = TG_RELID), 'MEMBER') THEN
        RETURN NULL;
    END IF;
    RAISE EXCEPTION 'ai_feedback_events is append-only: TRUNCATE refused'
        USING ERRCODE = 'restrict_violation';
END;
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS ai_feedback_events_no_truncate ON ai_feedback_events;
CREATE TRIGGER ai_feedback_events_no_truncate
    BEFORE TRUNCATE ON ai_feedback_events
    FOR EACH STATEMENT EXECUTE FUNCTION ai_feedback_events_no_truncate();
"""

DROP = """
DROP TRIGGER IF EXISTS ai_feedback_events_no_truncate ON ai_feedback_events;
DROP FUNCTION IF EXISTS ai_feedback_events_no_truncate();
CREATE OR REPLACE FUNCTION ai_feedback_events_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'ai_feedback_events is append-only: % refused', TG_OP
        USING ERRCODE = 'restrict_violation';
END;
$$ LANGUAGE plpgsql;
"""


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE, params=None)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP, params=None)


class Migration(migrations.Migration):
    dependencies = [("feedback", "0002_append_only_trigger")]

    operations = [migrations.RunPython(forwards, backwards)]
