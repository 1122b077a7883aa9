"""The taste endpoints through the client: who may record runs and decisions, list and stop
patterns and read the context (anonymous, another user, owner, service key with and without
X-On-Behalf-Of, admin), their bad input (a 400 or 404 naming the field, nothing written), and
the patterns that repeated decisions create and "stop applying this" rejects."""

from __future__ import annotations

import uuid

import pytest

from feedback.models import FeedbackEvent
from learning.models import TastePattern
from learning.services import taste
from tests.learning.conftest import (
    CONTEXT,
    DECISIONS,
    REPORT,
    RUNS,
    WITHOUT_NEXT_STEPS,
    assert_error,
    context_of,
    learn_section_pattern,
)
from tests.learning.conftest import command_decide as decide
from tests.learning.conftest import command_run as run

PATTERNS, MESSAGES = "/api/v1/taste-patterns", "/api/v1/messages"

pytestmark = pytest.mark.django_db


def context(client, plugin="email", command="draft") -> dict:
    return context_of(client, plugin=plugin, command=command, surface="command")


def decisions() -> int:
    return FeedbackEvent.objects.filter(event_type="decision_point").count()


def owner_run_id(world) -> str:
    return taste.command_run_record(
        actor=world.actor("owner"), user=world.owner, plugin="email", command="draft", output=REPORT
    ).run_id


# --- POST /commands/runs: access --------------------------------------------------------------


def test_run_anonymous_is_refused(world):
    response = world.client("anonymous").post(
        RUNS, {"plugin": "email", "command": "draft", "output": "x"}, format="json"
    )
    assert response.status_code == 401
    assert FeedbackEvent.objects.count() == 0


def test_run_owner(world):
    ran = run(world.client("owner"), parameters={"tone": "formal"}, session_id="s-1")
    assert uuid.UUID(ran["run_id"])
    assert (ran["applied"], ran["notices"]) == ([], [])
    event = FeedbackEvent.objects.get(subject_id=ran["run_id"])
    assert (event.event_type, event.subject_type, event.target_id, event.surface) == (
        "post_command",
        "command_run",
        "email/draft",
        "command",
    )
    assert (event.user, event.writer, event.session_id) == (world.owner, f"user:{world.owner.pk}", "s-1")
    assert event.after_snapshot == {"output": REPORT, "parameters": {"tone": "formal"}}
    assert event.metadata == {"plugin": "email", "command": "draft", "applied_patterns": []}


def test_run_service_key_acts_for_the_named_user(world):
    ran = run(world.client("service", on_behalf_of="ext-owner"))
    event = FeedbackEvent.objects.get(subject_id=ran["run_id"])
    assert (event.user, event.writer) == (world.owner, f"key:{world.service_key.pk}")


def test_run_service_key_must_name_the_user(world):
    response = world.client("service").post(RUNS, {"plugin": "email", "command": "draft", "output": "x"}, format="json")
    assert_error(response, 400, "X-On-Behalf-Of")
    assert FeedbackEvent.objects.count() == 0


def test_run_admin_acts_as_themself(world):
    ran = run(world.client("admin"))
    assert FeedbackEvent.objects.get(subject_id=ran["run_id"]).user == world.admin


def test_run_in_a_project_needs_membership(world):
    ran = run(world.client("member"), project="apollo")
    assert FeedbackEvent.objects.get(subject_id=ran["run_id"]).project == world.project
    response = world.client("other").post(
        RUNS, {"plugin": "email", "command": "draft", "output": "x", "project": "apollo"}, format="json"
    )
    assert_error(response, 403, "project")
    assert FeedbackEvent.objects.filter(user=world.other).count() == 0


def test_run_applies_only_the_users_own_patterns(world):
    pattern = learn_section_pattern(world)
    mine = run(world.client("owner"))
    assert [p["id"] for p in mine["applied"]] == [pattern.pk]
    assert mine["notices"] == [f'[Intel] Applying learned preference: "{pattern.instruction}"']
    assert run(world.client("other"))["applied"] == []
    pattern.refresh_from_db()
    assert pattern.last_applied_at is not None


