"""Erasure: a user with events, memories, messages, traces and promotions is erased, and afterwards
no row of any table names them; their events stay, anonymised, under an event recording the erasure."""

from __future__ import annotations

import io
import json

import pytest
from django.apps import apps
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection, models, transaction
from django.test import Client

from accounts.models import User
from accounts.services import api_key_create
from feedback.models import ERASED_WRITER, AppendOnlyError, FeedbackEvent
from learning.models import AgentLearning
from promotions.models import LearningPromotion, PromotionStatus
from tests.conftest import bearer_client
from tests.factories import (
    AgentLearningFactory,
    ChatMessageFactory,
    ChunkFactory,
    DocumentFactory,
    FeedbackEventFactory,
    LearnedWorkflowFactory,
    LearningPromotionFactory,
    LearningUsageFactory,
    MembershipFactory,
    MemoryFactory,
    PreferenceFactory,
    PromptPatternFactory,
    RetrievalFeedbackFactory,
    TastePatternFactory,
    UserFactory,
)

# What identifies the erased user, and words only she wrote: none may survive anywhere.
USERNAME = "erin-7f3a"
EXTERNAL_ID = "crm-erin-7f3a"
SECRET = "heron-locker-9931"
OTHERS_REASON = "The totals skipped the travel line."


@pytest.fixture
def erin(world):
    """A member of apollo with something in every table that can name a user."""
    user = UserFactory(username=USERNAME, external_id=EXTERNAL_ID, email=f"{USERNAME}@example.org")
    MembershipFactory(project=world.project, user=user)
    _, raw = api_key_create(owner=user, name=f"{USERNAME}'s laptop")
    client = bearer_client(raw)
    event = {"event_type": "thumbs", "event_family": "assistant_response", "signal": "negative"}
    written = client.post(
        "/api/v1/feedback/events",
        event | {"project": "apollo", "free_text": f"Wrong: {SECRET}", "idempotency_key": f"{USERNAME}-1"},
        format="json",
    )
    assert written.status_code == 201
    task = {"task_snapshot": {"id": "t1", "title": f"Call {SECRET}"}, "rating": "good", "completed": True}
    rated = client.post("/api/v1/feedback/tasks", task | {"project": "apollo"}, format="json")
    assert rated.status_code == 201
    memory = MemoryFactory(owner=user, content=f"My code word is {SECRET}.")
    shared = client.post(f"/api/v1/memories/{memory.pk}/share", {"visibility": "team"}, format="json")
    assert shared.status_code == 201
    preference = PreferenceFactory(user=user, description=f"Call me {SECRET}")
    LearnedWorkflowFactory(user=user, example_input=f"report for {SECRET}")
    TastePatternFactory(user=user, description=f"Shortened {SECRET}")
    PromptPatternFactory(message=ChatMessageFactory(user=user, content=f"I am {SECRET}"))
    LearningUsageFactory(user=user, item_id=str(preference.pk))
    chunk = ChunkFactory(document=DocumentFactory(id="apollo-doc", project=world.project))
    result = RetrievalFeedbackFactory(
        trace__user=user, trace__project=world.project, trace__query_text=f"where is {SECRET}", chunk=chunk
    )
    # A task example promoted from her rating, a weight anchored on her query, and an agent learning
    # built from her thumbs-down and someone else's.
    LearningPromotionFactory(
        status=PromotionStatus.APPLIED,
        promotion_type="task_example",
        subject_type="task_feedback",
        subject_id=rated.json()["id"],
        proposed_learning={"title": f"Call {SECRET}"},
    )
    LearningPromotionFactory(
        promotion_type="retrieval_weight",
        subject_type="chunk",
        subject_id=str(chunk.pk),
        proposed_learning={
            "reason": "unhelpful",
            "anchor_traces": [str(result.trace_id), "0b5d6f0e-0000-0000-0000-000000000000"],
            "anchor_terms": [["where", SECRET], ["budget"]],
        },
    )
    hers = FeedbackEvent.objects.get(pk=written.json()["id"])
    theirs = FeedbackEventFactory(user=world.member, project=world.project, free_text=OTHERS_REASON)
    evidence = [
        {"event": str(hers.pk), "reason": f"Wrong: {SECRET}", "response": "The total is 12."},
        {"event": str(theirs.pk), "reason": OTHERS_REASON, "response": "The total is 14."},
    ]
    promotion = LearningPromotionFactory(
        status=PromotionStatus.APPLIED,
        promotion_type="agent_learning",
        subject_type="response_group",
        subject_id="g1",
        source_event_ids=[str(hers.pk), str(theirs.pk)],
        proposed_learning={
            "prevention_prompt": f'Users rejected 2 similar responses. Their reasons: "Wrong: {SECRET}".',
            "evidence": evidence,
        },
    )
    AgentLearningFactory(
        promotion_id=promotion.pk,
        prevention_prompt=f'Their reasons: "Wrong: {SECRET}"; "{OTHERS_REASON}".',
        evidence=evidence,
    )
    # She was signed in to the browser, and an admin once edited her account.
    world.session_client("owner")  # someone else's session stays
    Client().force_login(user)
    LogEntry.objects.create(
        user_id=world.admin.pk,
        content_type_id=ContentType.objects.get_for_model(User).pk,
        object_id=str(user.pk),
        object_repr=USERNAME,
        action_flag=CHANGE,
    )
    return user


