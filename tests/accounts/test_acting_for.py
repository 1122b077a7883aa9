"""A service key acting for a user has that user's rights; service keys limited to projects; a user
named by X-On-Behalf-Of is created by their first successful write only, and never when inactive."""

from __future__ import annotations

import io
import uuid

import pytest
from django.core.management import CommandError, call_command

from accounts.models import ApiKey, User
from accounts.selectors import auth_cache_clear, user_exists_by_external_id
from feedback.models import FeedbackEvent
from tests.factories import (
    ChunkFactory,
    DocumentFactory,
    FeedbackEventFactory,
    MemoryFactory,
    ProjectFactory,
    RetrievalFeedbackFactory,
    TaskFeedbackFactory,
)

EVENTS = "/api/v1/feedback/events"
TASKS = "/api/v1/feedback/tasks"
SEARCH = "/api/v1/retrieval/search"
RESULTS = "/api/v1/retrieval/feedback"
DOCUMENTS = "/api/v1/retrieval/documents"
PROJECTS = "/api/v1/projects"
EVENT = {"event_type": "thumbs", "event_family": "assistant_response", "signal": "positive"}


def limit(world, *slugs: str) -> None:
    response = world.client("admin").put(
        f"/api/v1/api-keys/{world.service_key.pk}/projects", {"projects": list(slugs)}, format="json"
    )
    assert response.status_code == 200, response.content
    assert response.json()["projects"] == sorted(slugs)


@pytest.fixture
def apollo_chunk(world):
    return ChunkFactory(document=DocumentFactory(id="apollo-doc", project=world.project))


def test_acting_for_an_outsider_does_not_search_the_project(world, apollo_chunk, embedder):
    as_other = world.client("service", on_behalf_of="ext-other")
    found = as_other.post(SEARCH, {"query": "wing flutter tests", "k": 50}, format="json")
    assert found.status_code == 200
    assert apollo_chunk.chunk_id not in {hit["chunk_id"] for hit in found.json()["results"]}
    refused = as_other.post(SEARCH, {"query": "wing flutter tests", "project": "apollo"}, format="json")
    assert refused.status_code == 403
    assert "project" in refused.json()["error"]["fields"]
    # The same service as itself still reads everything.
    itself = world.client("service").post(SEARCH, {"query": "wing flutter tests", "k": 50}, format="json")
    assert apollo_chunk.chunk_id in {hit["chunk_id"] for hit in itself.json()["results"]}


def test_acting_for_one_user_cannot_mark_anothers_search_results(world, apollo_chunk):
    result = RetrievalFeedbackFactory(trace__user=world.owner, trace__project=world.project, chunk=apollo_chunk)
    body = {"trace_id": str(result.trace_id), "results": [{"chunk_id": apollo_chunk.chunk_id, "cited": True}]}
    assert world.client("service", on_behalf_of="ext-member").post(RESULTS, body, format="json").status_code == 404
    result.refresh_from_db()
    assert result.cited is not True
    assert world.client("service", on_behalf_of="ext-owner").post(RESULTS, body, format="json").status_code == 200


def test_acting_for_a_user_reads_only_their_events_and_tasks(world):
    private = FeedbackEventFactory(user=world.owner, project=world.project, private=True)
    task = TaskFeedbackFactory(user=world.owner, project=world.project)
    as_other = world.client("service", on_behalf_of="ext-other")
    assert as_other.get(EVENTS).json()["results"] == []
    assert as_other.get(f"{EVENTS}/{private.pk}").status_code == 404
    assert as_other.get(f"{TASKS}/{task.pk}").status_code == 404
    as_member = world.client("service", on_behalf_of="ext-member")
    assert as_member.get(f"{EVENTS}/{private.pk}").status_code == 404  # private: its owner's only
    assert as_member.get(f"{TASKS}/{task.pk}").status_code == 200  # a project member's read


def test_acting_for_a_user_writes_only_as_them(world):
    response = world.client("service", on_behalf_of="ext-other").post(
        EVENTS, EVENT | {"user_id": world.owner.pk}, format="json"
    )
    assert response.status_code == 403
    refused = world.client("service", on_behalf_of="ext-other").post(
        EVENTS, EVENT | {"project": "apollo"}, format="json"
    )
    assert refused.status_code == 403
    assert FeedbackEvent.objects.count() == 0


