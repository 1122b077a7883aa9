"""Taste that stays consistent (issue 10): opposite corrections weigh against each other, patterns
that contradict are never applied together, a deleted recurring line is "leave out X", a re-run
needs no parameters, a correction shared by a plugin's commands is plugin-wide, and a successful
run the user did not correct confirms the patterns applied to it."""

from __future__ import annotations

import pytest

from feedback.models import FeedbackEvent
from learning.models import CommandDecision, CommandRun, TastePattern
from learning.selectors import taste_patterns_applicable
from learning.services import taste
from learning.services.taste_rules import winning_directions
from tests.factories import TastePatternFactory
from tests.learning.conftest import REPORT, WITHOUT_NEXT_STEPS, context_of, learn_section_pattern
from tests.learning.conftest import command_decide as decide
from tests.learning.conftest import command_run as run

pytestmark = pytest.mark.django_db

LONG = "The kitchen refit starts on Monday and the fitters need the whole week for the units. " * 6
SHORT = "The refit starts Monday; the fitters need the week."
LONGER = LONG + "They will also take away the old units and leave the room clean every evening. " * 5
EMAIL = (
    "Hi Priya,\n\nThe revised quote for the kitchen refit is attached, with the new worktop and the extra "
    "sockets you asked for.\n\nLet me know if you have questions.\n\nBest,\nOmar"
)


def edit(client, after, *, output=LONG, command="draft", plugin="email", **extra) -> dict:
    ran = run(client, output=output, command=command, plugin=plugin, **extra)
    return decide(client, ran["run_id"], "edited", edited_output=after)


def live(user, **filters) -> list[TastePattern]:
    return list(TastePattern.objects.filter(user=user, status__in=["candidate", "active"], **filters))


# --- the majority rule (pure) -----------------------------------------------------------------


def _length(direction):
    return [{"type": "length", "direction": direction, "detail": {}}]


@pytest.mark.parametrize(
    ("newest_first", "winner"),
    [
        (["shorter"] * 3 + ["longer"] * 3, None),
        (["shorter", "longer"] * 3, None),
        (["shorter"] * 4 + ["longer"], "shorter"),
        (["shorter"] * 3 + ["longer"], "shorter"),
        (["shorter"] * 2, None),  # too few
        (["longer"] * 5 + ["shorter"] * 10, "longer"),  # the latest six decide, not the old ones
        (["longer"] * 4 + ["shorter"] * 10, None),
    ],
)
def test_a_direction_needs_a_clear_majority_of_the_recent_corrections(newest_first, winner):
    found = winning_directions([_length(d) for d in newest_first], min_observations=3, majority=0.7, dimension_window=6)
    assert [direction for _, direction in found] == ([winner] if winner else [])


def test_decisions_without_a_correction_on_the_dimension_do_not_dilute_it():
    decisions = [_length("shorter"), [], _length("shorter"), [], _length("shorter")]
    assert list(winning_directions(decisions, min_observations=3, majority=0.7, dimension_window=6)) == [
        ("length", "shorter")
    ]


# --- opposite corrections: no two contradicting patterns --------------------------------------


def test_three_shortened_and_three_lengthened_runs_apply_no_contradicting_patterns(world):
    client = world.client("owner")
    for after in (SHORT, SHORT, SHORT):
        edit(client, after)
    shorter = TastePattern.objects.get(user=world.owner, direction="shorter")
    for _ in range(3):
        result = edit(client, LONGER)
        assert result["overridden"] == [shorter.pk]
    shorter.refresh_from_db()
    assert (shorter.status, shorter.rejected_reason) == ("rejected", "overridden")
    assert not TastePattern.objects.filter(user=world.owner, direction="longer").exists()
    assert run(client)["applied"] == []
    assert context_of(client, plugin="email", command="draft", surface="command")["taste_patterns"] == []


def test_alternating_directions_make_no_pattern(world):
    client = world.client("owner")
    for after in (SHORT, LONGER) * 3:
        edit(client, after)
    assert not TastePattern.objects.filter(user=world.owner).exists()


def test_a_new_winning_direction_supersedes_the_opposite_pattern(world):
    client = world.client("owner")
    # Runs recorded before any pattern existed: no pattern is applied to them, none overridden.
    runs = [run(client, output=LONG)["run_id"] for _ in range(8)]
    for run_id in runs[:3]:
        decide(client, run_id, "edited", edited_output=SHORT)
    shorter = TastePattern.objects.get(user=world.owner, direction="shorter")
    for run_id in runs[3:7]:
        decide(client, run_id, "edited", edited_output=LONGER)
    shorter.refresh_from_db()
    assert shorter.status == "candidate"  # 4 longer of the last 7: no clear majority yet
    result = decide(client, runs[7], "edited", edited_output=LONGER)
    longer = TastePattern.objects.get(user=world.owner, direction="longer")
    assert [p["id"] for p in result["patterns"]] == [longer.pk]
    shorter.refresh_from_db()
    assert (shorter.status, shorter.rejected_reason) == ("rejected", "superseded")
    assert shorter.evidence["superseded_by"] == longer.pk
    assert [p["id"] for p in run(client)["applied"]] == [longer.pk]