# --- POST /commands/runs: bad input -----------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"plugin": "", "command": "draft", "output": "x"}, "plugin"),
        ({"plugin": "   ", "command": "draft", "output": "x"}, "plugin"),
        ({"plugin": "p" * 101, "command": "draft", "output": "x"}, "plugin"),
        ({"plugin": 7, "command": "draft", "output": "x"}, "plugin"),
        ({"command": "draft", "output": "x"}, "plugin"),
        ({"plugin": "email", "command": "", "output": "x"}, "command"),
        ({"plugin": "email", "command": "draft"}, "output"),
        ({"plugin": "email", "command": "draft", "output": "x", "parameters": ["tone", "formal"]}, "parameters"),
        ({"plugin": "email", "command": "draft", "output": "x", "parameters": "tone=formal"}, "parameters"),
        ({"plugin": "email", "command": "draft", "output": "x", "parameters": 3}, "parameters"),
        ({"plugin": "email", "command": "draft", "output": "x", "project": "no-such-project"}, "project"),
        ({"plugin": "email", "command": "draft", "output": "x", "user_id": 1}, "user_id"),
        ({"plugin": "email", "command": "draft", "output": "x", "succeeded": "yes"}, "succeeded"),
        ({"plugin": "email", "command": "draft", "output": "x", "succeeded": 1}, "succeeded"),
        ({"plugin": "email", "command": "draft", "output": "x", "succeeded": "false"}, "succeeded"),
    ],
)
def test_run_bad_input_is_a_400_naming_the_field(world, body, field):
    assert_error(world.client("owner").post(RUNS, body, format="json"), 400, field)
    assert FeedbackEvent.objects.count() == 0


def test_run_output_of_a_megabyte_is_refused_and_nothing_written(world):
    body = {"plugin": "email", "command": "draft", "output": "x" * 1_000_000}
    error = assert_error(world.client("owner").post(RUNS, body, format="json"), 400, "output")
    assert "20000" in error["fields"]["output"][0]
    assert FeedbackEvent.objects.count() == 0


def test_run_output_within_the_limit_that_does_not_fit_names_output(world):
    # 12,000 accented characters pass the 20,000-character limit but not the stored-size cap.
    body = {"plugin": "email", "command": "draft", "output": "é" * 12_000}
    assert_error(world.client("owner").post(RUNS, body, format="json"), 400, "output")
    assert FeedbackEvent.objects.count() == 0


def test_run_parameters_too_large_to_store_name_parameters(world):
    body = {"plugin": "email", "command": "draft", "output": "x", "parameters": {"notes": "n" * 70_000}}
    assert_error(world.client("owner").post(RUNS, body, format="json"), 400, "parameters")
    assert FeedbackEvent.objects.count() == 0


def test_run_service_refuses_parameters_that_are_not_an_object(world):
    for parameters in (["tone"], [], "", 0):
        with pytest.raises(taste.ApplicationError) as caught:
            taste.command_run_record(
                actor=world.actor("owner"),
                user=world.owner,
                plugin="email",
                command="draft",
                output="x",
                parameters=parameters,  # type: ignore[arg-type]
            )
        assert "parameters" in caught.value.fields
    assert FeedbackEvent.objects.count() == 0


def test_markup_in_a_plugin_name_is_stored_verbatim_and_returned_as_data(world):
    client = world.client("owner")
    plugin = "<b>mail</b>"
    for _ in range(3):
        ran = run(client, plugin=plugin)
        decide(client, ran["run_id"], "edited", edited_output=WITHOUT_NEXT_STEPS)
    stored = FeedbackEvent.objects.filter(event_type="post_command").values_list("metadata__plugin", "target_id")
    assert set(stored) == {(plugin, "<b>mail</b>/draft")}
    pattern = TastePattern.objects.get(user=world.owner, direction="removed:next steps")
    assert pattern.plugin == plugin

    response = client.get(PATTERNS)
    assert response["Content-Type"].startswith("application/json")
    [listed] = [p for p in response.json()["taste_patterns"] if p["id"] == pattern.pk]
    assert listed["plugin"] == plugin
    assert listed["instruction"] == "Leave out the 'next steps' section in <b>mail</b> draft outputs."
    assert b"&lt;b&gt;" not in response.content  # data, not HTML-escaped
    assert [p["plugin"] for p in run(client, plugin=plugin)["applied"]] == [plugin]


# --- POST /commands/decisions: access ---------------------------------------------------------


def test_decision_anonymous_is_refused(world):
    run_id = owner_run_id(world)
    response = world.client("anonymous").post(DECISIONS, {"run_id": run_id, "decision": "accepted"}, format="json")
    assert response.status_code == 401
    assert decisions() == 0


