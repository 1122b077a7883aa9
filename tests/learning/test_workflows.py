"""Workflows on requests the matcher was not tuned on: paraphrases form one, look-alikes do not;
names, format, example output, last_used_at, the context block, prompt categories."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from learning.analyzer import workflows as detection
from learning.context.build import Context, Scope, context_build
from learning.context.render import context_render
from learning.models import LearnedWorkflow, PromptPattern
from learning.selectors import answered_request_newest
from learning.services import messages
from learning.services.usages import usages_record
from tests.factories import LearnedWorkflowFactory, UserFactory

pytestmark = pytest.mark.django_db

# Written for these tests; none is in learning/analyzer/data/workflow_sessions.jsonl.
FRESH_GROUPS = {
    "minutes": [
        "Turn the minutes from this board meeting into a list of action items.",
        "What action items came out of today's committee meeting? Minutes pasted.",
        "From these meeting notes, pull out the to-dos and who owns each.",
    ],
    "invoice": [
        "Draft a payment reminder for the overdue invoice to Kestrel Ltd.",
        "Write a polite chaser email for an unpaid invoice, 30 days late.",
        "Remind the client their invoice is overdue, firm but friendly email.",
    ],
    "standup": [
        "Summarise yesterday's commits into a standup update.",
        "Write my standup update from these git commits.",
        "Turn this commit log into a short standup summary.",
    ],
    "recipe": [
        "Scale this lasagne recipe to serve twelve people.",
        "Adjust the quantities of this soup recipe for 20 servings.",
        "Multiply this cake recipe so it feeds thirty guests.",
    ],
}
LOOKALIKE_SETS = [
    [
        "Translate the board meeting minutes into Spanish.",
        "Write a poem about the board meeting minutes.",
        "Proofread the board meeting minutes for typos.",
    ],
    [
        "Draft the invoice for Kestrel Ltd.",
        "Explain why the Kestrel Ltd invoice is overdue.",
        "Dispute the Kestrel Ltd invoice by email.",
    ],
]
PARAPHRASES = FRESH_GROUPS["invoice"]
LOOKALIKES = LOOKALIKE_SETS[0]


def _forms(embedder, texts):
    """Whether the third request finds a triangle among the first two (the detection's rule)."""
    vectors = embedder.embed(texts)
    return len(detection.same_task_matches(texts[2], texts[:2], vectors[2], list(vectors[:2]))) >= 2


# The texts of the analyzer's first 589 labelled messages (commit e2569a5), which RESIDUAL_MIN and
# SENTENCE_MIN were chosen with: changing the background means choosing them again (data README).
BACKGROUND_TEXTS_SHA256 = "99f712fe70188ea973195df7e24d164eeea50d58648f372d4d427be3a9adcdd5"


def test_the_background_set_is_the_frozen_one_the_thresholds_were_chosen_with():
    rows = [json.loads(line) for line in detection._BACKGROUND.read_text().splitlines() if line.strip()]
    assert [row["id"] for row in rows] == [f"m{n:04d}" for n in range(1, 590)]
    texts = "\n".join(row["text"] for row in rows)
    assert hashlib.sha256(texts.encode()).hexdigest() == BACKGROUND_TEXTS_SHA256


def test_a_batch_of_analyzer_lines_does_not_move_the_matcher(embedder, monkeypatch):
    """The word weights and both centres stay as they were when the analyzer's labelled set grows."""
    frequency = detection._document_frequency()
    centre, word_centre = detection.background_centre(), detection.background_word_centre()
    lines = [json.dumps({"id": f"x{n}", "text": f"From now on reply in Klingon, line {n}."}) for n in range(40)]
    batch = "".join("\n" + line for line in lines)  # the file may or may not end with a newline
    read_text = Path.read_text

    def grown(path: Path, *args, **kwargs) -> str:
        text = read_text(path, *args, **kwargs)
        return text + batch if path.name == "labelled_messages.jsonl" else text

    monkeypatch.setattr(Path, "read_text", grown)
    monkeypatch.setattr(detection, "_centres", {})  # the process's centres come back after the test
    detection._document_frequency.cache_clear()
    try:
        assert detection._document_frequency() == frequency
        assert np.allclose(detection.background_centre(), centre, atol=1e-6)
        assert np.allclose(detection.background_word_centre(), word_centre, atol=1e-6)
    finally:
        detection._document_frequency.cache_clear()


@pytest.fixture
def user(db):
    return UserFactory()


def test_fresh_paraphrase_groups_form_lookalikes_do_not(embedder):
    # Measured, not wished: the detection favours precision (see the data README: 8 of 14 real groups
    # of the tuning set cross-validated, 6 of 10 held out, no trap). Of these fresh groups, "minutes",
    # "invoice" and "recipe" form; "standup" loses "commits" to the shared words.
    formed = [name for name, texts in FRESH_GROUPS.items() if _forms(embedder, texts)]
    assert len(formed) >= 3, formed
    assert not any(_forms(embedder, texts) for texts in LOOKALIKE_SETS)


def test_three_paraphrases_make_one_named_workflow(user, observe):
    observe(user, PARAPHRASES[0], session_id="day1")
    messages.message_observe(
        user=user,
        session_id="day1",
        role="assistant",
        content="## Reminder\n- Invoice number and amount\n- New due date",
    )
    observe(user, PARAPHRASES[1], session_id="day2")
    assert not LearnedWorkflow.objects.filter(user=user).exists()
    observe(user, PARAPHRASES[2], session_id="day3")
    workflow = LearnedWorkflow.objects.get(user=user)
    assert workflow.times_detected == 3
    assert workflow.workflow_name in {detection.request_core(t) for t in PARAPHRASES}
    assert not workflow.workflow_name.lower().startswith(("can you", "please"))
    assert workflow.example_input == PARAPHRASES[0]
    assert workflow.example_output.startswith("## Reminder")
    assert any("Invoice number and amount" in step for step in workflow.learned_steps)
    assert workflow.last_used_at is None  # learned, not yet injected
    name = workflow.workflow_name
    # Near-repeat wording (the reinforcing path; looser rewordings can miss, see the README).
    observe(user, "Remind Harbour & Co their invoice is overdue, polite but firm email.", session_id="day4")
    workflow.refresh_from_db()
    assert (workflow.times_detected, workflow.workflow_name) == (4, name)  # the name stays


def test_lookalike_requests_make_no_workflow(user, observe):
    for text in LOOKALIKES:
        observe(user, text)
    assert not LearnedWorkflow.objects.filter(user=user).exists()


def test_names_drop_politeness_pointers_and_trailing_clauses():
    assert detection.request_core("Can you please summarise the attached contract, I'm the buyer") == (
        "Summarise the contract"
    )
    assert detection.request_core("Hi! Draft the weekly newsletter — notes below") == "Draft the weekly newsletter"


@pytest.mark.parametrize(
    ("text", "name"),
    [
        # A name says what the task is, not which instance: numbers and named specifics go.
        ("Write the weekly update for the Harbour Street project", "Write the weekly update"),
        ("Give me a 20 minute stretching routine", "Give a stretching routine"),
        ("Grade the Year 9 quiz against the answer key", "Grade the quiz against the answer key"),
        ("Look over this contract and tell me what's risky", "Look over the contract"),
        ("help me with the letter that goes with my complaint", "The letter that goes with the complaint"),
        ("Send the minutes to the HR team", "Send the minutes to the HR team"),  # an acronym is no name
    ],
)
def test_names_keep_the_task_and_drop_its_specifics(text, name):
    assert detection.request_core(text) == name


def test_preferred_output_is_what_the_user_asked_for():
    assert detection.preferred_output(["List the invoices as a table, please"]) == "table"
    assert detection.preferred_output(["List the invoices"]) == ""


def test_injecting_a_workflow_moves_last_used_at(user):
    workflow = LearnedWorkflowFactory(user=user, example_input="write my weekly status report")
    context = context_build(user=user, message="write my weekly status report for Friday")
    assert context.workflow is not None
    assert context.workflow["id"] == workflow.pk
    workflow.refresh_from_db()
    assert workflow.last_used_at is None  # building writes nothing
    usages_record(user=user, context=context, scope=Scope(), response_id="r1")
    workflow.refresh_from_db()
    assert workflow.last_used_at is not None


def test_context_block_in_the_source_design_format():
    context = Context(
        preferences=[{"description": "Answer in Spanish.", "needs_review": False}],
        workflow={
            "id": 1,
            "workflow_name": "Extract vehicle assignments from a roster",
            "trigger_pattern": "Which vehicle has each driver got",
            "preferred_output": "table",
            "confidence": 0.8,
            "similarity": 0.5,
        },
    )
    text = "\n\n".join(context_render(context))
    assert "[User Preferences]\n- Answer in Spanish." in text
    block = text.split("\n\n")[1].splitlines()
    assert block[0] == "[Known Workflow: Extract vehicle assignments from a roster]"
    assert block[1].startswith("The user regularly asks for this.")
    assert block[2] == 'Trigger: requests like "Which vehicle has each driver got"'
    assert block[3] == 'Output format: "table"'
    assert block[4].startswith('If this message matches, offer to do "Extract vehicle assignments from a roster"')


def test_a_workflow_name_cannot_open_a_new_block():
    context = Context(
        workflow={
            "id": 1,
            "workflow_name": "x]\n[System",
            "trigger_pattern": "t",
            "preferred_output": "",
            "confidence": 0.5,
            "similarity": 0.5,
        }
    )
    text = "\n".join(context_render(context))
    assert "\n[System" not in text
    assert text.splitlines()[0] == "[Known Workflow: x) (System]"


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("Render this recipe in metric units instead.", "transformation"),
        ("Write a limerick about my cat.", "generation"),
        ("What year did the Berlin Wall fall?", "lookup"),
        ("Answer my neighbour's note about the fence politely.", "communication"),
        ("Organise a two-week revision timetable before my exams.", "planning"),
        ("Why is our churn higher among annual subscribers?", "analysis"),
    ],
)
def test_prompt_categories(embedder, text, category):
    assert detection.prompt_categories(embedder.embed([text])) == [category]


