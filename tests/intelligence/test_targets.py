"""Target profiles: who may create and change them, and what a profile may hold."""

from __future__ import annotations

import pytest

from accounts.models import ProjectMembership
from intelligence.models import IntelligenceTarget
from tests import factories
from tests.access.test_matrix import database_state

pytestmark = pytest.mark.django_db
API = "/api/v1/intelligence/targets"


@pytest.fixture
def project_admin(world):
    """A project admin of apollo (not staff), with an API key."""
    ProjectMembership.objects.filter(project=world.project, user=world.member).update(role=ProjectMembership.Role.ADMIN)
    return world.client("member")


def test_a_project_admin_creates_a_scope_with_its_profile_and_members_read_it(world, project_admin):
    response = project_admin.post(
        API,
        {
            "project": "apollo",
            "name": "  Tower   B ",
            "kind": "building",
            "aliases": ["Tower B", "tower-b", "Block Bravo"],
            "external_ids": ["P-1042"],
            "participants": ["dana@buildco.example"],
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["slug"], body["name"], body["kind"]) == ("tower-b", "Tower B", "building")
    assert body["aliases"] == ["Tower B", "Block Bravo"]  # "tower-b" is "Tower B" when matched
    assert world.client("owner").get(f"{API}/{body['id']}").json()["external_ids"] == ["P-1042"]
    assert world.client("other").get(f"{API}/{body['id']}").status_code == 404
    patched = project_admin.patch(f"{API}/{body['id']}", {"active": False, "aliases": ["TB-2"]}, format="json")
    assert (patched.status_code, patched.json()["active"], patched.json()["aliases"]) == (200, False, ["TB-2"])


def test_a_member_who_is_not_an_admin_of_the_project_is_refused(world):
    before = database_state()
    response = world.client("owner").post(API, {"project": "apollo", "name": "Tower B"}, format="json")
    assert response.status_code == 403
    assert database_state() == before


def test_an_explicit_id_names_one_project_only(world):
    factories.IntelligenceTargetFactory(project=factories.ProjectFactory(slug="harbour"), external_ids=["P 1042"])
    response = world.client("admin").post(
        API, {"project": "apollo", "name": "Apollo", "kind": "project", "external_ids": ["p-1042"]}, format="json"
    )
    assert response.status_code == 400
    assert "harbour" in response.json()["error"]["fields"]["external_ids"][0]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "Tower B"}, "project"),
        ({"project": "nowhere", "name": "Tower B"}, "project"),
        ({"project": "apollo"}, "name"),
        ({"project": "apollo", "name": "   "}, "name"),
        ({"project": "apollo", "name": "Tower B", "kind": "planet"}, "kind"),
        ({"project": "apollo", "name": "Tower B", "slug": "Tower B!"}, "slug"),
        ({"project": "apollo", "name": "Tower B", "aliases": "Tower B"}, "aliases"),
        ({"project": "apollo", "name": "Tower B", "aliases": ["B"]}, "aliases"),
        ({"project": "apollo", "name": "Tower B", "aliases": [3]}, "aliases"),
        ({"project": "apollo", "name": "Tower B", "external_ids": ["--"]}, "external_ids"),
        ({"project": "apollo", "name": "Tower B", "addresses": ["x" * 201]}, "addresses"),
        ({"project": "apollo", "name": "Tower B", "colour": "red"}, "colour"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_writes_nothing(world, body, field):
    before = database_state()
    response = world.client("admin").post(API, body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["error"]["fields"]
    assert database_state() == before


@pytest.mark.parametrize(
    ("body", "field"),
    [({"active": "no"}, "active"), ({"name": ""}, "name"), ({"participants": [""]}, "participants")],
)
def test_bad_changes_are_a_400_naming_the_field(world, body, field):
    target = factories.IntelligenceTargetFactory(project=world.project, aliases=["Apollo"])
    before = database_state()
    response = world.client("admin").patch(f"{API}/{target.pk}", body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["error"]["fields"]
    assert database_state() == before


def test_a_second_target_with_the_same_slug_or_a_second_root_is_a_conflict(world):
    client = world.client("admin")
    assert (
        client.post(API, {"project": "apollo", "name": "Apollo", "kind": "project"}, format="json").status_code == 201
    )
    again = client.post(API, {"project": "apollo", "name": "Apollo two", "kind": "project"}, format="json")
    assert again.status_code == 409
    assert IntelligenceTarget.objects.count() == 1


def test_the_list_filters_by_project_and_follows_membership(world):
    mine = factories.IntelligenceTargetFactory(project=world.project)
    theirs = factories.IntelligenceTargetFactory()
    rows = world.client("owner").get(API).json()["results"]
    assert [row["id"] for row in rows] == [mine.pk]
    everything = world.client("admin").get(API, {"project": theirs.project.slug}).json()["results"]
    assert [row["id"] for row in everything] == [theirs.pk]
