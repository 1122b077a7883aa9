"""Append-only by the database: connected as the application role (not a superuser, not the owner,
granted by manage.py db_grants), nothing removes or rewrites events; only the audited anonymisation
of an erased user passes. PostgreSQL only (the PostgreSQL run of the suite covers it)."""

from __future__ import annotations

import io
import uuid

import psycopg
import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection, transaction

from feedback.models import FeedbackEvent
from tests.factories import FeedbackEventFactory

pytestmark = pytest.mark.django_db(transaction=True)

ANONYMISE = (
    "UPDATE ai_feedback_events SET user_id = NULL, writer = 'erased', free_text = '', before_snapshot = '{}', "
    "after_snapshot = '{}', source_context = '{}', metadata = '{}', session_id = '', idempotency_key = NULL"
)


@pytest.fixture
def app_role():
    if connection.vendor != "postgresql":
        pytest.skip("roles and triggers are PostgreSQL's; the PostgreSQL run of the suite covers them")
    name = f"ll_test_app_{uuid.uuid4().hex[:10]}"
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE ROLE {name} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT")
    call_command("db_grants", "--app-role", name, stdout=io.StringIO())
    yield name
    with connection.cursor() as cursor:
        cursor.execute(f"DROP OWNED BY {name}")
        cursor.execute(f"DROP ROLE {name}")


def connect_as(role: str) -> psycopg.Connection:
    settings = connection.settings_dict
    return psycopg.connect(
        host=settings["HOST"] or "127.0.0.1",
        port=settings["PORT"] or 5432,
        dbname=settings["NAME"],
        user=role,
        password="",
        autocommit=True,
    )


def in_transaction(app: psycopg.Connection, *statements: str | tuple[str, list]) -> None:
    """Run statements (a string, or SQL with its parameters) in one transaction of ``app``."""
    with app.transaction():
        for statement in statements:
            sql, params = statement if isinstance(statement, tuple) else (statement, None)
            app.execute(sql, params)


def _truncate_with_the_reset_switch_off() -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL ai_feedback_events.allow_truncate = 'off'")
        cursor.execute("TRUNCATE ai_feedback_events CASCADE")


def test_the_application_role_cannot_remove_or_rewrite_events(world, app_role):
    event = FeedbackEventFactory(user=world.owner, free_text="kept")
    with connect_as(app_role) as app:
        assert app.execute("SELECT count(*) FROM ai_feedback_events").fetchone() == (1,)
        attempts = [
            "TRUNCATE ai_feedback_events",
            "TRUNCATE ai_feedback_events CASCADE",
            "ALTER TABLE ai_feedback_events DISABLE TRIGGER ALL",
            "ALTER TABLE ai_feedback_events DISABLE TRIGGER ai_feedback_events_no_update_delete",
            "DROP TRIGGER ai_feedback_events_no_update_delete ON ai_feedback_events",
            "SET session_replication_role = replica",
            "DELETE FROM ai_feedback_events",
            "UPDATE ai_feedback_events SET signal = 'negative'",
        ]
        for statement in attempts:
            with pytest.raises(psycopg.Error):
                app.execute(statement)
        # Replica mode cannot be reached, so the DELETE that would follow it runs under the triggers.
        with pytest.raises(psycopg.Error):
            in_transaction(app, "SET LOCAL session_replication_role = replica", "DELETE FROM ai_feedback_events")
        # The owner's explicit reset switch is not the application role's.
        with pytest.raises(psycopg.Error):
            in_transaction(app, "SET LOCAL ai_feedback_events.allow_truncate = 'on'", "TRUNCATE ai_feedback_events")
        assert app.execute("SELECT current_setting('session_replication_role')").fetchone() == ("origin",)
    assert FeedbackEvent.objects.get(pk=event.pk).free_text == "kept"


def test_the_erasure_setting_allows_anonymisation_only(world, app_role):
    event = FeedbackEventFactory(user=world.owner, project=world.project, free_text="my words", metadata={"k": "v"})
    bystander = FeedbackEventFactory(user=world.member, free_text="theirs")
    erasure = FeedbackEventFactory(
        user=None, event_type="user_erased", subject_type="user", subject_id=str(world.owner.pk)
    )
    with connect_as(app_role) as app:
        # Without an erasure event about this user, the setting lets nothing through.
        for erasure_id in (str(uuid.uuid4()), "not-a-uuid", str(bystander.pk)):
            with pytest.raises(psycopg.Error):
                in_transaction(
                    app,
                    ("SELECT set_config('ai_feedback_events.erasure', %s, true)", [erasure_id]),
                    (ANONYMISE + " WHERE id = %s", [event.pk]),
                )
        with app.transaction():
            app.execute("SELECT set_config('ai_feedback_events.erasure', %s, true)", [str(erasure.pk)])
            # Under it, anything beyond clearing the identifying columns is still refused...
            for change in ("signal = 'negative'", "event_type = 'forged'", "project_id = NULL"):
                with pytest.raises(psycopg.Error), app.transaction():
                    app.execute(ANONYMISE + f", {change} WHERE id = %s", [event.pk])
            with pytest.raises(psycopg.Error), app.transaction():
                app.execute("UPDATE ai_feedback_events SET free_text = '' WHERE id = %s", [event.pk])
            with pytest.raises(psycopg.Error), app.transaction():  # another user's events: not this erasure's
                app.execute(ANONYMISE + " WHERE id = %s", [bystander.pk])
            # ... and the anonymisation itself passes.
            app.execute(ANONYMISE + " WHERE id = %s", [event.pk])
    event = FeedbackEvent.objects.get(pk=event.pk)
    assert (event.user_id, event.writer, event.free_text, event.metadata) == (None, "erased", "", {})
    assert FeedbackEvent.objects.get(pk=bystander.pk).free_text == "theirs"


def test_even_the_owner_truncates_only_on_purpose(world):
    if connection.vendor != "postgresql":
        pytest.skip("the trigger is PostgreSQL's")
    FeedbackEventFactory(user=world.owner)
    with pytest.raises(DatabaseError, match="TRUNCATE refused"):
        _truncate_with_the_reset_switch_off()
    assert FeedbackEvent.objects.count() == 1


def test_db_grants_refuses_a_role_that_could_switch_triggers_off(db):
    if connection.vendor != "postgresql":
        with pytest.raises(CommandError, match="PostgreSQL"):
            call_command("db_grants", "--app-role", "ll_app")
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_user")
        owner = cursor.fetchone()[0]
    with pytest.raises(CommandError, match=r"superuser|owns"):
        call_command("db_grants", "--app-role", owner)
    with pytest.raises(CommandError, match="No role"):
        call_command("db_grants", "--app-role", "ll_no_such_role_here")