def test_decision_owner(world):
    run_id = owner_run_id(world)
    result = decide(world.client("owner"), run_id, "edited", edited_output=WITHOUT_NEXT_STEPS, reason="too long")
    assert result["decision"] == "edited"
    assert ("section", "removed:next steps") in [(c["type"], c["direction"]) for c in result["corrections"]]
    assert (result["confirmed"], result["overridden"], result["rejected"], result["patterns"]) == ([], [], [], [])
    event = FeedbackEvent.objects.get(event_type="decision_point")
    assert (event.user, event.subject_id, event.reason_category, event.free_text) == (
        world.owner,
        run_id,
        "edited",
        "too long",
    )
    assert event.after_snapshot == {"edited_output": WITHOUT_NEXT_STEPS}


def test_decision_on_another_users_run_is_a_404(world):
    run_id = owner_run_id(world)
    for role in ("other", "member"):
        response = world.client(role).post(DECISIONS, {"run_id": run_id, "decision": "rejected"}, format="json")
        assert_error(response, 404, "run_id")
    assert decisions() == 0


def test_decision_service_key_acts_for_the_named_user(world):
    run_id = owner_run_id(world)
    response = world.client("service", on_behalf_of="ext-other").post(
        DECISIONS, {"run_id": run_id, "decision": "accepted"}, format="json"
    )
    assert_error(response, 404, "run_id")
    decide(world.client("service", on_behalf_of="ext-owner"), run_id, "accepted")
    event = FeedbackEvent.objects.get(event_type="decision_point")
    assert (event.user, event.writer) == (world.owner, f"key:{world.service_key.pk}")


def test_decision_service_key_must_name_the_user(world):
    run_id = owner_run_id(world)
    response = world.client("service").post(DECISIONS, {"run_id": run_id, "decision": "accepted"}, format="json")
    assert_error(response, 400, "X-On-Behalf-Of")
    assert decisions() == 0


def test_decision_admin_acts_as_themself(world):
    response = world.client("admin").post(
        DECISIONS, {"run_id": owner_run_id(world), "decision": "accepted"}, format="json"
    )
    assert_error(response, 404, "run_id")
    own = run(world.client("admin"))
    decide(world.client("admin"), own["run_id"], "accepted")
    assert FeedbackEvent.objects.get(event_type="decision_point").user == world.admin


# --- POST /commands/decisions: bad input ------------------------------------------------------


def test_decision_on_a_run_never_recorded_is_a_404_naming_run_id(world):
    response = world.client("owner").post(
        DECISIONS, {"run_id": str(uuid.uuid4()), "decision": "accepted"}, format="json"
    )
    error = assert_error(response, 404, "run_id")
    assert error["code"] == "not_found"
    assert decisions() == 0


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"run_id": "not-a-uuid", "decision": "accepted"}, "run_id"),
        ({"run_id": "1234", "decision": "accepted"}, "run_id"),
        ({"decision": "accepted"}, "run_id"),
        ({"run_id": "RUN", "decision": "loved"}, "decision"),
        ({"run_id": "RUN"}, "decision"),
        ({"run_id": "RUN", "decision": "edited"}, "edited_output"),
        ({"run_id": "RUN", "decision": "rerun", "parameters": ["tone", "casual"]}, "parameters"),
        ({"run_id": "RUN", "decision": "rerun", "parameters": "tone=casual"}, "parameters"),
        ({"run_id": "RUN", "decision": "edited", "edited_output": "x" * 1_000_000}, "edited_output"),
        ({"run_id": "RUN", "decision": "accepted", "reason": "r" * 10_001}, "reason"),
        ({"run_id": "RUN", "decision": "accepted", "verdict": "ok"}, "verdict"),
    ],
)
def test_decision_bad_input_is_a_400_naming_the_field(world, body, field):
    run_id = owner_run_id(world)
    body = {key: (run_id if value == "RUN" else value) for key, value in body.items()}
    assert_error(world.client("owner").post(DECISIONS, body, format="json"), 400, field)
    assert decisions() == 0


