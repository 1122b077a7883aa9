"""The preference learning API: observe, context and the management contract, on both mounts."""

from __future__ import annotations

import pytest

from learning.models import ChatMessage, LearnedWorkflow, LearningUsage, Preference
from learning.services import preferences
from tests.factories import PreferenceFactory

MOUNTS = ["/api/v1", "/api/pdb/v1/reggie"]


def analysis_enqueues(callbacks):
    """The on-commit callbacks that queue an analysis (the key usage stamp is another one)."""
    return [c for c in callbacks if c.__qualname__.startswith("_observe.")]


@pytest.fixture
def owner_prefs(world):
    concise, _ = preferences.preference_add_manual(
        user=world.owner, category="length", description="Keep responses short"
    )
    bullets, _ = preferences.preference_add_manual(user=world.owner, category="format", description="Use bullet points")
    other, _ = preferences.preference_add_manual(user=world.other, category="tone", description="Be formal")
    return {"concise": concise, "bullets": bullets, "other": other}


@pytest.fixture
def owner_workflow(world):
    return LearnedWorkflow.objects.create(
        user=world.owner,
        workflow_name="Weekly sales summary",
        trigger_pattern="Summarize the weekly sales report",
        preferred_output="Three bullets and a table",
        example_input="Summarize the weekly sales report for leadership",
        times_detected=3,
        confidence=0.7,
    )


# --- observe ------------------------------------------------------------------------