def rows_naming(user_id: int) -> list[str]:
    """Every row of every table that points at the user, or holds her name or her words."""
    found = []
    needles = (USERNAME, EXTERNAL_ID, SECRET, f"user:{user_id}")
    for model in apps.get_models(include_auto_created=True):
        for f in model._meta.concrete_fields:
            if f.is_relation and f.related_model is User:
                if model._base_manager.filter(**{f.attname: user_id}).exists():
                    found.append(f"{model._meta.db_table}.{f.attname}")
            elif isinstance(f, models.CharField | models.TextField | models.JSONField):
                for value in model._base_manager.values_list(f.attname, flat=True):
                    text = value if isinstance(value, str) else json.dumps(value)
                    if any(needle in (text or "") for needle in needles):
                        found.append(f"{model._meta.db_table}.{f.attname}")
        if model._meta.db_table == "django_session":
            for session in model._base_manager.all():
                if session.get_decoded().get("_auth_user_id") == str(user_id):
                    found.append("django_session (signed in)")
    return found


def test_erasing_a_user_leaves_no_row_naming_them(world, erin):
    erin_id = erin.pk
    events_before = FeedbackEvent.objects.count()
    hers = list(FeedbackEvent.objects.filter(user_id=erin_id).values_list("pk", flat=True))
    assert len(hers) >= 2  # her thumbs-down and her task rating (and the share's audit)
    before = rows_naming(erin_id)  # the check sees her everywhere before
    for table in ("ai_feedback_events.user_id", "ai_memories.content", "ai_learning_promotions.proposed_learning"):
        assert table in before
    assert "agent_learnings.prevention_prompt" in before
    assert "django_session (signed in)" in before
    assert "django_admin_log.object_repr" in before

    response = world.client("admin").post(f"/api/v1/users/{erin_id}/erase")

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["user_id"] == erin_id
    assert rows_naming(erin_id) == []
    assert not User.objects.filter(pk=erin_id).exists()
    # Her events stay as evidence, anonymised, and one more records the erasure.
    assert FeedbackEvent.objects.count() == events_before + 1
    for event in FeedbackEvent.objects.filter(pk__in=hers):
        assert event.user_id is None
        assert event.writer == ERASED_WRITER
        assert event.free_text == ""
        assert event.idempotency_key is None
    erasure = FeedbackEvent.objects.get(pk=body["erasure_event_id"])
    assert (erasure.event_type, erasure.subject_type, erasure.subject_id) == ("user_erased", "user", str(erin_id))
    assert erasure.user_id == world.admin.pk  # who erased
    assert body["rows"]["ai_feedback_events (anonymised)"] == len(hers)
    # What others contributed stays: the agent learning keeps their evidence and quotes.
    learning = AgentLearning.objects.get()
    assert [e["reason"] for e in learning.evidence] == [OTHERS_REASON]
    assert OTHERS_REASON in learning.prevention_prompt
    weight_promotion = LearningPromotion.objects.get(promotion_type="retrieval_weight")
    assert weight_promotion.proposed_learning["anchor_terms"] == [["budget"]]
    # Promotions about her own items went with them.
    assert not LearningPromotion.objects.filter(subject_type__in=("memory", "task_feedback")).exists()
    # The stream is still append-only for everything else.
    with pytest.raises(AppendOnlyError):
        FeedbackEvent.objects.filter(pk=erasure.pk).update(signal="negative")