def test_acting_for_a_staff_user_is_not_the_console(world):
    admin = world.admin
    admin.external_id = "ext-admin"
    admin.save()
    response = world.client("service", on_behalf_of="ext-admin").get("/api/v1/promotions")
    assert response.status_code == 403
    me = world.client("service", on_behalf_of="ext-admin").get("/api/v1/me").json()
    assert me["is_admin"] is False
    assert me["acting_for"] is True
    assert me["is_service"] is True


def test_a_failed_first_write_creates_no_user(world):
    bad = world.client("service", on_behalf_of="crm-1").post(EVENTS, {"event_family": "nope"}, format="json")
    assert bad.status_code == 400
    refused = world.client("service", on_behalf_of="crm-1").post(EVENTS, EVENT | {"project": "apollo"}, format="json")
    assert refused.status_code == 403
    assert world.client("service", on_behalf_of="crm-1").get(EVENTS).status_code == 200
    assert not User.objects.filter(external_id="crm-1").exists()
    ok = world.client("service", on_behalf_of="crm-1").post(EVENTS, EVENT, format="json")
    assert ok.status_code == 201
    assert ok.json()["user_id"] == User.objects.get(external_id="crm-1").pk


def test_a_known_user_is_recognised_from_the_memo_without_a_query(world, django_assert_num_queries):
    auth_cache_clear()
    assert user_exists_by_external_id(external_id="ext-owner") is True  # read once, then memoised
    with django_assert_num_queries(0):
        assert user_exists_by_external_id(external_id="ext-owner") is True
    assert user_exists_by_external_id(external_id="nobody-yet") is False


def test_an_inactive_user_is_never_acted_for(world):
    client = world.client("service", on_behalf_of="ext-owner")
    assert client.get("/api/v1/me").status_code == 200  # cached as active
    world.owner.is_active = False
    world.owner.save()
    for response in (client.get("/api/v1/me"), client.post(EVENTS, EVENT, format="json")):
        assert response.status_code == 403
        assert "X-On-Behalf-Of" in response.json()["error"]["fields"]
    assert FeedbackEvent.objects.count() == 0


# --- service keys limited to projects --------------------------------------------------------


def test_a_limited_service_key_sees_and_writes_its_projects_only(world, apollo_chunk, embedder):
    gemini = ProjectFactory(slug="gemini")
    inside = FeedbackEventFactory(user=world.owner, project=world.project)
    outside = FeedbackEventFactory(user=world.owner, project=gemini)
    unscoped = FeedbackEventFactory(user=world.owner, project=None)
    gemini_chunk = ChunkFactory(document=DocumentFactory(id="gemini-doc", project=gemini))
    limit(world, "apollo")
    service = world.client("service")
    assert [p["slug"] for p in service.get(PROJECTS).json()] == ["apollo"]
    seen = {e["id"] for e in service.get(EVENTS).json()["results"]}
    assert str(inside.pk) in seen
    assert str(outside.pk) not in seen
    assert str(unscoped.pk) not in seen
    assert service.post(EVENTS, EVENT | {"project": "gemini"}, format="json").status_code == 403
    assert service.post(EVENTS, EVENT, format="json").status_code == 403  # no project: outside its limit
    assert service.post(EVENTS, EVENT | {"project": "apollo"}, format="json").status_code == 201
    hits = service.post(SEARCH, {"query": "wing flutter tests", "k": 50}, format="json").json()["results"]
    assert gemini_chunk.chunk_id not in {h["chunk_id"] for h in hits}
    assert service.post(SEARCH, {"query": "wing", "project": "gemini"}, format="json").status_code == 403
    document = {"id": "d", "raw_text": "Some text.", "project": "gemini"}
    assert service.post(DOCUMENTS, {"documents": [document]}, format="json").status_code == 403


def test_a_limited_key_acting_for_a_user_stays_within_its_projects(world):
    gemini = ProjectFactory(slug="gemini")
    world.owner.memberships.create(project=gemini)
    outside = FeedbackEventFactory(user=world.owner, project=gemini)
    own_unscoped = FeedbackEventFactory(user=world.owner, project=None)
    limit(world, "apollo")
    acting = world.client("service", on_behalf_of="ext-owner")
    seen = {e["id"] for e in acting.get(EVENTS).json()["results"]}
    assert str(own_unscoped.pk) in seen
    assert str(outside.pk) not in seen
    assert acting.post(EVENTS, EVENT | {"project": "gemini"}, format="json").status_code == 403
    context = acting.get("/api/v1/context", {"project": "gemini", "message": "hi"})
    assert context.status_code == 403
    assert acting.get("/api/v1/context", {"project": "apollo", "message": "hi"}).status_code == 200