def test_observe_stores_and_returns_context(world, owner_prefs, owner_workflow, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        response = world.client("owner").post(
            "/api/v1/messages",
            {"session_id": "chat-1", "content": "Summarize the weekly sales report please", "project": "apollo"},
            format="json",
        )
    assert response.status_code == 201, response.content
    body = response.json()
    message = ChatMessage.objects.get(pk=body["message_id"])
    assert (message.user, message.role, message.project.slug) == (world.owner, "user", "apollo")
    assert len(analysis_enqueues(callbacks)) == 1  # the analysis is queued after commit, not run in the request
    assert message.analyzed_at is None
    context = body["context"]
    assert "[User Preferences]" in context["text"]
    assert "- Keep responses short" in context["text"]
    assert "[Known Workflow: Weekly sales summary]" in context["text"]
    assert context["workflow"]["workflow_name"] == "Weekly sales summary"
    assert "Be formal" not in context["text"]  # another user's preference


def test_observe_then_analysis_learns(world, analyzer, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = world.client("service", on_behalf_of="ext-owner").post(
            "/api/v1/messages", {"session_id": "s", "content": "Keep your answers short from now on."}, format="json"
        )
    assert response.status_code == 201
    learned = Preference.objects.get(user=world.owner)
    assert (learned.description, learned.axis) == ("Keep your answers short.", "length:short")
    context = world.client("owner").get("/api/v1/context").json()
    assert context["preferences"][0]["description"] == "Keep your answers short."


def test_assistant_messages_are_stored_but_not_analysed(world, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        response = world.client("owner").post(
            "/api/v1/messages",
            {"session_id": "s", "content": "Here is your summary.", "role": "assistant"},
            format="json",
        )
    assert response.status_code == 201
    assert analysis_enqueues(callbacks) == []


def test_observe_access(world):
    body = {"session_id": "s", "content": "hello"}
    assert world.client("anonymous").post("/api/v1/messages", body, format="json").status_code == 401
    response = world.client("service").post("/api/v1/messages", body, format="json")
    assert response.status_code == 400
    assert "X-On-Behalf-Of" in response.json()["error"]["fields"]
    response = world.client("other").post("/api/v1/messages", {**body, "project": "apollo"}, format="json")
    assert response.status_code == 403
    assert (
        world.client("admin").post("/api/v1/messages", {**body, "project": "apollo"}, format="json").status_code == 201
    )
    assert (
        world.client("member").post("/api/v1/messages", {**body, "project": "apollo"}, format="json").status_code == 201
    )
    assert ChatMessage.objects.count() == 2


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"session_id": "s", "content": ""}, "content"),
        ({"session_id": "s", "content": "   "}, "content"),
        ({"session_id": "s", "content": "x" * 100_000}, "content"),
        ({"session_id": "s"}, "content"),
        ({"content": "hi"}, "session_id"),
        ({"session_id": "s", "content": "hi", "role": "robot"}, "role"),
        ({"session_id": "s", "content": 5}, "content"),
        ({"session_id": "s", "content": "hi", "project": "nope"}, "project"),
        ({"session_id": "s", "content": "hi", "mood": "happy"}, "mood"),
    ],
)
def test_observe_bad_input(world, body, field):
    response = world.client("owner").post("/api/v1/messages", body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["error"]["fields"]
    assert ChatMessage.objects.count() == 0


def test_learning_switched_off(world, owner_prefs, settings, django_capture_on_commit_callbacks):
    settings.REGGIE_PREFERENCE_LEARNING = False
    with django_capture_on_commit_callbacks() as callbacks:
        body = (
            world.client("owner")
            .post("/api/v1/messages", {"session_id": "s", "content": "Be concise"}, format="json")
            .json()
        )
    assert analysis_enqueues(callbacks) == []
    assert body["context"] == {**body["context"], "enabled": False, "text": "", "preferences": []}
    assert world.client("owner").get("/api/v1/context").json()["text"] == ""


# --- management ---------------------------------------------------------------------


@pytest.mark.parametrize("mount", MOUNTS)
def test_list_shows_only_your_own(world, owner_prefs, owner_workflow, mount):
    prefs = world.client("owner").get(f"{mount}/preferences").json()["preferences"]
    assert {p["description"] for p in prefs} == {"Keep responses short", "Use bullet points"}
    workflows = world.client("owner").get(f"{mount}/workflows").json()["workflows"]
    assert [w["workflow_name"] for w in workflows] == ["Weekly sales summary"]
    assert world.client("member").get(f"{mount}/preferences").json()["preferences"] == []
    assert world.client("member").get(f"{mount}/workflows").json()["workflows"] == []
    via_service = world.client("service", on_behalf_of="ext-owner").get(f"{mount}/preferences").json()
    assert len(via_service["preferences"]) == 2


@pytest.mark.parametrize("mount", MOUNTS)
def test_toggle_and_delete_preference(world, owner_prefs, mount):
    client = world.client("owner")
    pk = owner_prefs["concise"].pk
    response = client.patch(f"{mount}/preferences/{pk}/toggle", {"active": False}, format="json")
    assert response.status_code == 200
    assert response.json()["active"] is False
    assert "Keep responses short" not in client.get(f"{mount}/context").json()["text"]
    assert client.patch(f"{mount}/preferences/{pk}/toggle", {"active": True}, format="json").json()["active"]
    assert client.delete(f"{mount}/preferences/{pk}").status_code == 204
    assert not Preference.objects.filter(pk=pk).exists()
    assert client.delete(f"{mount}/preferences/{pk}").status_code == 404


@pytest.mark.parametrize("role", ["other", "member", "admin", "anonymous"])
def test_another_users_preference_is_404_not_403(world, owner_prefs, role):
    client = world.client(role)
    pk = owner_prefs["concise"].pk
    expected = 401 if role == "anonymous" else 404
    assert client.patch(f"/api/v1/preferences/{pk}/toggle", {"active": False}, format="json").status_code == expected
    assert client.delete(f"/api/v1/preferences/{pk}").status_code == expected
    assert Preference.objects.get(pk=pk).active


@pytest.mark.parametrize("mount", MOUNTS)
def test_toggle_and_delete_workflow(world, owner_workflow, mount):
    client = world.client("owner")
    pk = owner_workflow.pk
    assert (
        world.client("other").patch(f"{mount}/workflows/{pk}/toggle", {"active": False}, format="json").status_code
        == 404
    )
    assert client.patch(f"{mount}/workflows/{pk}/toggle", {"active": False}, format="json").json()["active"] is False
    assert client.get(f"{mount}/context", {"message": "Summarize the weekly sales report"}).json()["workflow"] is None
    assert world.client("other").delete(f"{mount}/workflows/{pk}").status_code == 404
    assert client.delete(f"{mount}/workflows/{pk}").status_code == 204


@pytest.mark.parametrize("mount", MOUNTS)
def test_add_preference(world, mount):
    client = world.client("owner")
    body = {"category": "output", "description": "Answer in Spanish."}
    response = client.post(f"{mount}/preferences", body, format="json")
    assert response.status_code == 201
    created = response.json()
    assert created == {**created, "description": "Answer in Spanish.", "source": "manual", "active": True}
    assert created["preference"].startswith("answer-in-spanish-")  # a derived, stable key
    again = client.post(f"{mount}/preferences", {"description": "Answer in Spanish"}, format="json")
    assert again.status_code == 200  # the same one again: reinforced, not duplicated
    assert (again.json()["id"], again.json()["times_reinforced"]) == (created["id"], 2)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"category": "mood", "description": "y"}, "category"),
        ({"category": "tone"}, "description"),
        ({"category": "tone", "description": "   "}, "description"),
        ({"category": "tone", "description": "y" * 501}, "description"),
        ({"category": "tone", "description": "y", "preference": "formal"}, "preference"),  # the key is derived
        ({"category": "tone", "description": "y", "extra": 1}, "extra"),
    ],
)
def test_add_preference_bad_input(world, body, field):
    response = world.client("owner").post("/api/v1/preferences", body, format="json")
    assert response.status_code == 400
    assert field in response.json()["error"]["fields"]
    assert not Preference.objects.exists()