def test_the_erased_user_can_come_back_as_a_new_user(world, erin):
    assert world.client("admin").post(f"/api/v1/users/{erin.pk}/erase").status_code == 200
    event = {"event_type": "thumbs", "event_family": "assistant_response", "signal": "positive"}
    again = world.client("service", on_behalf_of=EXTERNAL_ID).post("/api/v1/feedback/events", event, format="json")
    assert again.status_code == 201
    assert again.json()["user_id"] != erin.pk


def test_the_command_erases_and_asks_for_confirmation(world, erin):
    with pytest.raises(CommandError, match="--yes"):
        call_command("erase_user", "--external-id", EXTERNAL_ID)
    assert User.objects.filter(pk=erin.pk).exists()
    with pytest.raises(CommandError, match="No such user"):
        call_command("erase_user", "--username", "nobody", "--yes")
    out = io.StringIO()
    call_command("erase_user", "--external-id", EXTERNAL_ID, "--yes", stdout=out)
    assert f"Erased user {erin.pk}" in out.getvalue()
    assert rows_naming(erin.pk) == []
    erasure = FeedbackEvent.objects.get(event_type="user_erased")
    assert erasure.writer == "system"


def test_erasure_is_refused_to_everyone_but_staff_people(world, erin):
    for role in ("owner", "member", "other", "service"):
        assert world.client(role).post(f"/api/v1/users/{erin.pk}/erase").status_code == 403
    world.admin.external_id = "ext-admin"
    world.admin.save()
    acting = world.client("service", on_behalf_of="ext-admin").post(f"/api/v1/users/{erin.pk}/erase")
    assert acting.status_code == 403
    assert world.client("anonymous").post(f"/api/v1/users/{erin.pk}/erase").status_code == 401
    assert User.objects.filter(pk=erin.pk).exists()


def test_bad_erasure_requests(world):
    admin = world.client("admin")
    missing = admin.post("/api/v1/users/999999/erase")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"]
    assert admin.post("/api/v1/users/not-a-number/erase").status_code == 404
    assert admin.get(f"/api/v1/users/{world.owner.pk}/erase").status_code == 405
    itself = admin.post(f"/api/v1/users/{world.admin.pk}/erase")
    assert itself.status_code == 409
    assert User.objects.filter(pk=world.admin.pk).exists()


def test_anonymising_needs_the_erasure_event(world):
    """The ORM's one exception to append-only is tied to an erasure; on PostgreSQL the trigger
    refuses it under an id that is not a user_erased event about this user."""
    event = FeedbackEventFactory(user=world.owner)
    other = FeedbackEventFactory(user=world.member)
    if connection.vendor != "postgresql":
        pytest.skip("the trigger is PostgreSQL's; the PostgreSQL run of the suite covers it")
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        FeedbackEvent.objects.anonymise_user(user_id=world.owner.pk, erasure_event_id=other.pk)
    assert FeedbackEvent.objects.get(pk=event.pk).user_id == world.owner.pk