def test_a_superseded_direction_that_wins_again_is_on_trial_again(world):
    user, actor = world.owner, world.actor("owner")
    # Runs recorded before the patterns: none is applied to them, so none is overridden.
    runs = [
        taste.command_run_record(actor=actor, user=user, plugin="email", command="draft", output=LONG) for _ in "abc"
    ]
    shorter = TastePatternFactory(user=user, direction="shorter", status="rejected", rejected_reason="superseded")
    longer = TastePatternFactory(user=user, direction="longer", status="candidate")
    for ran in runs:
        taste.command_decision_record(actor=actor, user=user, run_id=ran.run_id, decision="edited", edited_output=SHORT)
    shorter.refresh_from_db()
    longer.refresh_from_db()
    assert (shorter.status, shorter.rejected_reason, shorter.observations) == ("candidate", "", 3)
    assert (longer.status, longer.rejected_reason) == ("rejected", "superseded")


def test_a_pattern_the_user_stopped_is_not_revived_by_winning_again(world):
    stopped = TastePatternFactory(
        user=world.owner, direction="shorter", status="rejected", rejected_reason="overridden"
    )
    client = world.client("owner")
    for _ in range(3):
        edit(client, SHORT)
    stopped.refresh_from_db()
    assert stopped.status == "rejected"


def test_rows_that_contradict_are_never_selected_together(world):
    # As the bug left them: two live patterns of opposite directions on one command.
    keep = TastePatternFactory(user=world.owner, direction="shorter", confidence=0.6)
    TastePatternFactory(user=world.owner, direction="longer", confidence=0.4)
    assert [p.pk for p in taste_patterns_applicable(user=world.owner, plugin="email", command="draft")] == [keep.pk]
    client = world.client("owner")
    assert [p["id"] for p in run(client)["applied"]] == [keep.pk]
    block = context_of(client, plugin="email", command="draft", surface="command")
    assert [p["id"] for p in block["taste_patterns"]] == [keep.pk]


# --- a deleted line is "leave out X" ----------------------------------------------------------


def test_deleting_a_closing_line_three_times_is_learned_as_leave_out(world):
    client = world.client("owner")
    without = EMAIL.replace("Let me know if you have questions.\n\n", "")
    for _ in range(3):
        result = edit(client, without, output=EMAIL)
        assert [c["type"] for c in result["corrections"]] == ["line"]
    [pattern] = TastePattern.objects.filter(user=world.owner)
    assert (pattern.correction_type, pattern.direction) == ("line", "removed:let me know if you have questions")
    assert pattern.instruction == "Leave out 'Let me know if you have questions' in email draft outputs."
    ran = run(client, output=EMAIL)
    assert ran["notices"] == [
        "[Intel] Applying learned preference: \"Leave out 'Let me know if you have questions' in email draft outputs.\""
    ]
    # Putting the line back overrides it.
    assert decide(client, ran["run_id"], "edited", edited_output=EMAIL + "\nThanks")["overridden"] == []
    again = run(client, output=without)
    assert decide(client, again["run_id"], "edited", edited_output=EMAIL)["overridden"] == [pattern.pk]


# --- a re-run needs no parameters ---------------------------------------------------------------


def test_a_rerun_without_parameters_is_a_plain_rerun_that_overrides_the_applied_patterns(world):
    pattern = learn_section_pattern(world)
    client = world.client("owner")
    ran = run(client, parameters={"tone": "formal"})
    assert [p["id"] for p in ran["applied"]] == [pattern.pk]
    result = decide(client, ran["run_id"], "rerun")
    assert (result["corrections"], result["overridden"]) == ([], [pattern.pk])
    decision = CommandDecision.objects.get(run_id=ran["run_id"])
    assert (decision.decision, decision.parameters, decision.corrections) == ("rerun", None, [])
    event = FeedbackEvent.objects.get(pk=decision.event_id)
    assert (event.signal, event.after_snapshot, event.metadata["plain_rerun"]) == ("negative", {}, True)
    # null is the same plain re-run
    ran = run(client)
    assert decide(client, ran["run_id"], "rerun", parameters=None)["overridden"] == [pattern.pk]


def test_a_plain_rerun_overrides_a_parameter_pattern_too(world):
    client = world.client("owner")
    for _ in range(3):
        ran = run(client, parameters={"tone": "formal"})
        decide(client, ran["run_id"], "rerun", parameters={"tone": "casual"})
    pattern = TastePattern.objects.get(user=world.owner, correction_type="parameter")
    ran = run(client, parameters={"tone": "casual"})
    assert taste.command_decision_record(
        actor=world.actor("owner"), user=world.owner, run_id=ran["run_id"], decision="rerun"
    ).overridden == [pattern.pk]


# --- plugin-wide patterns ---------------------------------------------------------------------


