"""The event stream API: writes and reads under the design's access rules."""

from __future__ import annotations

import pytest
from rest_framework import serializers
from rest_framework.test import APIClient

from accounts.models import User
from feedback.apis import EventOutputSerializer
from feedback.models import FeedbackEvent
from feedback.services.events import EventInput, event_record

URL = "/api/v1/feedback/events"


def payload(**overrides):
    body = {"event_type": "response_rated", "event_family": "assistant_response", "signal": "positive"}
    body.update(overrides)
    return body


# --- writes -----------------------------------------------------------------------


def test_user_writes_as_themself(world):
    response = world.client("owner").post(URL, payload(project="apollo", free_text="great"), format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["user_id"] == world.owner.pk
    assert body["project"] == "apollo"
    event = FeedbackEvent.objects.get(pk=body["id"])
    assert event.writer == f"user:{world.owner.pk}"
    assert event.free_text == "great"


def test_user_may_name_themself_explicitly(world):
    response = world.client("owner").post(URL, payload(user_id=world.owner.pk), format="json")
    assert response.status_code == 201


@pytest.mark.parametrize("role", ["owner", "admin"])
def test_user_cannot_write_as_someone_else(world, role):
    response = world.client(role).post(URL, payload(user_id=world.member.pk), format="json")
    assert response.status_code == 403
    assert "user_id" in response.json()["error"]["fields"]
    assert FeedbackEvent.objects.count() == 0


def test_user_cannot_write_into_a_project_they_are_not_in(world):
    response = world.client("other").post(URL, payload(project="apollo"), format="json")
    assert response.status_code == 403
    assert "project" in response.json()["error"]["fields"]
    assert FeedbackEvent.objects.count() == 0


def test_unknown_project_is_named(world):
    response = world.client("owner").post(URL, payload(project="nope"), format="json")
    assert response.status_code == 400
    assert "project" in response.json()["error"]["fields"]


def test_service_writes_for_any_user_by_id(world):
    response = world.client("service").post(URL, payload(user_id=world.member.pk, project="apollo"), format="json")
    assert response.status_code == 201
    assert response.json()["user_id"] == world.member.pk
    assert FeedbackEvent.objects.get().writer == f"key:{world.service_key.pk}"


def test_service_writes_on_behalf_of_a_known_external_user(world):
    response = world.client("service", on_behalf_of="ext-member").post(URL, payload(), format="json")
    assert response.status_code == 201
    assert response.json()["user_id"] == world.member.pk


def test_service_on_behalf_of_a_new_user_creates_them(world):
    response = world.client("service", on_behalf_of="crm-4711").post(URL, payload(), format="json")
    assert response.status_code == 201
    created = User.objects.get(external_id="crm-4711")
    assert response.json()["user_id"] == created.pk
    assert not created.has_usable_password()


def test_service_event_without_user_is_a_system_event(world):
    response = world.client("service").post(URL, payload(), format="json")
    assert response.status_code == 201
    assert response.json()["user_id"] is None


def test_service_naming_a_missing_user_is_refused(world):
    response = world.client("service").post(URL, payload(user_id=999_999), format="json")
    assert response.status_code == 400
    assert "user_id" in response.json()["error"]["fields"]


def test_user_key_cannot_act_on_behalf_of_others(world):
    response = world.client("owner", on_behalf_of="ext-member").post(URL, payload(), format="json")
    assert response.status_code == 403
    assert "X-On-Behalf-Of" in response.json()["error"]["fields"]
    assert FeedbackEvent.objects.count() == 0


def test_session_login_writes_too(world):
    client = APIClient(enforce_csrf_checks=False)
    client.force_login(world.owner)
    response = client.post(URL, payload(), format="json")
    assert response.status_code == 201
    assert response.json()["user_id"] == world.owner.pk


def test_preference_events_are_private(world):
    response = world.client("owner").post(
        URL, payload(event_family="user_preference", event_type="preference_learned", project="apollo"), format="json"
    )
    assert response.json()["private"] is True


# --- idempotency ------------------------------------------------------------------


def test_retried_post_returns_the_original_event(world):
    client = world.client("owner")
    first = client.post(URL, payload(idempotency_key="abc-1"), format="json")
    second = client.post(URL, payload(idempotency_key="abc-1"), format="json")
    assert first.status_code == 201
    assert second.status_code == 200
    assert second["Idempotent-Replayed"] == "true"
    assert second.json()["id"] == first.json()["id"]
    assert FeedbackEvent.objects.count() == 1


def test_idempotency_key_header_works_like_the_field(world):
    client = world.client("owner")
    first = client.post(URL, payload(), format="json", HTTP_IDEMPOTENCY_KEY="hdr-1")
    second = client.post(URL, payload(), format="json", HTTP_IDEMPOTENCY_KEY="hdr-1")
    assert (first.status_code, second.status_code) == (201, 200)
    assert FeedbackEvent.objects.count() == 1


def test_same_key_with_a_different_payload_is_a_conflict(world):
    client = world.client("owner")
    client.post(URL, payload(idempotency_key="abc-2"), format="json")
    response = client.post(URL, payload(idempotency_key="abc-2", signal="negative"), format="json")
    assert response.status_code == 409
    assert "idempotency_key" in response.json()["error"]["fields"]
    assert FeedbackEvent.objects.count() == 1


def test_idempotency_keys_are_per_writer(world):
    world.client("owner").post(URL, payload(idempotency_key="shared"), format="json")
    response = world.client("member").post(URL, payload(idempotency_key="shared"), format="json")
    assert response.status_code == 201
    assert FeedbackEvent.objects.count() == 2


# --- reads ------------------------------------------------------------------------


@pytest.fixture
def stream(world):
    """Events of every visibility: owner's own (project and private), member's, outsider's, system."""
    service = world.actor("service")

    def add(user, **kw):
        data = EventInput(**{**payload(), **kw}, user_id=user.pk if user else None)
        return event_record(actor=service, data=data).event

    return {
        "owner_project": add(world.owner, project_slug="apollo"),
        "owner_private": add(
            world.owner, project_slug="apollo", event_family="user_preference", event_type="preference_learned"
        ),
        "member_project": add(world.member, project_slug="apollo"),
        "member_private": add(world.member, project_slug="apollo", subject_type="memory", subject_id="m1"),
        "other_personal": add(world.other),
        "system": add(None),
    }


VISIBLE = {
    "owner": {"owner_project", "owner_private", "member_project"},
    "member": {"owner_project", "member_project", "member_private"},
    "other": {"other_personal"},
    "admin": {"owner_project", "owner_private", "member_project", "member_private", "other_personal", "system"},
    "service": {"owner_project", "owner_private", "member_project", "member_private", "other_personal", "system"},
}


@pytest.mark.parametrize("role", sorted(VISIBLE))
def test_list_applies_the_access_rules(world, stream, role):
    response = world.client(role).get(URL)
    assert response.status_code == 200
    ids = {row["id"] for row in response.json()["results"]}
    assert ids == {str(stream[name].id) for name in VISIBLE[role]}


@pytest.mark.parametrize("role", sorted(VISIBLE))
def test_detail_applies_the_access_rules(world, stream, role):
    client = world.client(role)
    for name, event in stream.items():
        response = client.get(f"{URL}/{event.id}")
        expected = 200 if name in VISIBLE[role] else 404
        assert response.status_code == expected, (role, name)


def test_unknown_event_id_is_404(world):
    response = world.client("admin").get(f"{URL}/00000000-0000-0000-0000-000000000000")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_filters(world, stream):
    client = world.client("admin")

    def ids(**params):
        response = client.get(URL, params)
        assert response.status_code == 200, response.content
        return {row["id"] for row in response.json()["results"]}

    assert ids(family="user_preference") == {str(stream["owner_private"].id)}
    assert ids(subject_type="memory", subject_id="m1") == {str(stream["member_private"].id)}
    assert ids(project="apollo", user=world.member.pk) == {
        str(stream["member_project"].id),
        str(stream["member_private"].id),
    }
    assert ids(signal="negative") == set()
    assert len(ids(event_type="response_rated")) == 5
    first = stream["owner_project"].created_at
    assert str(stream["owner_project"].id) not in ids(
        created_after=(first.isoformat().replace("+00:00", "Z")), created_before=first.isoformat()
    )


@pytest.mark.parametrize(
    ("param", "value"),
    [("family", "bogus"), ("signal", "meh"), ("user", "abc"), ("created_after", "yesterday")],
)
def test_bad_filter_values_are_named(world, param, value):
    response = world.client("admin").get(URL, {param: value})
    assert response.status_code == 400
    assert param in response.json()["error"]["fields"]


def test_cursor_pagination_walks_every_event_once(world):
    service = world.actor("service")
    for i in range(7):
        event_record(actor=service, data=EventInput(**payload(subject_id=str(i))))
    client = world.client("admin")
    seen, url = [], f"{URL}?page_size=3"
    while url:
        body = client.get(url).json()
        seen += [row["subject_id"] for row in body["results"]]
        url = body["next"]
    assert sorted(seen) == [str(i) for i in range(7)]
    assert seen == [str(i) for i in reversed(range(7))]  # newest first


def test_rendered_events_match_the_documented_fields(world, stream):
    """The output serializer renders by hand for speed; it must stay true to its declared fields."""

    serializer = EventOutputSerializer()
    declared = serializer.fields
    for event in stream.values():
        rendered = serializer.to_representation(event)
        assert set(rendered) == set(declared)
        for name, field in declared.items():
            if isinstance(field, serializers.JSONField):
                assert rendered[name] == getattr(event, name)
            elif name == "project":
                assert rendered[name] == (event.project.slug if event.project else None)
            else:
                attribute = field.get_attribute(event)
                assert rendered[name] == (None if attribute is None else field.to_representation(attribute)), name
