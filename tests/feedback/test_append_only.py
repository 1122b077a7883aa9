"""The stream is append-only, and its vocabularies are enforced by the database itself."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models.deletion import ProtectedError

from feedback.models import AppendOnlyError, FeedbackEvent
from feedback.services.events import EventInput, event_record


@pytest.fixture
def event(world):
    data = EventInput(event_type="response_rated", event_family="assistant_response", signal="positive")
    return event_record(actor=world.actor("owner"), data=data).event


def test_orm_refuses_update_and_delete(event):
    with pytest.raises(AppendOnlyError):
        FeedbackEvent.objects.filter(pk=event.pk).update(signal="negative")
    with pytest.raises(AppendOnlyError):
        FeedbackEvent.objects.all().delete()
    with pytest.raises(AppendOnlyError):
        event.delete()
    event.signal = "negative"
    with pytest.raises(AppendOnlyError):
        event.save()
    with pytest.raises(AppendOnlyError):
        FeedbackEvent.objects.bulk_update([event], ["signal"])
    assert FeedbackEvent.objects.get(pk=event.pk).signal == "positive"


def test_deleting_a_user_with_events_is_refused(world, event):
    with pytest.raises(ProtectedError):
        world.owner.delete()


@pytest.mark.parametrize(
    "bad",
    [{"event_family": "gossip"}, {"signal": "meh"}, {"event_type": ""}],
)
def test_database_check_constraints(world, bad):
    """Bypassing every Python check (bulk_create skips validation) still cannot store a bad row."""
    row = FeedbackEvent(**{"event_type": "x", "event_family": "retrieval", "signal": "positive", "writer": "t", **bad})
    with pytest.raises(IntegrityError), transaction.atomic():
        FeedbackEvent.objects.bulk_create([row])


@pytest.mark.django_db(transaction=True)
def test_postgres_trigger_refuses_raw_update_and_delete(world, event):
    if connection.vendor != "postgresql":
        pytest.skip("the append-only trigger is PostgreSQL's; the PostgreSQL run of the suite covers it")
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE ai_feedback_events SET signal = 'negative' WHERE id = %s", [event.pk])
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("DELETE FROM ai_feedback_events WHERE id = %s", [event.pk])
    assert FeedbackEvent.objects.get(pk=event.pk).signal == "positive"


def test_postgres_has_the_five_design_indexes(db):
    if connection.vendor != "postgresql":
        pytest.skip("index introspection checked on PostgreSQL")
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, "ai_feedback_events")
    names = {name for name, info in constraints.items() if info["index"]}
    assert {
        "fe_project_family_created",
        "fe_target_family_created",
        "fe_subject_created",
        "fe_source_record",
        "fe_type_signal_created",
    } <= names


def test_project_is_indexed_once_and_still_a_foreign_key(db):
    """fe_project_family_created leads with project_id; a second index of that column alone only cost
    every appended event (migration feedback 0007)."""
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, "ai_feedback_events")
    leading = [name for name, info in constraints.items() if info["index"] and info["columns"][:1] == ["project_id"]]
    assert leading == ["fe_project_family_created"]
    assert any(info["foreign_key"] == ("accounts_project", "id") for info in constraints.values())
