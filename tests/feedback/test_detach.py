"""Deleting a project or an intelligence target, as the stream sees it: events keep their rows and
lose only that reference, under a deletion event written first; the PostgreSQL trigger lets exactly
that through and refuses every other change. Also: snapshots default to {}."""

from __future__ import annotations

import psycopg
import pytest

from feedback.models import AppendOnlyError, EventFamily, FeedbackEvent, TaskFeedback
from feedback.services.detach import feedback_detach_project, feedback_detach_target
from feedback.services.events import EventInput, event_record
from tests.factories import FeedbackEventFactory, ProjectFactory, TaskFeedbackFactory
from tests.feedback.test_app_role import app_role, connect_as, in_transaction  # noqa: F401 (fixture)

DETACH_PROJECT = "UPDATE ai_feedback_events SET project_id = NULL"
DETACH_TARGET = "UPDATE ai_feedback_events SET target_id = ''"


def test_detaching_a_project_keeps_its_events_and_ratings_after_a_deletion_event(world):
    other = ProjectFactory(slug="zeus")
    kept = FeedbackEventFactory(user=world.owner, project=world.project, free_text="mine", target_id="7")
    elsewhere = FeedbackEventFactory(user=world.owner, project=other)
    rating = TaskFeedbackFactory(user=world.owner, project=world.project)
    counts: dict[str, int] = {}
    deletion = feedback_detach_project(
        actor=world.actor("admin"), project_id=world.project.pk, name="Apollo", counts=counts
    )
    assert (deletion.event_type, deletion.subject_type, deletion.subject_id) == (
        "project_deleted",
        "project",
        str(world.project.pk),
    )
    assert deletion.project_id is None  # the record of the deletion names the project by id only
    kept = FeedbackEvent.objects.get(pk=kept.pk)
    assert (kept.project_id, kept.free_text, kept.target_id, kept.user_id) == (None, "mine", "7", world.owner.pk)
    assert FeedbackEvent.objects.get(pk=elsewhere.pk).project_id == other.pk
    assert TaskFeedback.objects.get(pk=rating.pk).project_id is None
    assert counts == {"ai_feedback_events (project detached)": 1, "ai_task_feedback (project detached)": 1}


def test_detaching_a_target_clears_only_that_target(world):
    named = FeedbackEventFactory(user=world.owner, project=world.project, target_id="42")
    other = FeedbackEventFactory(user=world.owner, target_id="421")
    counts: dict[str, int] = {}
    deletion = feedback_detach_target(actor=world.actor("admin"), target_id=42, name="Tower B", counts=counts)
    assert (deletion.event_type, deletion.subject_type, deletion.subject_id) == (
        "target_deleted",
        "intelligence_target",
        "42",
    )
    named = FeedbackEvent.objects.get(pk=named.pk)
    assert (named.target_id, named.project_id) == ("", world.project.pk)
    assert FeedbackEvent.objects.get(pk=other.pk).target_id == "421"
    assert counts == {"ai_feedback_events (target detached)": 1}


def test_the_orm_still_refuses_any_other_change(world):
    event = FeedbackEventFactory(user=world.owner, project=world.project)
    with pytest.raises(AppendOnlyError):
        FeedbackEvent.objects.filter(pk=event.pk).update(project=None)
    with pytest.raises(ValueError, match="one project or one target"):
        FeedbackEvent.objects.detach(project_id=world.project.pk, target_id="3", deletion_event_id=event.pk)


def test_snapshots_default_to_an_empty_object(world):
    event = event_record(
        actor=world.actor("owner"),
        data=EventInput(event_type="note", event_family=EventFamily.ASSISTANT_RESPONSE, signal="positive"),
    ).event
    stored = FeedbackEvent.objects.get(pk=event.pk)
    assert (stored.before_snapshot, stored.after_snapshot) == ({}, {})
    assert FeedbackEventFactory(user=world.owner).before_snapshot == {}


@pytest.mark.django_db(transaction=True)  # the app role's own connection must see the rows
def test_the_trigger_allows_the_detach_and_nothing_else(world, app_role):  # noqa: F811
    event = FeedbackEventFactory(user=world.owner, project=world.project, target_id="42", free_text="words")
    other_project = ProjectFactory(slug="zeus")
    bystander = FeedbackEventFactory(user=world.owner, project=other_project, target_id="43")
    project_deleted = FeedbackEventFactory(
        user=None, event_type="project_deleted", subject_type="project", subject_id=str(world.project.pk)
    )
    target_deleted = FeedbackEventFactory(
        user=None, event_type="target_deleted", subject_type="intelligence_target", subject_id="42"
    )
    forged = FeedbackEventFactory(  # the right subject, the wrong kind of event
        user=None, event_type="promotion_apply", subject_type="project", subject_id=str(world.project.pk)
    )
    with connect_as(app_role) as app:
        # Without the setting, or under an event that is no deletion of this project: refused.
        for setting in (None, str(forged.pk), str(target_deleted.pk), "not-a-uuid"):
            statements: list = [(DETACH_PROJECT + " WHERE id = %s", [event.pk])]
            if setting is not None:
                statements.insert(0, ("SELECT set_config('ai_feedback_events.detach', %s, true)", [setting]))
            with pytest.raises(psycopg.Error):
                in_transaction(app, *statements)
        with app.transaction():
            app.execute("SELECT set_config('ai_feedback_events.detach', %s, true)", [str(project_deleted.pk)])
            # Under it, anything beyond dropping the project is still refused...
            for change in ("signal = 'negative'", "free_text = ''", "target_id = ''", "user_id = NULL"):
                with pytest.raises(psycopg.Error), app.transaction():
                    app.execute(DETACH_PROJECT + f", {change} WHERE id = %s", [event.pk])
            with pytest.raises(psycopg.Error), app.transaction():  # another project's events
                app.execute(DETACH_PROJECT + " WHERE id = %s", [bystander.pk])
            with pytest.raises(psycopg.Error), app.transaction():
                app.execute("DELETE FROM ai_feedback_events WHERE id = %s", [event.pk])
            app.execute(DETACH_PROJECT + " WHERE id = %s", [event.pk])  # ... and the detach passes
        with app.transaction():
            app.execute("SELECT set_config('ai_feedback_events.detach', %s, true)", [str(target_deleted.pk)])
            for change in ("project_id = NULL", "metadata = '{\"x\": 1}'"):
                with pytest.raises(psycopg.Error), app.transaction():
                    app.execute(DETACH_TARGET + f", {change} WHERE id = %s", [bystander.pk])
            with pytest.raises(psycopg.Error), app.transaction():  # target 43 is not the deleted one
                app.execute(DETACH_TARGET + " WHERE id = %s", [bystander.pk])
            app.execute(DETACH_TARGET + " WHERE id = %s", [event.pk])
    event = FeedbackEvent.objects.get(pk=event.pk)
    assert (event.project_id, event.target_id, event.free_text) == (None, "", "words")
    bystander = FeedbackEvent.objects.get(pk=bystander.pk)
    assert (bystander.project_id, bystander.target_id) == (other_project.pk, "43")


def test_the_service_passes_the_trigger(world):
    """On PostgreSQL the services above run under the trigger (this file's other tests run on both)."""
    event = FeedbackEventFactory(user=world.owner, project=world.project, target_id="5")
    feedback_detach_target(actor=world.actor("admin"), target_id=5, name="x", counts={})
    feedback_detach_project(actor=world.actor("admin"), project_id=world.project.pk, name="x", counts={})
    event = FeedbackEvent.objects.get(pk=event.pk)
    assert (event.project_id, event.target_id) == (None, "")
