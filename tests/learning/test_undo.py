"""Undo of the changes users make to what was learned (the preferences panel's undo toast), and
resuming a stopped taste pattern: each undo puts back the state the change replaced, through the
API, on both mounts; refused undos write nothing."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from feedback.models import FeedbackEvent
from learning.conf import learning_settings
from learning.models import LearnedWorkflow, Memory, Preference, TastePattern, UndoEntry
from learning.services import memories, preferences, taste, workflows
from learning.services.erasure import learning_erase_user
from learning.services.undo import undo_purge
from learning.tasks import undo_purge as undo_purge_task
from tests.factories import (
    LearnedWorkflowFactory,
    MemoryFactory,
    PreferenceFactory,
    TastePatternFactory,
)

MOUNTS = ["/api/v1", "/api/pdb/v1/reggie"]


def state(row) -> dict:
    """Every column of a row as stored (embeddings as bytes), except ``updated_at`` (an undo is a change)."""
    row = type(row)._base_manager.get(pk=row.pk)
    values = {f.attname: getattr(row, f.attname) for f in row._meta.concrete_fields if f.attname != "updated_at"}
    return {k: v.tobytes() if isinstance(v, np.ndarray) else v for k, v in values.items()}


def undo(client, mount: str, path: str, expected: int = 200, body: dict | None = None) -> dict:
    response = client.post(f"{mount}/{path}/undo", body or {}, format="json")
    assert response.status_code == expected, response.content
    return response.json()


@pytest.fixture
def owner(world):
    return world.owner


@pytest.fixture
def client(world):
    return world.client("owner")


def context_text(client) -> str:
    return client.get("/api/v1/context").json()["text"]


# --- preferences ------------------------------------------------------------------------


@pytest.mark.parametrize("mount", MOUNTS)
def test_switching_a_preference_off_is_undone_exactly(owner, client, mount, django_capture_on_commit_callbacks):
    pref = PreferenceFactory(user=owner, description="Answer in Spanish.", times_reinforced=4)
    Preference.objects.filter(pk=pref.pk).update(last_reinforced_at=timezone.now() - timedelta(days=9))
    before = state(pref)
    with django_capture_on_commit_callbacks(execute=True):  # each request's commit drops the cached context
        assert (
            client.patch(f"{mount}/preferences/{pref.pk}/toggle", {"active": False}, format="json").status_code == 200
        )
    assert "Answer in Spanish." not in context_text(client)

    with django_capture_on_commit_callbacks(execute=True):
        body = undo(client, mount, f"preferences/{pref.pk}")

    assert body["undone"] == "switched_off"
    assert body["preference"]["active"] is True
    assert state(pref) == before  # last_reinforced_at too: undoing is not a sighting
    assert "Answer in Spanish." in context_text(client)
    # Nothing more to undo: a 404 naming the id, nothing written.
    refused = undo(client, mount, f"preferences/{pref.pk}", expected=404)
    assert "id" in refused["error"]["fields"]
    assert state(pref) == before


@pytest.mark.parametrize("mount", MOUNTS)
def test_a_deleted_preference_comes_back_as_it_was(owner, client, mount):
    older = PreferenceFactory(user=owner, description="Give long answers.", axis="length:long")
    pref = PreferenceFactory(
        user=owner,
        description="Keep answers short.",
        axis="length:short",
        times_reinforced=3,
        confidence=0.83,
        embedding=np.ones(4, dtype=np.float32),
    )
    Preference.objects.filter(pk=older.pk).update(
        active=False, inactive_reason="contradicted", superseded_by=pref, superseded_at=timezone.now()
    )
    before, older_before = state(pref), state(older)

    assert client.delete(f"{mount}/preferences/{pref.pk}").status_code == 204
    assert not Preference.objects.filter(pk=pref.pk).exists()
    assert state(older)["superseded_by_id"] is None  # the reference went with the row

    body = undo(client, mount, f"preferences/{pref.pk}")

    assert body["undone"] == "deleted"
    assert body["preference"]["id"] == pref.pk
    assert state(pref) == before  # the same id, counts, confidence, embedding and timestamps
    assert state(older) == older_before  # superseded by it again
    assert "Keep answers short." in context_text(client)
    assert not UndoEntry.objects.exists()  # used up


def test_switching_a_superseded_preference_on_supersedes_the_newer_one_and_undo_puts_both_back(owner, client):
    newer = PreferenceFactory(user=owner, description="Keep answers short.", axis="length:short")
    older = PreferenceFactory(
        user=owner,
        description="Give long answers.",
        axis="length:long",
        active=False,
        inactive_reason="contradicted",
        superseded_by=newer,
        superseded_at=timezone.now(),
    )
    newer_before, older_before = state(newer), state(older)

    response = client.patch(f"/api/v1/preferences/{older.pk}/toggle", {"active": True}, format="json")

    assert response.status_code == 200
    assert (response.json()["active"], response.json()["superseded_by"]) == (True, None)
    newer.refresh_from_db()
    assert (newer.active, newer.inactive_reason, newer.superseded_by_id) == (False, "contradicted", older.pk)
    assert [p["description"] for p in client.get("/api/v1/context").json()["preferences"]] == ["Give long answers."]

    undo(client, "/api/v1", f"preferences/{older.pk}")

    assert (state(newer), state(older)) == (newer_before, older_before)


def test_undoing_an_added_preference(owner, client):
    shorter = PreferenceFactory(user=owner, description="Keep answers short.", axis="length:short")
    shorter_before = state(shorter)
    added = client.post("/api/v1/preferences", {"description": "Give detailed, long answers."}, format="json")
    assert added.status_code == 201, added.content
    pk = added.json()["id"]
    assert Preference.objects.get(pk=shorter.pk).active is False  # contradicted by the new one

    body = undo(client, "/api/v1", f"preferences/{pk}")

    assert (body["undone"], body["preference"]) == ("added", None)
    assert not Preference.objects.filter(pk=pk).exists()
    # Its embedding was computed for the comparison (it had none): kept, it is no state of the row.
    assert state(shorter) == {**shorter_before, "embedding": state(shorter)["embedding"]}


def test_undoing_a_reinforcing_addition_puts_the_figures_back(owner, client):
    pref, _ = preferences.preference_add_manual(user=owner, description="Answer in Spanish.", category="output")
    UndoEntry.objects.all().delete()
    before = state(pref)
    again = client.post("/api/v1/preferences", {"description": "Answer in Spanish"}, format="json")
    assert (again.status_code, again.json()["id"], again.json()["times_reinforced"]) == (200, pref.pk, 2)

    body = undo(client, "/api/v1", f"preferences/{pref.pk}")

    assert (body["undone"], body["preference"]["times_reinforced"]) == ("added", 1)
    assert state(pref) == before


def test_undo_goes_back_one_change_at_a_time(owner, client):
    pref = PreferenceFactory(user=owner)
    client.patch(f"/api/v1/preferences/{pref.pk}/toggle", {"active": False}, format="json")
    client.delete(f"/api/v1/preferences/{pref.pk}")
    assert undo(client, "/api/v1", f"preferences/{pref.pk}")["preference"]["active"] is False  # back, still off
    assert undo(client, "/api/v1", f"preferences/{pref.pk}")["preference"]["active"] is True
    undo(client, "/api/v1", f"preferences/{pref.pk}", expected=404)


def test_restoring_a_preference_said_again_since_is_a_conflict(owner, client):
    pref, _ = preferences.preference_add_manual(user=owner, description="Answer in Spanish.", category="output")
    client.delete(f"/api/v1/preferences/{pref.pk}")
    preferences.preference_add_manual(user=owner, description="Answer in Spanish.", category="output")
    rows = {p.pk: state(p) for p in Preference.objects.all()}
    entries = UndoEntry.objects.count()

    body = undo(client, "/api/v1", f"preferences/{pref.pk}", expected=409)

    assert "preference" in body["error"]["fields"]
    assert {p.pk: state(p) for p in Preference.objects.all()} == rows
    assert UndoEntry.objects.count() == entries  # not used up: the user may remove the new one and retry


def test_undo_expires_and_is_purged(owner, client, settings):
    pref = PreferenceFactory(user=owner)
    client.delete(f"/api/v1/preferences/{pref.pk}")
    late = timezone.now() - timedelta(seconds=learning_settings.LEARNING_UNDO_SECONDS + 1)
    UndoEntry.objects.update(created_at=late)

    body = undo(client, "/api/v1", f"preferences/{pref.pk}", expected=404)

    assert "10 minutes" in body["error"]["message"]
    recent = PreferenceFactory(user=owner)
    client.delete(f"/api/v1/preferences/{recent.pk}")
    assert undo_purge_task() == 1  # the beat task forgets the old entry (and what the row held)...
    assert list(UndoEntry.objects.values_list("subject_id", flat=True)) == [str(recent.pk)]  # ...not the new one
    assert undo_purge() == 0


@pytest.mark.parametrize(
    ("body", "field"),
    [({"action": "deleted"}, "action"), ({"id": 1}, "id")],
)
def test_undo_takes_no_body(owner, client, body, field):
    pref = PreferenceFactory(user=owner)
    client.patch(f"/api/v1/preferences/{pref.pk}/toggle", {"active": False}, format="json")
    response = undo(client, "/api/v1", f"preferences/{pref.pk}", expected=400, body=body)
    assert field in response["error"]["fields"]
    assert Preference.objects.get(pk=pref.pk).active is False  # nothing undone
    assert UndoEntry.objects.count() == 1


def test_another_users_undo_is_a_404_and_leaves_the_entry(world, owner):
    pref = PreferenceFactory(user=owner)
    preferences.preference_delete(preference=pref)
    for role in ("other", "member", "admin"):
        undo(world.client(role), "/api/v1", f"preferences/{pref.pk}", expected=404)
    acting = world.client("service", on_behalf_of=owner.external_id)
    assert undo(acting, "/api/v1", f"preferences/{pref.pk}")["preference"]["id"] == pref.pk


# --- workflows --------------------------------------------------------------------------


@pytest.mark.parametrize("mount", MOUNTS)
def test_workflow_switch_and_deletion_are_undone(owner, client, mount):
    workflow = LearnedWorkflowFactory(user=owner, times_detected=5, learned_steps=["Gather", "Summarise"])
    copy = LearnedWorkflowFactory(user=owner, visibility="project", shared_from=workflow, promotion_id=None)
    before = state(workflow)
    assert client.patch(f"{mount}/workflows/{workflow.pk}/toggle", {"active": False}, format="json").status_code == 200
    assert undo(client, mount, f"workflows/{workflow.pk}")["workflow"]["active"] is True
    assert state(workflow) == before

    assert client.delete(f"{mount}/workflows/{workflow.pk}").status_code == 204
    assert LearnedWorkflow.objects.get(pk=copy.pk).shared_from_id is None
    body = undo(client, mount, f"workflows/{workflow.pk}")
    assert (body["undone"], body["workflow"]["id"]) == ("deleted", workflow.pk)
    assert state(workflow) == before
    assert LearnedWorkflow.objects.get(pk=copy.pk).shared_from_id == workflow.pk


# --- memories ---------------------------------------------------------------------------


@pytest.mark.parametrize("mount", MOUNTS)
def test_memory_edit_and_deletion_are_undone(owner, client, mount):
    memory = MemoryFactory(owner=owner, content="I have two cats.", kind="fact")
    before = state(memory)
    edited = client.patch(f"{mount}/memories/{memory.pk}", {"content": "I have three cats."}, format="json")
    assert edited.status_code == 200

    body = undo(client, mount, f"memories/{memory.pk}")

    assert (body["undone"], body["memory"]["content"]) == ("edited", "I have two cats.")
    assert state(memory) == before  # its text, digest, kind and edited_at

    assert client.delete(f"{mount}/memories/{memory.pk}").status_code == 204
    body = undo(client, mount, f"memories/{memory.pk}")
    assert (body["undone"], body["memory"]["id"]) == ("deleted", str(memory.pk))
    assert state(memory) == before
    assert [m["content"] for m in client.get(f"{mount}/memories").json()["memories"]] == ["I have two cats."]


def test_undoing_an_edit_to_text_another_memory_has_now_is_a_conflict(owner, client):
    memory = MemoryFactory(owner=owner, content="I have two cats.")
    memories.memory_update(memory=memory, content="I have three cats.")
    MemoryFactory(owner=owner, content="I have two cats.")
    rows = {m.pk: state(m) for m in Memory.objects.all()}

    body = undo(client, "/api/v1", f"memories/{memory.pk}", expected=409)

    assert "content" in body["error"]["fields"]
    assert {m.pk: state(m) for m in Memory.objects.all()} == rows


def test_memory_undo_with_a_malformed_id_is_a_404(client):
    assert "id" in undo(client, "/api/v1", "memories/not-a-uuid", expected=404)["error"]["fields"]


# --- taste patterns ---------------------------------------------------------------------


def audit(pattern) -> list[tuple[str, str, str]]:
    return list(
        FeedbackEvent.objects.filter(subject_type="taste_pattern", subject_id=str(pattern.pk))
        .order_by("created_at")
        .values_list("event_type", "after_snapshot__status", "reason_category")
    )


@pytest.mark.parametrize("mount", MOUNTS)
def test_stopping_an_active_pattern_is_undone_to_active(owner, client, mount):
    pattern = TastePatternFactory(user=owner, status="active", confirmations=3, consecutive_rejections=1)
    before = state(pattern)
    assert client.post(f"{mount}/taste-patterns/{pattern.pk}/stop").json()["status"] == "rejected"

    body = undo(client, mount, f"taste-patterns/{pattern.pk}")

    assert (body["undone"], body["taste_pattern"]["status"]) == ("stopped", "active")
    assert state(pattern) == before
    assert audit(pattern) == [
        ("taste_pattern_stopped", "rejected", "user_request"),
        ("taste_pattern_resumed", "active", "undo"),
    ]
    event = FeedbackEvent.objects.filter(subject_id=str(pattern.pk)).first()
    assert (event.user_id, event.private, event.target_id, event.surface) == (
        owner.pk,
        True,
        "email/draft",
        "preferences",
    )


@pytest.mark.parametrize(
    ("confirmations", "status"),
    [(0, "candidate"), (learning_settings.TASTE_CONFIRMATIONS_TO_ACTIVATE, "active")],
)
def test_a_stopped_pattern_is_resumed(owner, client, confirmations, status):
    pattern = TastePatternFactory(
        user=owner,
        status="rejected",
        rejected_reason="overridden",
        confirmations=confirmations,
        rejections=3,
        consecutive_rejections=3,
    )

    response = client.post(f"/api/v1/taste-patterns/{pattern.pk}/resume")

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["status"], body["rejected_reason"], body["consecutive_rejections"]) == (status, "", 0)
    assert body["rejections"] == 3  # its history stays
    context = client.get("/api/v1/context", {"plugin": "email", "command": "draft", "surface": "command"}).json()
    assert [p["id"] for p in context["taste_patterns"]] == [pattern.pk]
    assert audit(pattern) == [("taste_pattern_resumed", status, "user_request")]

    undone = undo(client, "/api/v1", f"taste-patterns/{pattern.pk}")
    assert undone["undone"] == "resumed"
    pattern.refresh_from_db()
    assert (pattern.status, pattern.rejected_reason, pattern.consecutive_rejections) == ("rejected", "overridden", 3)


def test_resuming_supersedes_the_applied_pattern_of_the_other_direction(owner, client):
    longer = TastePatternFactory(user=owner, correction_type="length", direction="longer", status="active")
    shorter = TastePatternFactory(
        user=owner, correction_type="length", direction="shorter", status="rejected", rejected_reason="superseded"
    )
    longer_before = state(longer)

    assert client.post(f"/api/v1/taste-patterns/{shorter.pk}/resume").json()["status"] == "candidate"

    longer.refresh_from_db()
    assert (longer.status, longer.rejected_reason, longer.evidence["superseded_by"]) == (
        "rejected",
        "superseded",
        shorter.pk,
    )
    undo(client, "/api/v1", f"taste-patterns/{shorter.pk}")
    assert state(longer) == longer_before


def test_resume_refuses_an_applied_pattern_and_bad_input(owner, client):
    pattern = TastePatternFactory(user=owner, status="active")
    rows = state(pattern)
    applied = client.post(f"/api/v1/taste-patterns/{pattern.pk}/resume")
    assert applied.status_code == 409
    assert "status" in applied.json()["error"]["fields"]
    pattern.status = "rejected"
    pattern.save(update_fields=["status"])
    unknown = client.post(f"/api/v1/taste-patterns/{pattern.pk}/resume", {"status": "active"}, format="json")
    assert unknown.status_code == 400
    assert "status" in unknown.json()["error"]["fields"]
    assert state(pattern) == {**rows, "status": "rejected"}
    assert client.post("/api/v1/taste-patterns/999999/resume").status_code == 404
    assert not FeedbackEvent.objects.filter(subject_type="taste_pattern").exists()


def test_undoing_a_stop_while_the_other_direction_is_applied_is_a_conflict(owner, client):
    shorter = TastePatternFactory(user=owner, correction_type="length", direction="shorter", status="active")
    taste.taste_pattern_stop(user=owner, pattern_id=shorter.pk)
    TastePatternFactory(user=owner, correction_type="length", direction="longer", status="candidate")
    body = undo(client, "/api/v1", f"taste-patterns/{shorter.pk}", expected=409)
    assert "status" in body["error"]["fields"]
    assert TastePattern.objects.get(pk=shorter.pk).status == "rejected"


def test_stop_applying_this_in_chat_is_audited_from_chat(owner):
    pattern = TastePatternFactory(user=owner, last_applied_at=timezone.now())
    assert taste.taste_pattern_stop(user=owner).pk == pattern.pk
    event = FeedbackEvent.objects.get(subject_type="taste_pattern")
    assert (event.event_type, event.surface, event.signal) == ("taste_pattern_stopped", "chat", "negative")


# --- erasure ----------------------------------------------------------------------------


def test_erasure_takes_the_undo_entries_with_it(owner):
    preferences.preference_delete(preference=PreferenceFactory(user=owner))
    memories.memory_delete(memory=MemoryFactory(owner=owner))
    workflows.workflow_delete(workflow=LearnedWorkflowFactory(user=owner))
    counts: dict[str, int] = {}
    learning_erase_user(user=owner, counts=counts)
    assert counts["learning_undo_entries"] == 3
    assert not UndoEntry.objects.exists()


# --- what the panel reads and writes: queries constant in the number of rows ------------


def test_the_panels_requests_take_a_constant_number_of_queries(owner, client):
    def counts() -> dict[str, int]:
        found = {}
        for path in ("preferences", "workflows", "memories", "taste-patterns"):
            with CaptureQueriesContext(connection) as queries:
                assert client.get(f"/api/v1/{path}").status_code == 200
            found[path] = len(queries)
        pref = Preference.objects.filter(user=owner).first()
        with CaptureQueriesContext(connection) as queries:
            client.delete(f"/api/v1/preferences/{pref.pk}")
            undo(client, "/api/v1", f"preferences/{pref.pk}")
        found["delete and undo"] = len(queries)
        return found

    def add(n: int) -> None:
        for _ in range(n):
            newer = PreferenceFactory(user=owner)
            PreferenceFactory(user=owner, active=False, inactive_reason="contradicted", superseded_by=newer)
            LearnedWorkflowFactory(user=owner)
            MemoryFactory(owner=owner)
            TastePatternFactory(user=owner)

    add(1)
    counts()  # warm: the key lookup is cached after the first request
    few = counts()
    add(10)
    assert counts() == few