def test_lifting_the_limit_takes_effect_at_once(world):
    gemini = ProjectFactory(slug="gemini")
    limit(world, "apollo")
    service = world.client("service")
    assert service.post(EVENTS, EVENT | {"project": "gemini"}, format="json").status_code == 403
    limit(world)
    assert service.post(EVENTS, EVENT | {"project": gemini.slug}, format="json").status_code == 201


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"projects": ["nope"]}, 400, "projects"),
        ({"projects": "apollo"}, 400, "projects"),
        ({}, 400, "projects"),
        ({"projects": [None]}, 400, "projects"),
    ],
)
def test_bad_project_limits_are_named(world, body, status, field):
    response = world.client("admin").put(f"/api/v1/api-keys/{world.service_key.pk}/projects", body, format="json")
    assert response.status_code == status
    assert field in response.json()["error"]["fields"]
    assert not world.service_key.projects.exists()


def test_only_service_keys_are_limited(world):
    user_key = world.owner.api_keys.get()
    response = world.client("admin").put(
        f"/api/v1/api-keys/{user_key.pk}/projects", {"projects": ["apollo"]}, format="json"
    )
    assert response.status_code == 400
    created = world.client("admin").post(
        "/api/v1/api-keys", {"name": "x", "kind": "user", "projects": ["apollo"]}, format="json"
    )
    assert created.status_code == 400
    service = world.client("admin").post(
        "/api/v1/api-keys", {"name": "apollo-backend", "kind": "service", "projects": ["apollo"]}, format="json"
    )
    assert service.status_code == 201
    assert service.json()["projects"] == ["apollo"]
    missing = "/api/v1/api-keys/00000000-0000-0000-0000-000000000000/projects"
    assert world.client("admin").put(missing, {"projects": []}, format="json").status_code == 404


def test_the_command_and_the_admin_set_the_limit(world):
    out = io.StringIO()
    call_command("create_api_key", "--user", "admin", "--service", "--project", "apollo", stdout=out)
    key = ApiKey.objects.get(name="cli")
    assert list(key.projects.values_list("slug", flat=True)) == ["apollo"]
    with pytest.raises(CommandError, match="No project"):
        call_command("create_api_key", "--user", "admin", "--service", "--project", "nope")
    admin = world.session_client("admin")
    change = f"/admin/accounts/apikey/{world.service_key.pk}/change/"
    assert admin.post(change, {"projects": [world.project.pk]}).status_code == 302
    assert list(world.service_key.projects.all()) == [world.project]
    assert world.client("service").post(EVENTS, EVENT, format="json").status_code == 403  # at once
    user_key = world.owner.api_keys.get()
    refused = admin.post(f"/admin/accounts/apikey/{user_key.pk}/change/", {"projects": [world.project.pk]})
    assert refused.status_code == 200
    assert b"Only service keys" in refused.content
    assert not user_key.projects.exists()


def test_a_limited_key_lists_and_reads_memories_of_its_projects_only(world):
    gemini = ProjectFactory(slug="gemini")
    world.owner.memberships.create(project=gemini)
    own = MemoryFactory(owner=world.owner)
    inside, outside = (
        MemoryFactory(owner=world.member, visibility="project", project=project, promotion_id=uuid.uuid4())
        for project in (world.project, gemini)
    )
    acting = world.client("service", on_behalf_of="ext-owner")
    assert {m["id"] for m in acting.get("/api/v1/memories").json()["memories"]} == {
        str(own.pk),
        str(inside.pk),
        str(outside.pk),
    }
    limit(world, "apollo")
    listed = {m["id"] for m in acting.get("/api/v1/memories").json()["memories"]}
    assert listed == {str(own.pk), str(inside.pk)}
    assert acting.get(f"/api/v1/memories/{outside.pk}").status_code == 404
    assert acting.get(f"/api/v1/memories/{inside.pk}").status_code == 200
    # The user's own key has no project limit: the user sees every memory in their reach.
    assert str(outside.pk) in {m["id"] for m in world.client("owner").get("/api/v1/memories").json()["memories"]}