def test_the_same_correction_on_three_commands_is_a_plugin_wide_pattern(world):
    client = world.client("owner")
    for command in ("draft", "reply", "summarize"):
        edit(client, WITHOUT_NEXT_STEPS, output=REPORT, command=command)
    pattern = TastePattern.objects.get(user=world.owner, command=None)
    assert (pattern.plugin, pattern.direction) == ("email", "removed:next steps")
    assert pattern.instruction == "Leave out the 'next steps' section in email outputs."
    assert "3/3 times across 3 commands" in pattern.description
    assert not TastePattern.objects.filter(user=world.owner, command__isnull=False).exists()
    # Applied to every command of the plugin, also one never corrected; not to another plugin.
    assert [p["id"] for p in run(client, command="forward")["applied"]] == [pattern.pk]
    assert context_of(client, plugin="email", command="forward", surface="command")["taste_patterns"][0]["id"] == (
        pattern.pk
    )
    assert run(client, plugin="calendar")["applied"] == []


def test_a_plugin_wide_length_is_a_share_not_one_commands_word_count(world):
    client = world.client("owner")
    for command in ("draft", "reply", "summarize"):
        edit(client, SHORT, command=command)
    pattern = TastePattern.objects.get(user=world.owner, command=None)
    assert pattern.direction == "shorter"
    assert pattern.instruction.startswith("Keep email outputs concise: about ")
    assert "% shorter" in pattern.instruction


def test_two_commands_or_one_that_contradicts_make_no_plugin_wide_pattern(world):
    client = world.client("owner")
    for command in ("draft", "draft", "reply"):
        edit(client, SHORT, command=command)
    assert not TastePattern.objects.filter(user=world.owner, command=None).exists()
    edit(client, LONGER, command="summarize")  # a third command, corrected the other way
    edit(client, SHORT, command="forward")
    assert not TastePattern.objects.filter(user=world.owner, command=None).exists()


def test_the_commands_own_pattern_takes_precedence_over_a_contradicting_plugin_wide_one(world):
    wide = TastePatternFactory(user=world.owner, command=None, direction="shorter", confidence=0.9)
    own = TastePatternFactory(user=world.owner, command="draft", direction="longer", confidence=0.1)
    client = world.client("owner")
    assert [p["id"] for p in run(client, command="draft")["applied"]] == [own.pk]
    assert [p["id"] for p in run(client, command="reply")["applied"]] == [wide.pk]
    block = context_of(client, plugin="email", command="draft", surface="command")
    assert [p["id"] for p in block["taste_patterns"]] == [own.pk]


# --- an uncorrected success confirms ----------------------------------------------------------


def test_a_successful_run_not_corrected_before_the_next_run_confirms_its_patterns_once(world):
    pattern = learn_section_pattern(world)
    client = world.client("owner")
    first = run(client, output=WITHOUT_NEXT_STEPS, succeeded=True)
    assert first["confirmed"] == []
    assert CommandRun.objects.get(pk=first["run_id"]).succeeded is True
    second = run(client, output=WITHOUT_NEXT_STEPS)
    assert second["confirmed"] == [pattern.pk]
    assert run(client, output=WITHOUT_NEXT_STEPS)["confirmed"] == []  # counted once
    pattern.refresh_from_db()
    assert pattern.confirmations == 1
    assert pattern.confidence > 0
    # Accepting it afterwards does not count it again.
    assert decide(client, first["run_id"], "accepted")["confirmed"] == []
    pattern.refresh_from_db()
    assert pattern.confirmations == 1


def test_a_correction_after_the_success_was_counted_takes_the_confirmation_back(world):
    pattern = learn_section_pattern(world)
    client = world.client("owner")
    first = run(client, output=WITHOUT_NEXT_STEPS, succeeded=True)
    run(client, output=WITHOUT_NEXT_STEPS)
    result = decide(client, first["run_id"], "edited", edited_output=REPORT)
    assert result["overridden"] == [pattern.pk]
    pattern.refresh_from_db()
    assert (pattern.confirmations, pattern.rejections) == (0, 1)


def test_a_failed_corrected_or_decided_run_confirms_nothing(world):
    pattern = learn_section_pattern(world)
    client = world.client("owner")
    failed = run(client, output=WITHOUT_NEXT_STEPS, succeeded=False)
    assert FeedbackEvent.objects.get(subject_id=failed["run_id"]).signal == "failed"
    corrected = run(client, output=WITHOUT_NEXT_STEPS, succeeded=True)
    decide(client, corrected["run_id"], "edited", edited_output=REPORT)
    accepted = run(client, output=WITHOUT_NEXT_STEPS, succeeded=True)
    assert decide(client, accepted["run_id"], "accepted")["confirmed"] == [pattern.pk]
    assert run(client, output=WITHOUT_NEXT_STEPS)["confirmed"] == []  # the accepted one counted already
    pattern.refresh_from_db()
    assert (pattern.confirmations, pattern.rejections) == (1, 1)


def test_a_success_confirms_only_on_the_next_run_of_the_same_command(world):
    pattern = learn_section_pattern(world)
    client = world.client("owner")
    run(client, output=WITHOUT_NEXT_STEPS, succeeded=True)
    assert run(client, command="reply")["confirmed"] == []
    assert run(world.client("other"), output=WITHOUT_NEXT_STEPS)["confirmed"] == []
    assert run(world.client("service", on_behalf_of="ext-owner"))["confirmed"] == [pattern.pk]
