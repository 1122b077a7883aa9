"""What anyone can put in the event stream, and what a retried request can do, must not break
or skew taste learning, the scanners or the review: found in review, kept fixed here."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from feedback.models import FeedbackEvent
from feedback.services.task_feedback import task_feedback_record
from learning.corrections import corrections_derive
from learning.models import TastePattern
from learning.services import taste
from promotions.models import LearningPromotion
from promotions.scanners.agent_learning import agent_learning_scan
from promotions.scanners.task_example import task_example_scan
from tests.concurrency import at_once
from tests.learning.conftest import DECISIONS, REPORT, RUNS, learn_section_pattern
from tests.learning.conftest import command_run as run

EVENTS = "/api/v1/feedback/events"


def test_a_heading_line_of_thousands_of_spaces_is_read_in_linear_time():
    # The heading pattern once backtracked on such a line (24 s at 500 spaces); this would hang.
    hostile = "# x" + " " * 20_000 + "y"
    added = [c.direction for c in corrections_derive(hostile, hostile + "\n# Next steps") if c.type == "section"]
    assert added == ["added:next steps"]


def test_a_post_command_written_through_the_generic_events_api_is_not_a_run(world):
    client = world.client("owner")
    forged = {
        "event_type": "post_command",
        "event_family": "tool_action",
        "signal": "completed",
        "subject_type": "command_run",
        "subject_id": "6f1c3b1e-8a43-4a53-9a8e-3c2f4f1d2b10",
        "metadata": {"plugin": 7},
        "after_snapshot": ["not", "a", "run"],
    }
    assert client.post(EVENTS, forged, format="json").status_code == 201
    response = client.post(DECISIONS, {"run_id": forged["subject_id"], "decision": "accepted"}, format="json")
    assert response.status_code == 404
    assert "run_id" in response.json()["error"]["fields"]


def test_malformed_decision_events_do_not_break_learning_from_real_ones(world):
    client = world.client("owner")
    corrections = [{"type": 1}, "x", {"direction": None}]
    junk = {
        "event_type": "decision_point",
        "event_family": "tool_action",
        "signal": "corrected",
        "target_id": "email/draft",
        "metadata": {"corrections": corrections},
    }
    assert client.post(EVENTS, junk, format="json").status_code == 201
    assert learn_section_pattern(world).status == "candidate"


def test_malformed_thumbs_down_from_the_generic_api_do_not_break_the_agent_scan(world):
    client = world.client("owner")
    for i in range(2):
        body = {
            "event_type": "response_feedback",
            "event_family": "assistant_response",
            "signal": "negative",
            "subject_type": "assistant_response",
            "subject_id": f"r{i}",
            "free_text": "wrong budget figure",
            "metadata": {"tags": 7, "tool_name": ["x"]},
            "after_snapshot": ["a", "list"],
        }
        assert client.post(EVENTS, body, format="json").status_code == 201
    report = agent_learning_scan()
    assert (report.thumbs_down, report.proposed) == (2, 1)
    assert LearningPromotion.objects.get().proposed_learning["tags"] == []


@pytest.mark.django_db(transaction=True)
def test_two_decisions_on_one_run_at_once_count_once(world):
    if connection.vendor != "postgresql":
        pytest.skip("concurrent writers need PostgreSQL; the PostgreSQL run covers this")
    run_id = run(world.client("owner"))["run_id"]
    body = {"run_id": run_id, "decision": "edited", "edited_output": "Short."}
    responses = at_once(lambda: world.client("owner").post(DECISIONS, body, format="json"))
    statuses = [response.status_code for response in responses]
    assert sorted(statuses) == [201, 409]
    assert FeedbackEvent.objects.filter(event_type="decision_point").count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_next_runs_at_once_count_an_uncorrected_success_once(world):
    if connection.vendor != "postgresql":
        pytest.skip("concurrent writers need PostgreSQL; the PostgreSQL run covers this")
    pattern = learn_section_pattern(world)
    run(world.client("owner"), succeeded=True)
    responses = at_once(
        lambda: world.client("owner").post(RUNS, {"plugin": "email", "command": "draft", "output": "x"}, format="json")
    )
    assert sorted(response.status_code for response in responses) == [201, 201]
    assert sorted(len(response.json()["confirmed"]) for response in responses) == [0, 1]
    pattern.refresh_from_db()
    assert pattern.confirmations == 1


@pytest.mark.django_db(transaction=True)
def test_an_accepted_decision_and_the_next_run_at_once_confirm_once(world):
    if connection.vendor != "postgresql":
        pytest.skip("concurrent writers need PostgreSQL; the PostgreSQL run covers this")
    pattern = learn_section_pattern(world)
    run_id = run(world.client("owner"), succeeded=True)["run_id"]
    calls = iter(
        [
            lambda client: client.post(DECISIONS, {"run_id": run_id, "decision": "accepted"}, format="json"),
            lambda client: client.post(RUNS, {"plugin": "email", "command": "draft", "output": "x"}, format="json"),
        ]
    )
    lock = threading.Lock()

    def one():
        with lock:
            call = next(calls)
        return call(world.client("owner"))

    responses = at_once(one)
    assert sorted(response.status_code for response in responses) == [201, 201]
    pattern.refresh_from_db()
    assert pattern.confirmations == 1


def test_dont_stop_applying_this_stops_nothing_and_stop_reaches_only_a_recent_pattern(world):
    pattern = learn_section_pattern(world)
    taste.command_run_record(
        actor=world.actor("owner"), user=world.owner, plugin="email", command="draft", output=REPORT
    )
    client = world.client("owner")
    client.post("/api/v1/messages", {"session_id": "s", "content": "Please don't stop applying this."}, format="json")
    pattern.refresh_from_db()
    assert pattern.status == "candidate"
    TastePattern.objects.filter(pk=pattern.pk).update(last_applied_at=timezone.now() - timedelta(days=3))
    client.post("/api/v1/messages", {"session_id": "s", "content": "stop applying this"}, format="json")
    pattern.refresh_from_db()
    assert pattern.status == "candidate"  # applied days ago: not what "this" means


def test_an_oversized_tool_trace_is_refused_naming_it(world):
    body = {"response_id": "r1", "rating": "down", "tool_trace": {"steps": ["x" * 1000] * 100}}
    response = world.client("owner").post("/api/v1/responses/feedback", body, format="json")
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == ["tool_trace"]
    assert not FeedbackEvent.objects.exists()


def test_a_proposer_cannot_change_what_a_task_example_says(world):
    feedback, _ = task_feedback_record(
        actor=world.actor("owner"),
        rating="good",
        completed=True,
        task_snapshot={"title": "Real title", "description": "Real text"},
    )
    body = {
        "promotion_type": "task_example",
        "subject_id": str(feedback.pk),
        "proposed_learning": {"title": "Harmless", "description": "Shown to the reviewer"},
    }
    response = world.client("admin").post("/api/v1/promotions", body, format="json")
    assert response.status_code == 201
    assert response.json()["proposed_learning"]["title"] == "Real title"


def test_an_agent_learning_with_malformed_tags_is_refused_at_proposal(world):
    world.client("owner").post("/api/v1/responses/feedback", {"response_id": "r1", "rating": "down"}, format="json")
    event = FeedbackEvent.objects.get(event_type="response_feedback")
    body = {
        "promotion_type": "agent_learning",
        "subject_id": str(event.pk),
        "proposed_learning": {"prevention_prompt": "Check the figures.", "tags": 5},
    }
    response = world.client("admin").post("/api/v1/promotions", body, format="json")
    assert response.status_code == 400
    assert "proposed_learning" in response.json()["error"]["fields"]


def test_the_task_example_scan_reads_a_fixed_number_of_queries(world):
    def rate(n, start):
        for i in range(start, start + n):
            task_feedback_record(
                actor=world.actor("owner"),
                rating="good",
                completed=True,
                project_slug="apollo",
                task_snapshot={"title": f"Task {i}", "description": "Do it"},
            )

    rate(3, 0)
    with CaptureQueriesContext(connection) as few:
        assert task_example_scan().proposed == 3
    rate(30, 100)
    with CaptureQueriesContext(connection) as many:
        assert task_example_scan().proposed == 30
    assert len(many.captured_queries) == len(few.captured_queries)
