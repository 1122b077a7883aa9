"""The promotion ledger: state machine, audit trail, access rules, concurrency, task examples."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from feedback.models import FeedbackEvent, TaskFeedback
from feedback.services.task_feedback import task_feedback_record
from promotions import services
from promotions.models import LearningPromotion
from tests.concurrency import at_once

URL = "/api/v1/promotions"


@pytest.fixture
def good_task(world):
    snapshot = {"id": "t1", "title": "Call Acme", "description": "Ask about the renewal"}
    feedback, _ = task_feedback_record(
        actor=world.actor("owner"), task_snapshot=snapshot, rating="good", project_slug="apollo"
    )
    return feedback


@pytest.fixture
def candidate(world, good_task):
    promotion, _ = services.promotion_propose(
        actor=world.actor("admin"),
        promotion_type="task_example",
        subject_type="task_feedback",
        subject_id=str(good_task.pk),
        confidence=0.8,
    )
    return promotion


def audit_trail(promotion):
    return list(
        FeedbackEvent.objects.filter(subject_type="promotion", subject_id=str(promotion.pk))
        .order_by("created_at")
        .values_list("event_type", flat=True)
    )


def act(world, promotion, action, role="admin", **body):
    return world.client(role).post(f"{URL}/{promotion.pk}/{action}", body, format="json")


def test_full_lifecycle_applies_and_audits_every_step(world, candidate, good_task):
    assert act(world, candidate, "approve", notes="a clear example").json()["status"] == "approved"
    applied = act(world, candidate, "apply").json()
    assert applied["status"] == "applied"
    assert (applied["destination_table"], applied["destination_record_id"]) == ("ai_task_feedback", str(good_task.pk))
    assert TaskFeedback.objects.get(pk=good_task.pk).promoted is True
    assert act(world, candidate, "pause").json()["status"] == "paused"
    assert TaskFeedback.objects.get(pk=good_task.pk).promoted is False
    assert act(world, candidate, "resume").json()["status"] == "applied"
    assert TaskFeedback.objects.get(pk=good_task.pk).promoted is True
    assert act(world, candidate, "supersede", notes="replaced").json()["status"] == "superseded"
    assert TaskFeedback.objects.get(pk=good_task.pk).promoted is False
    assert audit_trail(candidate) == [
        "promotion_propose",
        "promotion_approve",
        "promotion_apply",
        "promotion_pause",
        "promotion_resume",
        "promotion_supersede",
    ]
    approve = FeedbackEvent.objects.get(event_type="promotion_approve")
    assert (approve.user_id, approve.free_text, approve.before_snapshot, approve.after_snapshot) == (
        world.admin.pk,
        "a clear example",
        {"status": "candidate"},
        {
            "status": "approved",
            "promotion_path": "human_review",
            "rule": "human_review: proposed for a person to decide",
        },
    )
    assert approve.metadata == {
        "promotion_path": "human_review",
        "rule": "human_review: proposed for a person to decide",
    }
    row = LearningPromotion.objects.get(pk=candidate.pk)
    assert (row.reviewed_by, row.review_notes) == (world.admin, "replaced")


@pytest.mark.parametrize(
    ("setup", "action"),
    [
        ([], "apply"),
        ([], "pause"),
        ([], "resume"),
        (["reject"], "apply"),
        (["reject"], "approve"),
        (["approve"], "approve"),
        (["approve", "apply"], "reject"),
        (["approve", "apply", "supersede"], "resume"),
    ],
)
def test_illegal_transitions_are_refused_clearly(world, candidate, setup, action):
    for step in setup:
        assert act(world, candidate, step).status_code == 200
    before = LearningPromotion.objects.get(pk=candidate.pk).status
    response = act(world, candidate, action)
    assert response.status_code == 409
    assert "status" in response.json()["error"]["fields"]
    assert f"Cannot {action}" in response.json()["error"]["message"]
    assert LearningPromotion.objects.get(pk=candidate.pk).status == before


def test_one_open_candidate_per_subject(world, candidate, good_task):
    again, created = services.promotion_propose(
        actor=world.actor("admin"),
        promotion_type="task_example",
        subject_type="task_feedback",
        subject_id=str(good_task.pk),
    )
    assert (again.pk, created) == (candidate.pk, False)
    response = world.client("admin").post(
        URL, {"promotion_type": "task_example", "subject_id": str(good_task.pk)}, format="json"
    )
    assert response.status_code == 200
    assert LearningPromotion.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_admins_approving_at_once_one_wins(world, candidate):
    if connection.vendor != "postgresql":
        pytest.skip("row locks are PostgreSQL's; the PostgreSQL run covers this")
    results = at_once(
        lambda: services.promotion_transition(
            actor=world.actor("admin"), promotion_id=str(candidate.pk), action="approve"
        )
    )
    assert sorted(type(r).__name__ for r in results) == ["Conflict", "LearningPromotion"]
    assert audit_trail(candidate).count("promotion_approve") == 1


def test_a_vanished_destination_is_a_clear_error_not_a_crash(world, candidate, good_task):
    act(world, candidate, "approve")
    TaskFeedback.objects.filter(pk=good_task.pk).delete()
    response = act(world, candidate, "apply")
    assert response.status_code == 409
    assert "no longer exists" in response.json()["error"]["message"]
    assert LearningPromotion.objects.get(pk=candidate.pk).status == "approved"
    failed = FeedbackEvent.objects.filter(subject_id=str(candidate.pk), event_type="promotion_apply").get()
    assert (failed.signal, failed.after_snapshot["status"]) == ("failed", "approved")
    assert "no longer exists" in failed.after_snapshot["error"]


def test_expiry_is_set_based_and_audited(world, candidate):
    LearningPromotion.objects.filter(pk=candidate.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    assert services.promotions_expire() == 1
    assert LearningPromotion.objects.get(pk=candidate.pk).status == "expired"
    assert audit_trail(candidate)[-1] == "promotion_expire"
    assert services.promotions_expire() == 0


@pytest.mark.parametrize("role", ["owner", "member", "other", "service"])
def test_only_staff_admins_reach_the_ledger(world, candidate, role):
    client = world.client(role)
    assert client.get(URL).status_code == 403
    assert client.get(f"{URL}/{candidate.pk}").status_code == 403
    assert act(world, candidate, "approve", role=role).status_code == 403
    assert LearningPromotion.objects.get(pk=candidate.pk).status == "candidate"


def test_list_filters_and_detail(world, candidate, django_assert_max_num_queries):
    client = world.client("admin")
    with django_assert_max_num_queries(4):
        body = client.get(URL, {"status": "candidate"}).json()
    assert [row["id"] for row in body["results"]] == [str(candidate.pk)]
    assert client.get(URL, {"status": "applied"}).json()["results"] == []
    assert client.get(URL, {"status": "bogus"}).status_code == 400
    assert client.get(f"{URL}/{candidate.pk}").json()["subject_type"] == "task_feedback"
    assert client.get(f"{URL}/00000000-0000-0000-0000-000000000000").status_code == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"promotion_type": "nope", "subject_id": "x"}, "promotion_type"),
        ({"promotion_type": "task_example"}, "subject_id"),
        ({"promotion_type": "task_example", "subject_id": "not-a-uuid"}, "subject_id"),
        ({"promotion_type": "task_example", "subject_id": "00000000-0000-0000-0000-000000000000"}, "subject_id"),
        ({"promotion_type": "task_example", "subject_id": "x", "confidence": 2}, "confidence"),
    ],
)
def test_bad_proposals_are_named(world, body, field):
    response = world.client("admin").post(URL, body, format="json")
    assert response.status_code == 400
    assert field in response.json()["error"]["fields"]
    assert not LearningPromotion.objects.exists()


def test_a_badly_rated_task_cannot_become_an_example(world):
    feedback, _ = task_feedback_record(actor=world.actor("owner"), task_snapshot={"id": "t2"}, rating="bad")
    response = world.client("admin").post(
        URL, {"promotion_type": "task_example", "subject_id": str(feedback.pk)}, format="json"
    )
    assert response.status_code == 400
    assert "good" in response.json()["error"]["message"]


def test_bad_action_input(world, candidate):
    assert act(world, candidate, "approve", notes=5).status_code == 400
    assert act(world, candidate, "approve", extra="x").status_code == 400
    response = act(world, candidate, "supersede", superseded_by=str(candidate.pk))
    assert response.status_code == 400
    assert "superseded_by" in response.json()["error"]["fields"]
