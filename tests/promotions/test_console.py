"""The review console: staff only, a fixed number of queries per page, actions through the services."""

from __future__ import annotations

import itertools

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from feedback.services.task_feedback import task_feedback_record
from promotions import scans, services
from promotions.models import LearningPromotion, ScanRun
from promotions.scanners import SCANNERS

_titles = itertools.count()


def propose_tasks(world, n):
    for i in range(n):
        # Distinct titles in words: a random hex title ("Task 1f64...") is gibberish the steering check flags
        # now and then (2 of 400 at 0.50), which refused the proposal and failed the test by chance.
        number = next(_titles)
        feedback, _ = task_feedback_record(
            actor=world.actor("owner"),
            task_snapshot={"id": f"t{i}", "title": f"Weekly site report {number}", "description": "Write it up"},
            rating="good",
        )
        services.promotion_propose(
            actor=world.actor("admin"),
            promotion_type="task_example",
            subject_type="task_feedback",
            subject_id=str(feedback.pk),
        )


@pytest.mark.parametrize("who", ["anonymous", "owner"])
def test_console_is_staff_only(world, who):
    client = Client()
    if who != "anonymous":
        client.force_login(world.owner)
    response = client.get("/console/promotions/")
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]
    assert client.post("/console/promotions/scan").status_code == 302


def test_list_page_runs_a_fixed_number_of_queries(world):
    client = world.session_client("admin")
    propose_tasks(world, 1)
    scans.scan_run_request(actor=world.actor("admin"), scanner="all", enqueue=False)
    with CaptureQueriesContext(connection) as few:
        assert client.get("/console/promotions/").status_code == 200
    propose_tasks(world, 25)
    with CaptureQueriesContext(connection) as many:
        response = client.get("/console/promotions/?per_page=50")
    assert response.content.count(b'<tr data-role="promotion-row"') == 26
    assert len(many) == len(few)


def test_detail_actions_and_audit(world):
    propose_tasks(world, 1)
    promotion = LearningPromotion.objects.get()
    client = world.session_client("admin")
    page = client.get(f"/console/promotions/{promotion.pk}/")
    assert page.status_code == 200
    assert b"Proposed by admin" in page.content  # the audit trail, in words
    response = client.post(f"/console/promotions/{promotion.pk}/approve", {"notes": "<b>looks right</b>"}, follow=True)
    assert LearningPromotion.objects.get().status == "approved"
    assert b"&lt;b&gt;looks right&lt;/b&gt;" in response.content  # notes are escaped
    response = client.post(f"/console/promotions/{promotion.pk}/resume", follow=True)
    assert b"Cannot resume a promotion that is approved" in response.content
    assert client.post(f"/console/promotions/{promotion.pk}/explode").status_code == 404


def test_generate_queues_a_scan_and_the_list_shows_its_report(world, django_capture_on_commit_callbacks):
    client = world.session_client("admin")
    task_feedback_record(
        actor=world.actor("owner"),
        task_snapshot={"id": "t", "title": "Draft the Q3 memo", "description": "Spend per line"},
        rating="good",
        completed=True,
    )
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/console/promotions/scan")
    assert response.status_code == 302
    assert response["Location"] == "/console/promotions/"
    run = ScanRun.objects.get()
    assert (run.scanner, run.status, run.requested_by) == ("all", "succeeded", world.admin)
    page = client.get("/console/promotions/").content.decode()
    assert "Scan queued." in page
    assert '<span data-role="scan-status">succeeded</span>' in page
    assert "Task examples: 1 proposed." in page
    assert "Retrieval: 0 boosts and 0 penalties proposed" in page
    assert 'http-equiv="refresh"' not in page  # nothing left to follow


def test_the_list_follows_an_open_scan(world, django_capture_on_commit_callbacks):
    client = world.session_client("admin")
    with django_capture_on_commit_callbacks(execute=False):
        client.post("/console/promotions/scan")
        again = client.post("/console/promotions/scan", follow=True).content.decode()
    assert ScanRun.objects.count() == 1
    assert "A scan is already queued or running." in again
    assert '<span data-role="scan-status">queued</span>' in again
    assert f"0 of {len(SCANNERS)} scanners done" in again
    assert '<meta http-equiv="refresh" content="3">' in again  # the page refreshes until the scan finishes