def test_decision_edited_output_that_does_not_fit_names_edited_output(world):
    body = {"run_id": owner_run_id(world), "decision": "edited", "edited_output": "é" * 12_000}
    assert_error(world.client("owner").post(DECISIONS, body, format="json"), 400, "edited_output")
    assert decisions() == 0


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"run_id": "not-a-uuid", "decision": "accepted"}, "run_id"),
        ({"run_id": 12, "decision": "accepted"}, "run_id"),
        ({"run_id": "RUN", "decision": "loved"}, "decision"),
        ({"run_id": "RUN", "decision": "edited"}, "edited_output"),
        ({"run_id": "RUN", "decision": "rerun", "parameters": ["tone"]}, "parameters"),
        ({"run_id": "RUN", "decision": "edited", "edited_output": "é" * 12_000}, "edited_output"),
        ({"run_id": "RUN", "decision": "rerun", "parameters": {"notes": "n" * 70_000}}, "parameters"),
    ],
)
def test_decision_service_refuses_bad_input(world, kwargs, field):
    run_id = owner_run_id(world)
    kwargs = {key: (run_id if value == "RUN" else value) for key, value in kwargs.items()}
    with pytest.raises(taste.ApplicationError) as caught:
        taste.command_decision_record(actor=world.actor("owner"), user=world.owner, **kwargs)
    assert field in caught.value.fields
    assert decisions() == 0


def test_decision_service_finds_a_run_by_any_spelling_of_its_id(world):
    run_id = owner_run_id(world)
    result = taste.command_decision_record(
        actor=world.actor("owner"), user=world.owner, run_id=run_id.upper(), decision="accepted"
    )
    assert result.decision == "accepted"
    assert FeedbackEvent.objects.get(event_type="decision_point").subject_id == run_id


# --- patterns that repeated decisions create --------------------------------------------------


def test_three_reruns_with_the_same_parameter_create_a_parameter_pattern(world):
    client = world.client("owner")
    for i in range(3):
        ran = run(client, parameters={"tone": "formal", "length": "medium"})
        result = decide(client, ran["run_id"], "rerun", parameters={"tone": "casual", "length": "medium"})
        assert [(c["type"], c["direction"]) for c in result["corrections"]] == [("parameter", "tone=casual")]
        assert len(result["patterns"]) == (1 if i == 2 else 0)
        assert TastePattern.objects.filter(user=world.owner).exists() == (i == 2)
    pattern = TastePattern.objects.get(user=world.owner)
    assert (pattern.plugin, pattern.command, pattern.correction_type, pattern.direction, pattern.status) == (
        "email",
        "draft",
        "parameter",
        "tone=casual",
        "candidate",
    )
    assert pattern.instruction == "Run email draft with tone = casual."
    assert "3/3 times" in pattern.description
    assert result["patterns"][0]["id"] == pattern.pk


def test_reruns_with_different_values_create_no_pattern(world):
    client = world.client("owner")
    for tone in ("casual", "friendly", "terse"):
        ran = run(client, parameters={"tone": "formal"})
        decide(client, ran["run_id"], "rerun", parameters={"tone": tone})
    assert not TastePattern.objects.filter(user=world.owner).exists()


def test_a_section_removed_three_times_creates_a_removed_pattern(world):
    client = world.client("owner")
    for i in range(3):
        ran = run(client)
        result = decide(client, ran["run_id"], "edited", edited_output=WITHOUT_NEXT_STEPS)
        created = [p for p in result["patterns"] if p["correction_type"] == "section"]
        assert len(created) == (1 if i == 2 else 0)
    pattern = TastePattern.objects.get(user=world.owner, correction_type="section")
    assert pattern.direction == "removed:next steps"
    assert pattern.instruction == "Leave out the 'next steps' section in email draft outputs."
    assert pattern.description == "Removed the 'next steps' section from email draft outputs 3/3 times."
    assert pattern.evidence["observations"] == 3


def test_patterns_are_per_user_and_per_command(world):
    client = world.client("owner")
    for command in ("draft", "draft", "reply"):
        ran = run(client, command=command)
        decide(client, ran["run_id"], "edited", edited_output=WITHOUT_NEXT_STEPS)
    for _ in range(2):
        ran = run(world.client("other"))
        decide(world.client("other"), ran["run_id"], "edited", edited_output=WITHOUT_NEXT_STEPS)
    assert not TastePattern.objects.exists()


# --- GET /taste-patterns ----------------------------------------------------------------------


def test_pattern_list_access(world):
    pattern = learn_section_pattern(world)
    assert world.client("anonymous").get(PATTERNS).status_code == 401
    assert [p["id"] for p in world.client("owner").get(PATTERNS).json()["taste_patterns"]] == [pattern.pk]
    assert world.client("other").get(PATTERNS).json() == {"taste_patterns": []}
    assert world.client("admin").get(PATTERNS).json() == {"taste_patterns": []}
    via_service = world.client("service", on_behalf_of="ext-owner").get(PATTERNS).json()["taste_patterns"]
    assert [p["id"] for p in via_service] == [pattern.pk]
    assert_error(world.client("service").get(PATTERNS), 400, "X-On-Behalf-Of")


