"""Command runs and decisions in their own tables: each row written with its event in one
transaction (or neither), one decision per run held by the database, the copy of the runs and
decisions recorded as events before the tables existed, and learning's plain ids into the
promotion ledger."""

from __future__ import annotations

import importlib
import uuid
from types import SimpleNamespace

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor

from feedback.models import FeedbackEvent
from feedback.services.events import EventInput, event_record
from learning.models import AgentLearning, CommandDecision, CommandRun, Memory
from learning.services import taste
from tests.learning.conftest import DECISIONS, REPORT, WITHOUT_NEXT_STEPS, learn_section_pattern
from tests.learning.conftest import command_decide as decide
from tests.learning.conftest import command_run as run

pytestmark = pytest.mark.django_db

COPY = importlib.import_module("learning.migrations.0006_copy_command_runs_from_events")


def _event(world, event_type: str, *, role: str = "owner", **fields) -> FeedbackEvent:
    data = EventInput(event_type=event_type, event_family="tool_action", signal="completed", **fields)
    return event_record(actor=world.actor(role), data=data).event


# --- rows and events together -----------------------------------------------------------------


def test_a_run_and_its_decision_are_rows_linked_to_their_events(world):
    client = world.client("owner")
    ran = run(client, parameters={"tone": "formal"}, session_id="s-1", project="apollo")
    row = CommandRun.objects.get(pk=ran["run_id"])
    posted = FeedbackEvent.objects.get(event_type="post_command")
    assert (row.event_id, row.user, row.project, row.session_id) == (posted.pk, world.owner, world.project, "s-1")
    assert (row.plugin, row.command, row.parameters, row.output, row.applied_patterns) == (
        "email",
        "draft",
        {"tone": "formal"},
        REPORT,
        [],
    )

    result = decide(client, ran["run_id"], "edited", edited_output=WITHOUT_NEXT_STEPS)
    decision = CommandDecision.objects.get(run=row)
    decided = FeedbackEvent.objects.get(event_type="decision_point")
    assert (decision.event_id, decision.decision, decision.edited_output, decision.parameters) == (
        decided.pk,
        "edited",
        WITHOUT_NEXT_STEPS,
        None,
    )
    assert decision.corrections == result["corrections"] == decided.metadata["corrections"]
    assert decided.project == world.project


def test_a_rerun_decision_keeps_its_parameters(world):
    client = world.client("owner")
    ran = run(client, parameters={"tone": "formal"})
    decide(client, ran["run_id"], "rerun", parameters={"tone": "casual"})
    decision = CommandDecision.objects.get(run_id=ran["run_id"])
    assert (decision.decision, decision.parameters, decision.edited_output) == ("rerun", {"tone": "casual"}, None)
    assert decision.corrections == [
        {"type": "parameter", "direction": "tone=casual", "detail": {"from": "formal", "to": "casual"}}
    ]


def test_when_the_event_write_fails_no_run_row_is_written(world, monkeypatch):
    def refuse(**kwargs):
        raise RuntimeError("the event store is down")

    monkeypatch.setattr(taste, "event_record", refuse)
    with pytest.raises(RuntimeError):
        taste.command_run_record(
            actor=world.actor("owner"), user=world.owner, plugin="email", command="draft", output=REPORT
        )
    assert not CommandRun.objects.exists()


def test_a_run_refused_by_the_event_rules_writes_no_row(world):
    response = world.client("other").post(
        "/api/v1/commands/runs",
        {"plugin": "email", "command": "draft", "output": "x", "project": "apollo"},
        format="json",
    )
    assert response.status_code == 403
    assert not CommandRun.objects.exists()
    assert not FeedbackEvent.objects.exists()


def test_when_the_event_write_fails_no_decision_row_is_written(world, monkeypatch):
    ran = run(world.client("owner"))

    def refuse(**kwargs):
        raise RuntimeError("the event store is down")

    monkeypatch.setattr(taste, "event_record", refuse)
    with pytest.raises(RuntimeError):
        taste.command_decision_record(
            actor=world.actor("owner"), user=world.owner, run_id=ran["run_id"], decision="accepted"
        )
    assert not CommandDecision.objects.exists()