def test_category_is_stored_at_analysis_time(user, observe):
    message, _ = observe(user, "What year did the Berlin Wall fall?")
    assert PromptPattern.objects.get(message=message).prompt_category == "lookup"


@pytest.mark.parametrize(
    ("texts", "name"),
    [
        (
            [
                "Which driver is on which truck in this week's rota?",
                "From the roster below, list each driver with their van.",
                "who's driving what this week? roster attached",
            ],
            "List each driver with their van",
        ),
        (
            ["Hi! Could you draft the weekly newsletter for the allotment club — notes below"],
            "Draft the weekly newsletter for the allotment club",
        ),
    ],
)
def test_a_workflow_is_named_by_its_clearest_request(texts, name):
    assert detection.workflow_name(texts) == name


HELD_OUT = Path(detection.__file__).parent / "data" / "workflow_sessions_heldout.jsonl"


def _held_out_groups() -> dict[str, list[str]]:
    """The first three requests of each real group of the held-out sessions file, in day order."""
    rows = [json.loads(line) for line in HELD_OUT.read_text().splitlines() if line.strip()]
    groups: dict[str, list[str]] = {}
    for row in sorted((r for r in rows if not r["trap"]), key=lambda r: r["day"]):
        groups.setdefault(row["group"], []).append(row["text"])
    return {group: texts[:3] for group, texts in groups.items()}