def test_pattern_list_shows_the_notice_and_evidence(world):
    pattern = learn_section_pattern(world)
    [listed] = world.client("owner").get(PATTERNS).json()["taste_patterns"]
    assert listed["notice"] == f'[Intel] Applying learned preference: "{pattern.instruction}"'
    assert (listed["status"], listed["observations"], listed["evidence"]["observations"]) == ("candidate", 3, 3)


# --- POST /taste-patterns/<id>/stop -----------------------------------------------------------


def stop_url(pattern: TastePattern) -> str:
    return f"{PATTERNS}/{pattern.pk}/stop"


def test_stop_anonymous_is_refused(world):
    pattern = learn_section_pattern(world)
    assert world.client("anonymous").post(stop_url(pattern)).status_code == 401
    pattern.refresh_from_db()
    assert pattern.status == "candidate"


@pytest.mark.parametrize("role", ["other", "member", "admin"])
def test_stop_of_another_users_pattern_is_a_404(world, role):
    pattern = learn_section_pattern(world)
    assert_error(world.client(role).post(stop_url(pattern)), 404, "id")
    pattern.refresh_from_db()
    assert (pattern.status, pattern.rejected_reason) == ("candidate", "")


def test_stop_of_a_pattern_that_does_not_exist_is_a_404(world):
    assert_error(world.client("owner").post(f"{PATTERNS}/999999/stop"), 404, "id")


def test_stop_service_key(world):
    pattern = learn_section_pattern(world)
    assert_error(world.client("service").post(stop_url(pattern)), 400, "X-On-Behalf-Of")
    assert_error(world.client("service", on_behalf_of="ext-other").post(stop_url(pattern)), 404, "id")
    pattern.refresh_from_db()
    assert pattern.status == "candidate"
    response = world.client("service", on_behalf_of="ext-owner").post(stop_url(pattern))
    assert response.status_code == 200, response.content
    assert (response.json()["status"], response.json()["rejected_reason"]) == ("rejected", "stopped_by_user")


def test_stop_admin_own_pattern(world):
    pattern = learn_section_pattern(world, "admin")
    response = world.client("admin").post(stop_url(pattern))
    assert response.status_code == 200, response.content
    pattern.refresh_from_db()
    assert pattern.status == "rejected"


def test_stop_rejects_the_pattern_and_it_leaves_the_context(world, django_capture_on_commit_callbacks):
    pattern = learn_section_pattern(world)
    client = world.client("owner")
    line = f'[Intel] Applying learned preference: "{pattern.instruction}"'
    before = context(client)
    assert line in before["text"]
    assert [p["id"] for p in before["taste_patterns"]] == [pattern.pk]
    assert line not in context(world.client("other"))["text"]  # only the owner's context carries it

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(stop_url(pattern))
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["id"], body["status"], body["rejected_reason"]) == (pattern.pk, "rejected", "stopped_by_user")
    pattern.refresh_from_db()
    assert (pattern.status, pattern.rejected_reason) == ("rejected", "stopped_by_user")

    after = context(client)
    assert line not in after["text"]
    assert after["taste_patterns"] == []
    assert run(client)["applied"] == []
    # Stopping again changes nothing and still answers the pattern.
    assert client.post(stop_url(pattern)).json()["status"] == "rejected"


def test_a_stopped_pattern_is_not_brought_back_by_more_evidence(world):
    pattern = learn_section_pattern(world)
    taste.taste_pattern_stop(user=world.owner, pattern_id=pattern.pk)
    client = world.client("owner")
    for _ in range(2):
        ran = run(client)
        result = decide(client, ran["run_id"], "edited", edited_output=WITHOUT_NEXT_STEPS)
        assert pattern.pk not in [p["id"] for p in result["patterns"]]
    pattern.refresh_from_db()
    assert (pattern.status, pattern.rejected_reason) == ("rejected", "stopped_by_user")
    assert TastePattern.objects.filter(user=world.owner, correction_type="section").count() == 1


# --- "stop applying this" in chat -------------------------------------------------------------


