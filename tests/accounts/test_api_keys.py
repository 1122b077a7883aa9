"""API keys: hashed at rest, shown once, revocable; user and service keys; X-On-Behalf-Of."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import ApiKey, User
from accounts.selectors import api_key_digest
from accounts.services import api_key_create, api_key_revoke
from accounts.tasks import api_key_mark_used_task
from tests.conftest import bearer_client

ME = "/api/v1/me"
KEYS = "/api/v1/api-keys"
EVENTS = "/api/v1/feedback/events"


def test_keys_are_stored_as_digests_with_a_visible_prefix(world):
    key, raw = api_key_create(owner=world.owner, name="laptop")
    assert raw.startswith("llk_")
    assert key.prefix == raw[:12]
    assert key.hashed_key == api_key_digest(raw)
    assert raw not in key.hashed_key
    assert not ApiKey.objects.filter(hashed_key=raw).exists()


def test_a_key_stored_before_keeps_working(world):
    # The digest is pinned: a key issued by any earlier release (stored as this SHA-256 hex of
    # the raw key) must still authenticate, whatever helper computes the digest now.
    raw = "llk_0123abcd_a-raw-key-as-issued-before-this-change"
    stored = "f9a78ef10bfbe99ea0f4f5e5d9e8df2754768225829c482d91d5f114b3548d71"
    assert api_key_digest(raw) == stored
    ApiKey.objects.create(owner=world.owner, name="old", kind=ApiKey.Kind.USER, prefix=raw[:12], hashed_key=stored)
    assert bearer_client(raw).get(ME).json()["user_id"] == world.owner.pk


def test_user_key_authenticates_as_its_owner(world):
    body = world.client("owner").get(ME).json()
    assert body["user_id"] == world.owner.pk
    assert body["is_service"] is False


def test_service_key_without_header_acts_as_itself(world):
    body = world.client("service").get(ME).json()
    assert body == {**body, "user_id": None, "is_service": True, "is_admin": False}


def test_service_key_on_behalf_of_creates_the_user_on_the_first_write_only(world):
    body = world.client("service", on_behalf_of="slack:U123").get(ME).json()
    assert body["external_id"] == "slack:U123"
    assert not User.objects.filter(external_id="slack:U123").exists()  # a read creates no one
    event = {"event_type": "thumbs", "event_family": "assistant_response", "signal": "positive"}
    for _ in range(2):
        response = world.client("service", on_behalf_of="slack:U123").post(EVENTS, event, format="json")
        assert response.status_code == 201
    assert User.objects.filter(external_id="slack:U123").count() == 1


@pytest.mark.parametrize("value", ["", "   ", "x" * 256, "bad\u0000id"])
def test_bad_on_behalf_of_is_named(world, value):
    response = world.client("service", on_behalf_of=value).get(ME)
    assert response.status_code == 400
    assert "X-On-Behalf-Of" in response.json()["error"]["fields"]


@pytest.mark.parametrize(
    "header",
    ["Bearer", "Bearer a b", "Bearer llk_nope", "Bearer \u00e9t\u00e9"],
)
def test_bad_keys_are_401(world, header):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header.encode("utf-8").decode("latin-1"))
    assert client.get(ME).status_code == 401


def test_revoked_key_is_refused(world):
    key, raw = api_key_create(owner=world.owner, name="old")
    assert bearer_client(raw).get(ME).status_code == 200
    api_key_revoke(api_key=key)
    response = bearer_client(raw).get(ME)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_resolved_keys_are_cached_per_process(world, django_assert_num_queries):
    client = world.client("owner")
    client.get(ME)
    with django_assert_num_queries(0):
        assert client.get(ME).json()["user_id"] == world.owner.pk


def test_on_behalf_of_users_are_cached_too(world, django_assert_num_queries):
    client = world.client("service", on_behalf_of="ext-member")
    client.get(ME)
    with django_assert_num_queries(0):
        assert client.get(ME).json()["user_id"] == world.member.pk


def test_a_revocation_holds_at_once_for_a_cached_key(world, django_assert_num_queries):
    key, raw = api_key_create(owner=world.owner, name="laptop")
    client = bearer_client(raw)
    assert client.get(ME).status_code == 200
    with django_assert_num_queries(0):
        assert client.get(ME).status_code == 200  # resolved from the shared cache, as every worker would
    api_key_revoke(api_key=key)
    assert client.get(ME).status_code == 401


def test_a_revocation_through_the_api_holds_at_once(world):
    key, raw = api_key_create(owner=world.owner, name="laptop")
    client = bearer_client(raw)
    assert client.get(ME).status_code == 200
    assert world.client("owner").post(f"{KEYS}/{key.pk}/revoke").status_code == 200
    assert client.get(ME).status_code == 401


def test_a_lookup_racing_a_revocation_cannot_cache_the_revoked_key(world):
    key, raw = api_key_create(owner=world.owner, name="laptop")
    # A lookup read the row just before the revocation committed, and stores it just after.
    stale = ApiKey.objects.select_related("owner").get(pk=key.pk)
    api_key_revoke(api_key=key)
    cache.add(f"apikey:{key.hashed_key}", stale, 60)
    assert bearer_client(raw).get(ME).status_code == 401


def test_a_change_behind_the_services_back_holds_once_the_cache_window_ends(world):
    key, raw = api_key_create(owner=world.owner, name="laptop")
    assert bearer_client(raw).get(ME).status_code == 200
    # Revoked by SQL, not through the service: the cached copy serves for at most
    # API_KEY_CACHE_SECONDS; the window ending is what clearing the cache stands for here.
    ApiKey.objects.filter(pk=key.pk).update(revoked_at="2026-01-01T00:00:00Z")
    assert bearer_client(raw).get(ME).status_code == 200
    cache.clear()
    assert bearer_client(raw).get(ME).status_code == 401


def test_keys_still_authenticate_when_the_cache_is_down(world, monkeypatch):
    def down(*args, **kwargs):
        raise ConnectionError("cache down")

    for method in ("get", "add", "set", "delete"):
        monkeypatch.setattr(cache, method, down)
    assert world.client("owner").get(ME).json()["user_id"] == world.owner.pk
    key = ApiKey.objects.get(owner=world.owner)
    api_key_revoke(api_key=key)  # the row is revoked even though the cache cannot be told
    assert ApiKey.objects.get(pk=key.pk).revoked_at is not None
    assert world.client("owner").get(ME).status_code == 401


def test_cache_can_be_switched_off(world, settings, django_assert_num_queries):
    settings.API_KEY_CACHE_SECONDS = 0
    client = world.client("owner")
    client.get(ME)
    with django_assert_num_queries(1):
        client.get(ME)


def test_inactive_owner_key_is_refused(world):
    world.owner.is_active = False
    world.owner.save(update_fields=["is_active"])
    assert world.client("owner").get(ME).status_code == 401


def test_use_is_stamped_once_per_window(world, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        world.client("owner").get(ME)
        world.client("owner").get(ME)
    assert len(callbacks) == 1
    key = ApiKey.objects.get(owner=world.owner)
    assert key.last_used_at is not None


def test_mark_used_task_never_moves_backwards(world):
    now = timezone.now()
    key = world.service_key
    assert api_key_mark_used_task(str(key.pk), now.isoformat()) == 1
    assert api_key_mark_used_task(str(key.pk), now.isoformat()) == 0  # delivered twice: same state
    assert api_key_mark_used_task(str(key.pk), (now - timedelta(hours=1)).isoformat()) == 0
    assert api_key_mark_used_task("00000000-0000-0000-0000-000000000000", now.isoformat()) == 0
    key.refresh_from_db()
    assert key.last_used_at == now


# --- key management API -------------------------------------------------------------


def test_owner_creates_lists_and_revokes_their_key(world):
    client = world.client("owner")
    created = client.post(KEYS, {"name": "ci"}, format="json")
    assert created.status_code == 201
    raw = created.json()["key"]
    assert bearer_client(raw).get(ME).json()["user_id"] == world.owner.pk
    listed = client.get(KEYS).json()
    assert {k["name"] for k in listed} == {"test", "ci"}
    assert all("key" not in k and "hashed_key" not in k for k in listed)
    revoked = client.post(f"{KEYS}/{created.json()['id']}/revoke")
    assert revoked.status_code == 200
    assert revoked.json()["revoked_at"]
    assert bearer_client(raw).get(ME).status_code == 401


def test_another_user_cannot_see_or_revoke_a_key(world):
    key_id = world.client("owner").post(KEYS, {"name": "mine"}, format="json").json()["id"]
    other = world.client("other")
    assert key_id not in {k["id"] for k in other.get(KEYS).json()}
    assert other.post(f"{KEYS}/{key_id}/revoke").status_code == 404
    assert ApiKey.objects.get(pk=key_id).revoked_at is None


def test_admin_sees_and_revokes_every_key(world):
    key_id = world.client("owner").post(KEYS, {"name": "mine"}, format="json").json()["id"]
    admin = world.client("admin")
    assert key_id in {k["id"] for k in admin.get(KEYS).json()}
    assert admin.post(f"{KEYS}/{key_id}/revoke").status_code == 200


def test_member_cannot_revoke_a_fellow_members_key(world):
    key_id = world.client("owner").post(KEYS, {"name": "mine"}, format="json").json()["id"]
    assert world.client("member").post(f"{KEYS}/{key_id}/revoke").status_code == 404


def test_only_admins_create_service_keys(world):
    response = world.client("owner").post(KEYS, {"name": "svc", "kind": "service"}, format="json")
    assert response.status_code == 403
    assert "kind" in response.json()["error"]["fields"]
    assert world.client("admin").post(KEYS, {"name": "svc", "kind": "service"}, format="json").status_code == 201


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "name"),
        ({"name": ""}, "name"),
        ({"name": 5}, "name"),
        ({"name": "x", "kind": "root"}, "kind"),
        ({"name": "x", "scope": "all"}, "scope"),
    ],
)
def test_bad_key_input_is_named(world, body, field):
    before = ApiKey.objects.count()
    response = world.client("owner").post(KEYS, body, format="json")
    assert response.status_code == 400
    assert field in response.json()["error"]["fields"]
    assert ApiKey.objects.count() == before


def test_revoking_an_unknown_key_is_404(world):
    assert world.client("admin").post(f"{KEYS}/00000000-0000-0000-0000-000000000000/revoke").status_code == 404


# --- projects -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("role", "expected"), [("owner", {"apollo"}), ("other", set()), ("admin", {"apollo"}), ("service", {"apollo"})]
)
def test_projects_lists_what_the_caller_may_see(world, role, expected):
    assert {p["slug"] for p in world.client(role).get("/api/v1/projects").json()} == expected


# --- the command --------------------------------------------------------------------


def test_create_api_key_command_prints_a_working_key(world):
    out = io.StringIO()
    call_command("create_api_key", "--user", "member", "--name", "cli", stdout=out)
    raw = out.getvalue().strip().splitlines()[-1]
    assert bearer_client(raw).get(ME).json()["user_id"] == world.member.pk


def test_create_api_key_command_makes_service_keys_for_staff_only(world):
    out = io.StringIO()
    call_command("create_api_key", "--user", "admin", "--service", stdout=out)
    assert bearer_client(out.getvalue().strip().splitlines()[-1]).get(ME).json()["is_service"] is True
    with pytest.raises(CommandError, match="staff"):
        call_command("create_api_key", "--user", "member", "--service", stdout=io.StringIO())
    with pytest.raises(CommandError, match="No user"):
        call_command("create_api_key", "--user", "ghost", stdout=io.StringIO())