def test_when_the_decision_row_fails_its_event_is_not_kept_either(world, monkeypatch):
    ran = run(world.client("owner"))

    def broken(**kwargs):
        raise IntegrityError("some other constraint")

    monkeypatch.setattr(CommandDecision.objects, "create", broken)
    with pytest.raises(IntegrityError):  # not the one-decision rule: not reported as a conflict
        taste.command_decision_record(
            actor=world.actor("owner"), user=world.owner, run_id=ran["run_id"], decision="accepted"
        )
    assert not FeedbackEvent.objects.filter(event_type="decision_point").exists()


# --- one decision per run ---------------------------------------------------------------------


def test_the_database_refuses_a_second_decision_on_a_run(world):
    ran = run(world.client("owner"))
    first = _event(world, "decision_point", subject_type="command_run", subject_id=ran["run_id"])
    second = _event(world, "decision_point", subject_type="command_run", subject_id=ran["run_id"])
    CommandDecision.objects.create(run_id=ran["run_id"], decision="accepted", event=first)
    with pytest.raises(IntegrityError), transaction.atomic():
        CommandDecision.objects.create(run_id=ran["run_id"], decision="rejected", event=second)
    assert CommandDecision.objects.count() == 1


def test_the_database_refuses_an_unknown_decision(world):
    ran = run(world.client("owner"))
    event = _event(world, "decision_point", subject_type="command_run", subject_id=ran["run_id"])
    with pytest.raises(IntegrityError), transaction.atomic():
        CommandDecision.objects.create(run_id=ran["run_id"], decision="loved", event=event)


def test_a_second_decision_or_a_retry_is_a_409_and_writes_nothing(world):
    pattern = learn_section_pattern(world)
    client = world.client("owner")
    ran = run(client)
    assert [p["id"] for p in ran["applied"]] == [pattern.pk]
    assert decide(client, ran["run_id"], "accepted")["confirmed"] == [pattern.pk]
    events = FeedbackEvent.objects.count()
    for body in ({"decision": "accepted"}, {"decision": "edited", "edited_output": WITHOUT_NEXT_STEPS}):
        response = client.post(DECISIONS, {"run_id": ran["run_id"], **body}, format="json")
        assert response.status_code == 409, response.content
        assert "run_id" in response.json()["error"]["fields"]
    assert FeedbackEvent.objects.count() == events
    assert CommandDecision.objects.filter(run_id=ran["run_id"]).count() == 1
    pattern.refresh_from_db()
    assert (pattern.confirmations, pattern.rejections) == (1, 0)  # judged once


# --- the copy of runs and decisions recorded as events (migration 0006) -----------------------


def _copy() -> None:
    state = MigrationExecutor(connection).loader.project_state(("learning", "0006_copy_command_runs_from_events"))
    # The copy uses the schema editor only for its connection.
    COPY.copy_runs_and_decisions(state.apps, SimpleNamespace(connection=connection))


def _old_run(world, run_id: str, **snapshot) -> FeedbackEvent:
    """A post_command event as command_run_record wrote it before the tables."""
    return _event(
        world,
        "post_command",
        session_id="s-old",
        target_id="email/draft",
        surface="command",
        subject_type="command_run",
        subject_id=run_id,
        after_snapshot={"output": REPORT, "parameters": {"tone": "formal"}, **snapshot},
        metadata={"plugin": "email", "command": "draft", "applied_patterns": [7]},
    )


def _old_decision(world, run_id: str, decision: str, *, after=None, corrections=None, **who) -> FeedbackEvent:
    """A decision_point event as command_decision_record wrote it before the tables."""
    return _event(
        world,
        "decision_point",
        **who,
        target_id="email/draft",
        subject_type="command_run",
        subject_id=run_id,
        reason_category=decision,
        after_snapshot=after,
        metadata={"plugin": "email", "command": "draft", "decision": decision, "corrections": corrections or []},
    )


