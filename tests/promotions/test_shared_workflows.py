"""Sharing a learned workflow with a project through the ledger: who may ask, bad input (nothing
written), and the shared copy reaching the project's members' context once applied."""

from __future__ import annotations

import pytest

from learning.models import LearnedWorkflow
from promotions.models import LearningPromotion
from promotions.services import promotion_transition
from tests.factories import LearnedWorkflowFactory, MembershipFactory, ProjectFactory

REQUEST = "write the weekly status report for the apollo rollout"


@pytest.fixture
def workflow(world):
    return LearnedWorkflowFactory(
        user=world.owner,
        workflow_name="Write the weekly status report",
        trigger_pattern="write the weekly status report",
        example_input="write the weekly status report",
    )


def share(client, workflow_id, **body):
    return client.post(f"/api/v1/workflows/{workflow_id}/share", body, format="json")


@pytest.mark.parametrize(
    ("role", "on_behalf_of", "expected"),
    [
        ("anonymous", None, 401),
        ("member", None, 404),
        ("other", None, 404),
        ("admin", None, 404),
        ("service", None, 400),
        ("service", "ext-other", 404),
        ("owner", None, 201),
        ("service", "ext-owner", 201),
    ],
)
def test_share_access(world, workflow, role, on_behalf_of, expected):
    response = share(world.client(role, on_behalf_of=on_behalf_of), workflow.pk, visibility="project", project="apollo")
    assert response.status_code == expected, response.content
    if expected != 201:
        assert not LearningPromotion.objects.exists()
        return
    promotion = LearningPromotion.objects.get()
    assert (promotion.promotion_type, promotion.subject_type, promotion.subject_id) == (
        "workflow",
        "workflow",
        str(workflow.pk),
    )
    assert promotion.proposed_learning["workflow_name"] == "Write the weekly status report"
    assert LearnedWorkflow.objects.count() == 1  # nothing shared before review


@pytest.mark.parametrize(
    ("body", "expected", "field"),
    [
        ({"visibility": "project"}, 400, "project"),
        ({"visibility": "project", "project": "zeus"}, 403, "project"),
        ({"visibility": "project", "project": "atlantis"}, 400, "project"),
        ({"visibility": "private"}, 400, "visibility"),
        ({}, 400, "visibility"),
        ({"visibility": "team", "notes": 5}, 400, "notes"),
    ],
)
def test_share_bad_input_writes_nothing(world, workflow, body, expected, field):
    ProjectFactory(slug="zeus")
    response = share(world.client("owner"), workflow.pk, **body)
    assert response.status_code == expected, response.content
    assert field in response.json()["error"]["fields"]
    assert not LearningPromotion.objects.exists()


def test_unknown_or_shared_copy_is_not_found(world, workflow):
    assert share(world.client("owner"), workflow.pk + 1000, visibility="team").status_code == 404
    copy = LearnedWorkflowFactory(user=world.owner, visibility="project", project=world.project)
    assert share(world.client("owner"), copy.pk, visibility="team").status_code == 404
    assert not LearningPromotion.objects.exists()


def test_applied_share_reaches_the_project_members_context_only(world, workflow, django_capture_on_commit_callbacks):
    MembershipFactory(project=ProjectFactory(slug="other-project"), user=world.other)
    promotion_id = share(world.client("owner"), workflow.pk, visibility="project", project="apollo").json()[
        "promotion_id"
    ]

    def member_context(role, project="apollo"):
        response = world.client(role).get("/api/v1/context", {"project": project, "message": REQUEST})
        assert response.status_code == 200, response.content
        return response.json()

    assert member_context("member")["workflow"] is None
    with django_capture_on_commit_callbacks(execute=True):
        for action in ("approve", "apply"):
            promotion_transition(actor=world.actor("admin"), promotion_id=str(promotion_id), action=action)
    copy = LearnedWorkflow.objects.get(promotion_id=promotion_id)
    assert (copy.visibility, copy.project, copy.shared_from) == ("project", world.project, workflow)
    seen = member_context("member")
    assert seen["workflow"]["id"] == copy.pk
    assert "[Known Workflow: Write the weekly status report]" in seen["text"]
    assert member_context("other", project="other-project")["workflow"] is None
    # The owner keeps matching their own private workflow, not the copy as well.
    assert member_context("owner")["workflow"]["id"] in (workflow.pk, copy.pk)
    with django_capture_on_commit_callbacks(execute=True):
        promotion_transition(actor=world.actor("admin"), promotion_id=str(promotion_id), action="pause")
    assert member_context("member")["workflow"] is None