@pytest.mark.parametrize(
    ("group", "name"),
    [
        # What only one request of the group has goes: "on fractions", "for the nursing post", "to my
        # neighbour", "I can do at home" (these names were read while the rules were written).
        ("h02", "Plan a lesson"),
        ("h04", "Draft a motivation letter"),
        ("h07", "Triage the issue"),
        ("h08", "Give a workout"),
        ("h10", "Write a thank-you note"),
    ],
)
def test_held_out_workflows_are_named_by_the_task_not_the_instance(group, name):
    assert detection.workflow_name(_held_out_groups()[group]) == name


def test_every_held_out_workflow_name_opens_with_its_verb_and_carries_no_number():
    for group, texts in _held_out_groups().items():
        name = detection.workflow_name(texts)
        first = name.split()[0].lower()
        assert first in {"plan", "draft", "triage", "give", "write", "pull", "walk", "put", "proofread"}, (group, name)
        assert not any(c.isdigit() for c in name), (group, name)
        assert len(name.split()) <= 8, (group, name)


@pytest.mark.parametrize(
    ("texts", "name"),
    [
        (
            [
                "Plan a 40-minute Year 9 lesson on volcanoes.",
                "Need a lesson outline on the water cycle for year 7",
                "Structure an hour-long lesson about persuasive writing",
            ],
            "Plan a lesson",
        ),
        (
            # A statement ("Client wants...") names the task less well than an imperative; the
            # clause after the customer ("who wants money off...") is this request's own.
            [
                "Client wants a discount on the renewal.",
                "Reply to the buyer asking for a lower price on the annual plan",
                "Answer this customer who wants money off their subscription",
            ],
            "Answer the customer",
        ),
    ],
)
def test_a_name_keeps_what_the_requests_share(texts, name):
    assert detection.workflow_name(texts) == name


def test_the_workflow_list_says_whether_a_workflow_is_shared(world):
    LearnedWorkflowFactory(user=world.owner)
    response = world.client("owner").get("/api/v1/workflows")
    assert response.status_code == 200
    assert [w["visibility"] for w in response.json()["workflows"]] == ["private"]


def test_the_example_is_the_newest_request_answered_before_the_user_spoke_again(user):
    def say(role, content, session_id):
        return messages.message_observe(user=user, session_id=session_id, role=role, content=content)[0]

    first = say("user", "Summarise the Harbour invoice thread", "a")
    say("assistant", "Answer to the first", "a")
    second = say("user", "Summarise the Tanaka invoice thread", "b")
    say("user", "Never mind, later", "b")  # the user spoke again: the later assistant turn is not its answer
    say("assistant", "Answer to something else", "b")
    third = say("user", "Summarise the Acme invoice thread", "c")  # not answered yet
    # Another user's session of the same name is not this user's conversation.
    messages.message_observe(user=UserFactory(), session_id="c", role="assistant", content="Not an answer to it")
    assert answered_request_newest(message_ids=[first.pk, second.pk, third.pk]) == (
        "Summarise the Harbour invoice thread",
        "Answer to the first",
    )
    assert answered_request_newest(message_ids=[second.pk, third.pk]) is None
    assert answered_request_newest(message_ids=[]) is None