def test_runs_and_decisions_recorded_as_events_are_copied_once_keeping_their_ids(world):
    edited, rerun, undecided, forged_decision = (str(uuid.uuid4()) for _ in range(4))
    posted = {run_id: _old_run(world, run_id) for run_id in (edited, rerun, undecided, forged_decision)}
    section = {"type": "section", "direction": "removed:next steps", "detail": {"section": "next steps"}}
    first = _old_decision(world, edited, "edited", after={"edited_output": WITHOUT_NEXT_STEPS}, corrections=[section])
    _old_decision(world, edited, "accepted")  # a later one on the same run was never counted
    _old_decision(world, rerun, "rerun", after={"parameters": {"tone": "casual"}})
    _old_decision(world, forged_decision, "loved")  # not a decision the service wrote
    _old_decision(world, forged_decision, "accepted", corrections=[{"type": 1}])
    # Not runs: a post_command of another shape, one under a non-canonical id, a decision on an unknown run.
    _event(world, "post_command", subject_type="command_run", subject_id=str(uuid.uuid4()), metadata={"plugin": 7})
    _old_run(world, str(uuid.uuid4()).upper())
    _old_decision(world, str(uuid.uuid4()), "accepted")

    _copy()
    _copy()  # again: nothing twice

    runs = {str(row.pk): row for row in CommandRun.objects.all()}
    assert set(runs) == {edited, rerun, undecided, forged_decision}
    row = runs[edited]
    assert (row.user, row.session_id, row.plugin, row.command, row.parameters, row.output, row.applied_patterns) == (
        world.owner,
        "s-old",
        "email",
        "draft",
        {"tone": "formal"},
        REPORT,
        [7],
    )
    assert (row.event_id, row.created_at) == (posted[edited].pk, posted[edited].created_at)
    decisions = {str(d.run_id): d for d in CommandDecision.objects.all()}
    assert set(decisions) == {edited, rerun}
    assert (decisions[edited].decision, decisions[edited].edited_output, decisions[edited].corrections) == (
        "edited",
        WITHOUT_NEXT_STEPS,
        [section],
    )
    assert decisions[edited].event_id == first.pk
    assert (decisions[rerun].decision, decisions[rerun].parameters) == ("rerun", {"tone": "casual"})

    # The copied runs behave as recorded ones: a decided run refuses another, an undecided one takes one.
    client = world.client("owner")
    assert client.post(DECISIONS, {"run_id": edited, "decision": "accepted"}, format="json").status_code == 409
    decide(client, undecided, "accepted")
    refused = world.client("other").post(DECISIONS, {"run_id": undecided, "decision": "accepted"}, format="json")
    assert refused.status_code == 404


def test_a_decision_event_by_another_user_is_not_copied(world):
    run_id = str(uuid.uuid4())
    _old_run(world, run_id)
    _old_decision(world, run_id, "accepted", role="service", user_id=world.other.pk)
    _copy()
    assert CommandRun.objects.filter(pk=run_id).exists()
    assert not CommandDecision.objects.exists()


# --- plain ids into the promotion ledger ------------------------------------------------------


def test_no_learning_migration_depends_on_the_promotions_app():
    loader = MigrationExecutor(connection).loader
    learning = [key for key in loader.graph.nodes if key[0] == "learning"]
    assert learning
    for key in learning:
        assert all(app != "promotions" for app, _ in loader.graph.nodes[key].dependencies), key


def test_promotion_ids_are_plain_unique_columns_without_a_foreign_key():
    for model in (Memory, AgentLearning):
        with connection.cursor() as cursor:
            constraints = connection.introspection.get_constraints(cursor, model._meta.db_table)
        on_column = [c for c in constraints.values() if c["columns"] == ["promotion_id"]]
        assert not [c for c in on_column if c["foreign_key"]], model
        assert [c for c in on_column if c["unique"]], model
