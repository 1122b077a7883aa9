"""Scans are tasks: the API and the console queue a ScanRun, a worker (eager here) runs it, and the
run shows its progress, then its report or its error."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from feedback.services.task_feedback import task_feedback_record
from promotions import scans, tasks
from promotions.models import LearningPromotion, Scanner, ScanRun
from promotions.scanners import SCANNERS

SCAN = "/api/v1/promotions/scan"
RUNS = "/api/v1/promotions/scans"


def rate_tasks(world, n=2):
    """Tasks rated good: what the task-example scanner proposes (no embeddings needed)."""
    for i in range(n):
        task_feedback_record(
            actor=world.actor("owner"),
            task_snapshot={"id": f"t{i}", "title": f"Write release notes {i}", "description": "Table of changes"},
            rating="good",
            completed=True,
        )


def queue(world, scanner="task_example", role="admin"):
    return world.client(role).post(SCAN, {"scanner": scanner}, format="json")


def test_the_scanner_names_are_the_model_choices():
    assert [*SCANNERS] == [s for s in Scanner.values if s != Scanner.ALL]


def test_a_scan_is_queued_then_run_after_commit(world, django_capture_on_commit_callbacks):
    rate_tasks(world)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = queue(world)
    assert response.status_code == 202
    body = response.json()
    assert (body["status"], body["scanner"], body["requested_by"], body["report"]) == (
        "queued",
        "task_example",
        "admin",
        {},
    )
    assert not LearningPromotion.objects.exists()  # nothing scanned inside the request
    for callback in callbacks:  # the commit: the task runs (eagerly here)
        callback()
    run = world.client("admin").get(f"{RUNS}/{body['id']}").json()
    assert (run["status"], run["step"], run["total"], run["error"]) == ("succeeded", 1, 1, "")
    assert run["report"] == {"task_example": {"eligible": 2, "proposed": 2}}
    assert run["started_at"] is not None
    assert run["finished_at"] is not None
    assert LearningPromotion.objects.filter(promotion_type="task_example").count() == 2


def test_a_second_request_while_one_is_open_returns_the_same_run(world, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        first = queue(world)
        second = queue(world)
    assert second.status_code == 202
    assert second.json()["id"] == first.json()["id"]
    assert ScanRun.objects.count() == 1
    with django_capture_on_commit_callbacks(execute=False):
        other = queue(world, scanner="retrieval")  # another scanner has its own slot
    assert other.json()["id"] != first.json()["id"]


def test_the_database_keeps_one_open_run_per_scanner(world):
    ScanRun.objects.create(scanner="all")
    with pytest.raises(IntegrityError), transaction.atomic():
        ScanRun.objects.create(scanner="all", status="running")


def test_running_the_task_twice_changes_nothing(world, django_capture_on_commit_callbacks):
    rate_tasks(world)
    with django_capture_on_commit_callbacks(execute=True):
        run_id = queue(world).json()["id"]
    done = ScanRun.objects.get()
    tasks.scan_run(run_id)
    again = ScanRun.objects.get()
    assert (again.status, again.report, again.finished_at) == ("succeeded", done.report, done.finished_at)
    assert LearningPromotion.objects.count() == 2
    tasks.scan_run("00000000-0000-0000-0000-000000000000")  # a missing run: nothing happens


def test_a_failing_scanner_fails_the_run_with_its_error(world, monkeypatch, django_capture_on_commit_callbacks):
    rate_tasks(world)

    def broken(**kwargs):
        raise RuntimeError("embedding backend unreachable")

    monkeypatch.setitem(SCANNERS, "agent_learning", broken)
    with django_capture_on_commit_callbacks(execute=True):
        run_id = queue(world, scanner="all").json()["id"]
    run = world.client("admin").get(f"{RUNS}/{run_id}").json()
    assert run["status"] == "failed"
    assert run["error"] == "RuntimeError: embedding backend unreachable"
    assert run["finished_at"] is not None
    # The scanner before it finished and keeps its report; the one after it never ran.
    assert set(run["report"]) == {"retrieval"}
    # The slot is free again: the next request queues a new run.
    with django_capture_on_commit_callbacks(execute=False):
        assert queue(world, scanner="all").json()["id"] != run_id


@pytest.mark.parametrize("status", ["queued", "running"])
def test_a_lost_run_stops_holding_its_scanner(world, settings, status, django_capture_on_commit_callbacks):
    settings.SCAN_RUN_STALE_SECONDS = 600
    an_hour_ago = timezone.now() - timedelta(hours=1)
    lost = ScanRun.objects.create(scanner="task_example", status=status)
    ScanRun.objects.filter(pk=lost.pk).update(
        created_at=an_hour_ago, started_at=an_hour_ago if status == "running" else None
    )
    recent = ScanRun.objects.create(scanner="retrieval", status="running", started_at=timezone.now())
    ScanRun.objects.filter(pk=recent.pk).update(created_at=an_hour_ago)  # queued long, started just now
    with django_capture_on_commit_callbacks(execute=False):
        fresh = queue(world).json()
        assert queue(world, scanner="retrieval").json()["id"] == str(recent.pk)  # still running: kept
    assert fresh["id"] != str(lost.pk)
    lost.refresh_from_db()
    assert (lost.status, lost.error) == ("failed", "Abandoned: not finished within 600 seconds.")
    assert lost.finished_at is not None


def test_scheduled_scans_go_through_a_run(world):
    rate_tasks(world, n=1)
    assert tasks.task_example_scan() == {"task_example": {"eligible": 1, "proposed": 1}}
    run = ScanRun.objects.get()
    assert (run.scanner, run.status, run.requested_by) == ("task_example", "succeeded", None)
    body = world.client("admin").get(RUNS).json()
    assert [r["id"] for r in body["results"]] == [str(run.pk)]
    assert body["results"][0]["requested_by"] is None


def test_runs_are_listed_latest_first_and_filtered(world):
    for scanner in ("retrieval", "task_example", "all"):
        scans.scan_run_request(actor=world.actor("admin"), scanner=scanner, enqueue=False)
    body = world.client("admin").get(RUNS).json()
    assert [r["scanner"] for r in body["results"]] == ["all", "task_example", "retrieval"]
    assert {"next", "previous"} <= set(body)
    filtered = world.client("admin").get(RUNS, {"scanner": "retrieval"}).json()
    assert [r["scanner"] for r in filtered["results"]] == ["retrieval"]


@pytest.mark.parametrize(("role", "expected"), [("anonymous", 401), ("owner", 403), ("service", 403), ("admin", 202)])
def test_queueing_a_scan_is_for_staff(world, role, expected, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        assert queue(world, role=role).status_code == expected
    assert ScanRun.objects.count() == (1 if expected == 202 else 0)


@pytest.mark.parametrize(("role", "expected"), [("anonymous", 401), ("owner", 403), ("service", 403), ("admin", 200)])
def test_reading_scan_runs_is_for_staff(world, role, expected):
    run, _ = scans.scan_run_request(actor=world.actor("admin"), scanner="all", enqueue=False)
    client = world.client(role)
    assert client.get(RUNS).status_code == expected
    assert client.get(f"{RUNS}/{run.pk}").status_code == expected


def test_an_unknown_run_is_a_404(world):
    assert world.client("admin").get(f"{RUNS}/00000000-0000-0000-0000-000000000000").status_code == 404


@pytest.mark.parametrize("body", [{"scanner": "everything"}, {"scanner": ""}, {"scanner": 3}])
def test_an_unknown_scanner_is_a_400_naming_the_accepted_ones(world, body):
    response = world.client("admin").post(SCAN, body, format="json")
    assert response.status_code == 400
    (message,) = response.json()["error"]["fields"]["scanner"]
    assert message == f'"{body["scanner"]}" is not a valid choice. Choose one of: {", ".join(Scanner.values)}.'
    assert not ScanRun.objects.exists()


def test_unknown_fields_are_refused(world):
    response = world.client("admin").post(SCAN, {"scanner": "all", "force": True}, format="json")
    assert response.status_code == 400
    assert "force" in response.json()["error"]["fields"]
    assert not ScanRun.objects.exists()


def test_a_run_that_cannot_be_enqueued_fails_at_once(world, monkeypatch, django_capture_on_commit_callbacks):
    def unreachable(*args, **kwargs):
        raise ConnectionError("broker down")

    monkeypatch.setattr(tasks.scan_run, "delay", unreachable)
    with django_capture_on_commit_callbacks(execute=True):
        assert queue(world).status_code == 202
    run = ScanRun.objects.get()
    assert (run.status, run.error) == ("failed", "Could not reach the task queue; ask again.")