def test_chat_stop_phrase_rejects_the_pattern_last_applied(world):
    draft = learn_section_pattern(world, command="draft")
    reply = learn_section_pattern(world, command="reply")
    client = world.client("owner")
    assert [p["id"] for p in run(client, command="draft")["applied"]] == [draft.pk]
    assert [p["id"] for p in run(client, command="reply")["applied"]] == [reply.pk]
    # The reply pattern was applied last, whatever the clock's resolution.
    TastePattern.objects.filter(pk=draft.pk).update(last_applied_at=reply.created_at)

    response = client.post(MESSAGES, {"session_id": "s-1", "content": "please stop applying this"}, format="json")
    assert response.status_code == 201, response.content
    reply.refresh_from_db()
    draft.refresh_from_db()
    assert (reply.status, reply.rejected_reason) == ("rejected", "stopped_by_user")
    assert (draft.status, draft.rejected_reason) == ("candidate", "")
    assert run(client, command="reply")["applied"] == []
    assert [p["id"] for p in run(client, command="draft")["applied"]] == [draft.pk]


def test_chat_stop_phrase_through_a_service_key(world):
    pattern = learn_section_pattern(world)
    run(world.client("owner"))
    response = world.client("service", on_behalf_of="ext-owner").post(
        MESSAGES, {"session_id": "s-1", "content": "Stop applying that, please."}, format="json"
    )
    assert response.status_code == 201, response.content
    pattern.refresh_from_db()
    assert (pattern.status, pattern.rejected_reason) == ("rejected", "stopped_by_user")


@pytest.mark.parametrize("role", ["owner", "other"])
def test_chat_without_the_phrase_or_from_another_user_stops_nothing(world, role):
    pattern = learn_section_pattern(world)
    run(world.client("owner"))
    content = "Thanks, this draft works well." if role == "owner" else "please stop applying this"
    response = world.client(role).post(MESSAGES, {"session_id": "s-1", "content": content}, format="json")
    assert response.status_code == 201, response.content
    pattern.refresh_from_db()
    assert pattern.status == "candidate"


def test_chat_stop_phrase_ignores_a_pattern_never_applied(world):
    pattern = learn_section_pattern(world)  # created, but no run has applied it yet
    response = world.client("owner").post(
        MESSAGES, {"session_id": "s-1", "content": "stop applying this"}, format="json"
    )
    assert response.status_code == 201, response.content
    pattern.refresh_from_db()
    assert pattern.status == "candidate"


def test_chat_message_access(world):
    body = {"session_id": "s-1", "content": "stop applying this"}
    assert world.client("anonymous").post(MESSAGES, body, format="json").status_code == 401
    assert_error(world.client("service").post(MESSAGES, body, format="json"), 400, "X-On-Behalf-Of")


# --- GET /context -----------------------------------------------------------------------------


def test_context_access(world):
    pattern = learn_section_pattern(world)
    line = f'[Intel] Applying learned preference: "{pattern.instruction}"'
    query = {"plugin": "email", "command": "draft", "surface": "command"}
    assert world.client("anonymous").get(CONTEXT, query).status_code == 401
    assert_error(world.client("service").get(CONTEXT, query), 400, "X-On-Behalf-Of")
    assert line in context(world.client("owner"))["text"]
    assert line in context(world.client("service", on_behalf_of="ext-owner"))["text"]
    for role in ("other", "admin"):
        assert context(world.client(role))["taste_patterns"] == []
    assert context(world.client("owner"), command="summarise")["taste_patterns"] == []
    assert context(world.client("owner"), plugin="calendar")["taste_patterns"] == []


def test_a_run_has_one_decision(world):
    client = world.client("owner")
    run_id = run(client)["run_id"]
    decide(client, run_id, "accepted")
    response = client.post(DECISIONS, {"run_id": run_id, "decision": "edited", "edited_output": "x"}, format="json")
    assert_error(response, 409, "run_id")
    assert decisions() == 1


def test_a_rerun_that_keeps_a_parameter_pattern_does_not_override_it(world):
    client = world.client("owner")
    for _ in range(3):
        ran = run(client, parameters={"tone": "formal"})
        decide(client, ran["run_id"], "rerun", parameters={"tone": "casual"})
    pattern = TastePattern.objects.get(user=world.owner, correction_type="parameter")
    ran = run(client, parameters={"tone": "casual", "length": "long"})
    assert [p["id"] for p in ran["applied"]] == [pattern.pk]
    kept = decide(client, ran["run_id"], "rerun", parameters={"tone": "casual", "length": "short"})
    assert kept["overridden"] == []
    ran = run(client, parameters={"tone": "casual"})
    assert decide(client, ran["run_id"], "rerun", parameters={"tone": "formal"})["overridden"] == [pattern.pk]