@pytest.mark.parametrize("body", [{}, {"active": "maybe"}, {"active": None}])
def test_toggle_bad_input(world, owner_prefs, body):
    pk = owner_prefs["concise"].pk
    response = world.client("owner").patch(f"/api/v1/preferences/{pk}/toggle", body, format="json")
    assert response.status_code == 400
    assert "active" in response.json()["error"]["fields"]


# --- context: a GET previews, a POST with response_id records -------------------------


@pytest.mark.parametrize("mount", MOUNTS)
def test_context_get_writes_no_usage_rows(world, owner_prefs, owner_workflow, mount):
    response = world.client("owner").get(f"{mount}/context", {"message": "Summarize the weekly sales report"})
    assert response.status_code == 200, response.content
    assert "Keep responses short" in response.json()["text"]
    assert response.json()["workflow"]["workflow_name"] == "Weekly sales summary"
    assert not LearningUsage.objects.exists()


@pytest.mark.parametrize("mount", MOUNTS)
def test_context_post_records_each_injection_against_the_response(world, owner_prefs, owner_workflow, mount):
    body = {"message": "Summarize the weekly sales report", "response_id": "resp-1"}
    response = world.client("owner").post(f"{mount}/context", body, format="json")
    assert response.status_code == 200, response.content
    assert "Keep responses short" in response.json()["text"]
    recorded = LearningUsage.objects.filter(response_id="resp-1")
    assert set(recorded.values_list("item_type", "item_id")) == {
        ("preference", str(owner_prefs["concise"].pk)),
        ("preference", str(owner_prefs["bullets"].pk)),
        ("workflow", str(owner_workflow.pk)),
    }
    assert set(recorded.values_list("user_id", "outcome")) == {(world.owner.pk, "pending")}


@pytest.mark.parametrize("mount", MOUNTS)
@pytest.mark.parametrize("response_id", [None, "", "   "])
def test_context_post_needs_a_response_id(world, owner_prefs, mount, response_id):
    body = {"message": "hello"} if response_id is None else {"message": "hello", "response_id": response_id}
    response = world.client("owner").post(f"{mount}/context", body, format="json")
    assert response.status_code == 400, response.content
    assert "response_id" in response.json()["error"]["fields"]
    assert not LearningUsage.objects.exists()


@pytest.mark.parametrize("mount", MOUNTS)
def test_context_get_with_a_response_id_is_refused_and_says_to_post(world, owner_prefs, mount):
    response = world.client("owner").get(f"{mount}/context", {"response_id": "resp-1"})
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert "response_id" in error["fields"]
    assert "POST" in error["message"]
    assert not LearningUsage.objects.exists()


@pytest.mark.parametrize("mount", MOUNTS)
def test_context_needs_a_caller(world, owner_prefs, mount):
    anonymous = world.client("anonymous")
    assert anonymous.get(f"{mount}/context").status_code == 401
    assert anonymous.post(f"{mount}/context", {"response_id": "resp-1"}, format="json").status_code == 401
    assert not LearningUsage.objects.exists()


@pytest.mark.parametrize("mount", MOUNTS)
def test_context_post_holds_only_the_callers_learning(world, owner_prefs, mount):
    response = world.client("other").post(f"{mount}/context", {"response_id": "resp-other"}, format="json")
    assert response.status_code == 200, response.content
    text = response.json()["text"]
    assert "Be formal" in text
    assert "Keep responses short" not in text
    assert "Use bullet points" not in text
    recorded = LearningUsage.objects.filter(response_id="resp-other")
    assert set(recorded.values_list("user_id", "item_id")) == {(world.other.pk, str(owner_prefs["other"].pk))}
    via_service = world.client("service", on_behalf_of="ext-owner").post(
        f"{mount}/context", {"response_id": "resp-owner"}, format="json"
    )
    assert via_service.status_code == 200, via_service.content
    assert "Be formal" not in via_service.json()["text"]
    assert set(LearningUsage.objects.filter(response_id="resp-owner").values_list("user_id", flat=True)) == {
        world.owner.pk
    }


def test_service_must_name_the_user(world):
    for path in ("/api/v1/preferences", "/api/v1/workflows", "/api/v1/context", "/api/v1/memories"):
        response = world.client("service").get(path)
        assert response.status_code == 400
        assert "X-On-Behalf-Of" in response.json()["error"]["fields"]
    response = world.client("service").post("/api/v1/context", {"response_id": "r1"}, format="json")
    assert response.status_code == 400
    assert "X-On-Behalf-Of" in response.json()["error"]["fields"]
    assert not LearningUsage.objects.exists()


def test_check_in_lists_decayed_preferences(world, owner_prefs):
    Preference.objects.filter(pk=owner_prefs["concise"].pk).update(active=False, inactive_reason="decayed")
    Preference.objects.filter(pk=owner_prefs["bullets"].pk).update(active=False, inactive_reason="user")
    listed = world.client("owner").get("/api/v1/preferences/check-in").json()["preferences"]
    assert [p["id"] for p in listed] == [owner_prefs["concise"].pk]
    assert world.client("other").get("/api/v1/preferences/check-in").json()["preferences"] == []


def test_context_is_bounded_and_ordered(world, settings):
    settings.CONTEXT_MAX_CHARS = 200
    # Rows written directly: thirty distinct rules (the service would merge look-alike test wordings).
    PreferenceFactory.create_batch(30, user=world.owner, category="output", confidence=0.5)
    top = Preference.objects.filter(user=world.owner)[7]
    Preference.objects.filter(pk=top.pk).update(confidence=0.99)
    context = world.client("owner").get("/api/v1/context").json()
    assert len(context["text"]) <= 200
    assert context["preferences"][0]["id"] == top.pk
    assert all(p["confidence"] <= context["preferences"][0]["confidence"] for p in context["preferences"])


def test_memories_are_only_their_owners(world, analyzer, observe):
    observe(world.owner, "I have a severe peanut allergy.")
    assert len(world.client("owner").get("/api/v1/memories").json()["memories"]) == 1
    assert world.client("member").get("/api/v1/memories").json()["memories"] == []
    assert "peanut" in world.client("owner").get("/api/v1/context").json()["text"]
    assert "peanut" not in world.client("member").get("/api/v1/context").json()["text"]
