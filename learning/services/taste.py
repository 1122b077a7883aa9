"""Taste learning: a tool's runs, what the user did with each output, and the patterns that follow.

1. ``command_run_record``: a ``CommandRun`` row and its ``post_command`` event (plugin, command,
   parameters, output, whether the tool reported success). The taste patterns in force for that
   plugin/command, consistent with each other, are recorded on the run: they were applied. The
   earlier successful runs of the command that got no decision were not corrected: they confirm
   the patterns applied to them (``taste_learning.runs_confirm_succeeded``).
2. ``command_decision_record``: the run's one ``CommandDecision`` row and its ``decision_point``
   event (accepted, edited, rejected, re-run with or without new parameters).
   The correction is derived from the run's output and the edited text (``learning.corrections``).
   Then, for each pattern applied to the run: accepted unchanged is a confirmation; an edit the
   other way, a rejection or a re-run is an override. Three overrides in a row reject it.
3. A direction that holds its dimension in the user's recent decisions on that plugin/command
   (or across the plugin's commands) becomes a candidate pattern, with an instruction computed
   from the edits ("Keep email draft outputs concise: under 150 words"); see ``taste_learning``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.actors import Actor
from accounts.models import Project, User
from config.exceptions import ApplicationError, Conflict, NotFoundError
from feedback.models import EventFamily, Signal
from feedback.services.events import EventInput, event_record, snapshot_fields_check
from learning.conf import learning_settings
from learning.context.cache import context_invalidate
from learning.corrections import Correction, corrections_derive, parameter_changes
from learning.models import CommandDecision, CommandRun, TastePattern
from learning.selectors import taste_patterns_applicable
from learning.services.taste_learning import (
    pattern_rivals,
    patterns_judge,
    patterns_learn,
    patterns_supersede_rivals,
    runs_confirm_succeeded,
)
from learning.services.undo import undo_record, undo_take

DECISIONS = ("accepted", "edited", "rejected", "rerun")
_SIGNAL = {
    "accepted": Signal.ACCEPTED,
    "edited": Signal.CORRECTED,
    "rejected": Signal.NEGATIVE,
    "rerun": Signal.NEGATIVE,
}


def target_of(plugin: str, command: str) -> str:
    return f"{plugin}/{command}"[:255]


@dataclass
class RunResult:
    run_id: str
    applied: list[TastePattern]
    # Patterns confirmed by earlier successful runs of the command that were not corrected.
    confirmed: list[int] = field(default_factory=list)


@dataclass
class DecisionResult:
    decision: str
    corrections: list[Correction]
    confirmed: list[int] = field(default_factory=list)
    overridden: list[int] = field(default_factory=list)
    rejected: list[int] = field(default_factory=list)
    patterns: list[TastePattern] = field(default_factory=list)


def command_run_record(
    *,
    actor: Actor,
    user: User,
    plugin: str,
    command: str,
    output: str,
    parameters: dict[str, Any] | None = None,
    project: Project | None = None,
    session_id: str = "",
    succeeded: bool | None = None,
) -> RunResult:
    """Record one run of a tool (its row and ``post_command`` event) and the taste patterns applied
    to it; the earlier uncorrected successful runs of the command confirm theirs."""
    plugin, command = _name(plugin, "plugin"), _name(command, "command")
    if parameters is not None and not isinstance(parameters, dict):
        raise ApplicationError("parameters must be a JSON object.", field="parameters")
    if succeeded is not None and not isinstance(succeeded, bool):
        raise ApplicationError("succeeded must be true or false.", field="succeeded")
    snapshot = {"output": output, "parameters": parameters or {}}
    snapshot_fields_check(snapshot)
    applied = taste_patterns_applicable(user=user, plugin=plugin, command=command)
    run_id = str(uuid.uuid4())
    with transaction.atomic():
        confirmed = runs_confirm_succeeded(user=user, plugin=plugin, command=command)
        metadata: dict[str, Any] = {"plugin": plugin, "command": command, "applied_patterns": [p.pk for p in applied]}
        if succeeded is not None:
            metadata["succeeded"] = succeeded
        write = event_record(
            actor=actor,
            data=EventInput(
                event_type="post_command",
                event_family=EventFamily.TOOL_ACTION,
                signal=Signal.FAILED if succeeded is False else Signal.COMPLETED,
                user_id=user.pk,
                project_slug=project.slug if project else None,
                session_id=session_id[:255],
                target_id=target_of(plugin, command),
                surface="command",
                subject_type="command_run",
                subject_id=run_id,
                after_snapshot=snapshot,
                metadata=metadata,
            ),
        )
        CommandRun.objects.create(
            id=run_id,
            user=user,
            project=write.event.project,
            session_id=session_id[:255],
            plugin=plugin,
            command=command,
            parameters=parameters or {},
            output=output,
            applied_patterns=[p.pk for p in applied],
            succeeded=succeeded,
            event=write.event,
        )
        if applied:
            TastePattern.objects.filter(pk__in=[p.pk for p in applied]).update(last_applied_at=timezone.now())
        if confirmed:
            transaction.on_commit(lambda: context_invalidate(user_id=user.pk))
    return RunResult(run_id=run_id, applied=applied, confirmed=confirmed)


def _name(value: str, field_name: str) -> str:
    value = (value or "").strip()
    if not value:
        raise ApplicationError(f"{field_name} must not be empty.", field=field_name)
    if len(value) > 100:
        raise ApplicationError(f"{field_name} is at most 100 characters.", field=field_name)
    return value


def _run_get(*, user: User, run_id: str) -> CommandRun:
    try:
        parsed = uuid.UUID(str(run_id))  # any spelling of the id command_run_record returned
    except ValueError as exc:
        raise ApplicationError("run_id must be the id a recorded run returned.", field="run_id") from exc
    # Only runs command_run_record wrote have a row: a post_command sent through the generic
    # events API is not a run.
    run = CommandRun.objects.select_related("project").filter(pk=parsed, user=user).first()
    if run is None:
        raise NotFoundError("No such run: record the post_command before its decision.", field="run_id")
    return run


def command_decision_record(
    *,
    actor: Actor,
    user: User,
    run_id: str,
    decision: str,
    edited_output: str | None = None,
    parameters: dict[str, Any] | None = None,
    reason: str = "",
) -> DecisionResult:
    """Record what the user did with a run's output (its row and ``decision_point`` event), derive
    the correction, confirm or override the patterns applied to the run, and learn the patterns
    it completes."""
    if decision not in DECISIONS:
        raise ApplicationError(f"decision must be one of {', '.join(DECISIONS)}.", field="decision")
    if decision == "edited" and edited_output is None:
        raise ApplicationError("An edited decision needs the edited_output.", field="edited_output")
    if parameters is not None and not isinstance(parameters, dict):
        raise ApplicationError("parameters must be a JSON object.", field="parameters")
    # A re-run without parameters is a plain re-run: the same inputs again, the output was not right.
    plain_rerun = decision == "rerun" and parameters is None
    after_snapshot: dict[str, Any] | None = None
    if decision == "edited":
        after_snapshot = {"edited_output": edited_output}
    elif decision == "rerun" and not plain_rerun:
        after_snapshot = {"parameters": parameters}
    if after_snapshot is not None:
        snapshot_fields_check(after_snapshot)
    run = _run_get(user=user, run_id=run_id)
    plugin, command = run.plugin, run.command
    corrections: list[Correction] = []
    if decision == "edited":
        corrections = corrections_derive(run.output, edited_output or "")
    elif decision == "rerun" and not plain_rerun:
        corrections = parameter_changes(run.parameters or {}, parameters or {})
    result = DecisionResult(decision=decision, corrections=corrections)
    with transaction.atomic():
        write = event_record(
            actor=actor,
            data=EventInput(
                event_type="decision_point",
                event_family=EventFamily.TOOL_ACTION,
                signal=_SIGNAL[decision],
                user_id=user.pk,
                project_slug=run.project.slug if run.project else None,
                session_id=run.session_id,
                target_id=target_of(plugin, command),
                surface="command",
                subject_type="command_run",
                subject_id=str(run.pk),
                reason_category=decision,
                free_text=reason[:10_000],
                before_snapshot={"words": len(run.output.split())},
                after_snapshot=after_snapshot,
                metadata={
                    "plugin": plugin,
                    "command": command,
                    "decision": decision,
                    "corrections": [c.as_dict() for c in corrections],
                    "applied_patterns": run.applied_patterns,
                    **({"plain_rerun": True} if plain_rerun else {}),
                },
            ),
        )
        # One decision per output (what the user did with it): the unique run column refuses a
        # second one, and a concurrent second request waits on it and is refused once the first
        # commits, before it judged anything; its event goes with its rolled-back transaction.
        try:
            with transaction.atomic():
                CommandDecision.objects.create(
                    run=run,
                    decision=decision,
                    edited_output=edited_output if decision == "edited" else None,
                    parameters=parameters if decision == "rerun" else None,
                    corrections=[c.as_dict() for c in corrections],
                    event=write.event,
                )
        except IntegrityError as exc:
            if not CommandDecision.objects.filter(run=run).exists():
                raise  # not the one-decision rule: a fault to see, not a conflict to report
            raise Conflict(
                "This run already has its decision; record a new run for a new output.", field="run_id"
            ) from exc
        # Locked, so that the success sweep of a concurrent run cannot judge it too; judged once.
        confirmed_by_success = (
            CommandRun.objects.select_for_update().filter(pk=run.pk).values_list("judged_at", flat=True).get()
            is not None
        )
        CommandRun.objects.filter(pk=run.pk).update(judged_at=timezone.now())
        result.confirmed, result.overridden, result.rejected = patterns_judge(
            user=user,
            applied=run.applied_patterns,
            decision=decision,
            corrections=corrections,
            plain_rerun=plain_rerun,
            confirmed_by_success=confirmed_by_success,
        )
        result.patterns = patterns_learn(user=user, plugin=plugin, command=command)
        transaction.on_commit(lambda: context_invalidate(user_id=user.pk))
    return result


def taste_pattern_stop(*, user: User, pattern_id: int | None = None) -> TastePattern | None:
    """ "Stop applying this": reject a pattern (by id, or the one applied last to the user's runs,
    within the last day: "this" is something the user just saw). Audited (``taste_pattern_stopped``)
    and undoable (``taste_pattern_undo``); stopping a stopped pattern changes nothing."""
    with transaction.atomic():
        qs = TastePattern.objects.select_for_update().filter(user=user)
        if pattern_id is not None:
            pattern = qs.filter(pk=pattern_id).first()
            if pattern is None:
                raise NotFoundError("No such taste pattern.", field="id")
        else:
            pattern = (
                qs.exclude(status=TastePattern.Status.REJECTED)
                .filter(last_applied_at__gte=timezone.now() - timedelta(days=1))
                .order_by("-last_applied_at")
                .first()
            )
            if pattern is None:
                return None
        if pattern.status != TastePattern.Status.REJECTED:
            before = {"status": pattern.status, "rejected_reason": pattern.rejected_reason}
            pattern.status, pattern.rejected_reason = TastePattern.Status.REJECTED, "stopped_by_user"
            pattern.save(update_fields=["status", "rejected_reason", "updated_at"])
            undo_record(
                user_id=user.pk, subject_type="taste_pattern", subject_id=pattern.pk, action="stopped", before=before
            )
            # Without an id the request came from chat ("stop applying this"); with one, from the panel or the API.
            _pattern_audit(pattern, before, surface="chat" if pattern_id is None else "preferences")
            transaction.on_commit(lambda: context_invalidate(user_id=user.pk))
    return pattern


def taste_pattern_resume(*, user: User, pattern_id: int) -> TastePattern:
    """Resume a stopped (rejected) pattern at the user's request: applied again, active if its
    confirmations already made it so, else on trial, with its run of overrides cleared. A live
    pattern in the other direction of its dimension, same scope, is superseded (the user's latest
    choice wins: two contradicting patterns are never applied). Audited (``taste_pattern_resumed``)
    and undoable. Resuming a pattern that is applied is a Conflict naming ``status``."""
    with transaction.atomic():
        pattern = TastePattern.objects.select_for_update().filter(user=user, pk=pattern_id).first()
        if pattern is None:
            raise NotFoundError("No such taste pattern.", field="id")
        if pattern.status != TastePattern.Status.REJECTED:
            raise Conflict(f"This pattern is applied already ({pattern.status}); nothing to resume.", field="status")
        before: dict[str, Any] = {
            "status": pattern.status,
            "rejected_reason": pattern.rejected_reason,
            "consecutive_rejections": pattern.consecutive_rejections,
        }
        confirmed = pattern.confirmations >= learning_settings.TASTE_CONFIRMATIONS_TO_ACTIVATE
        pattern.status = TastePattern.Status.ACTIVE if confirmed else TastePattern.Status.CANDIDATE
        pattern.rejected_reason, pattern.consecutive_rejections = "", 0
        pattern.save(update_fields=["status", "rejected_reason", "consecutive_rejections", "updated_at"])
        before["rivals"] = patterns_supersede_rivals(pattern)
        undo_record(
            user_id=user.pk, subject_type="taste_pattern", subject_id=pattern.pk, action="resumed", before=before
        )
        _pattern_audit(pattern, before, surface="preferences")
        transaction.on_commit(lambda: context_invalidate(user_id=user.pk))
    return pattern


def taste_pattern_undo(*, user: User, pattern_id: int) -> tuple[str, TastePattern]:
    """Undo the user's newest stop or resume of this pattern (within LEARNING_UNDO_SECONDS): it gets
    its status back, and the patterns a resume superseded get theirs. Putting a stopped pattern
    back while another direction of its dimension is applied is a Conflict naming ``status``."""
    with transaction.atomic():
        entry = undo_take(user=user, subject_type="taste_pattern", subject_id=pattern_id, label="taste pattern")
        pattern = TastePattern.objects.select_for_update().filter(user=user, pk=pattern_id).first()
        if pattern is None:
            raise NotFoundError("No such taste pattern.", field="id")
        before = {"status": pattern.status, "rejected_reason": pattern.rejected_reason}
        pattern.status, pattern.rejected_reason = entry.before["status"], entry.before["rejected_reason"]
        if "consecutive_rejections" in entry.before:
            pattern.consecutive_rejections = entry.before["consecutive_rejections"]
        if pattern.status != TastePattern.Status.REJECTED and pattern_rivals(pattern):
            raise Conflict(
                "A pattern in the other direction is applied now; stop it first to apply this one again.",
                field="status",
            )
        pattern.save(update_fields=["status", "rejected_reason", "consecutive_rejections", "updated_at"])
        for rival in entry.before.get("rivals", []):
            TastePattern.objects.filter(pk=rival["id"], user=user, status=TastePattern.Status.REJECTED).update(
                status=rival["status"],
                rejected_reason=rival["rejected_reason"],
                evidence=rival["evidence"],
                updated_at=timezone.now(),
            )
        _pattern_audit(pattern, before, surface="preferences", undo=True)
        transaction.on_commit(lambda: context_invalidate(user_id=user.pk))
    return entry.action, pattern


def _pattern_audit(pattern: TastePattern, before: dict[str, Any], *, surface: str, undo: bool = False) -> None:
    """The audit event of a user's stop or resume (or its undo): ``taste_pattern_stopped`` or
    ``taste_pattern_resumed``, with the status before and after, in the user's private stream."""
    stopped = pattern.status == TastePattern.Status.REJECTED
    event_record(
        actor=Actor.for_system(),
        data=EventInput(
            event_type="taste_pattern_stopped" if stopped else "taste_pattern_resumed",
            event_family=EventFamily.TOOL_ACTION,
            signal=Signal.NEGATIVE if stopped else Signal.POSITIVE,
            user_id=pattern.user_id,
            target_id=target_of(pattern.plugin, pattern.command) if pattern.command else pattern.plugin[:255],
            surface=surface,
            subject_type="taste_pattern",
            subject_id=str(pattern.pk),
            reason_category="undo" if undo else "user_request",
            before_snapshot={"status": before["status"], "rejected_reason": before["rejected_reason"]},
            after_snapshot={"status": pattern.status, "rejected_reason": pattern.rejected_reason},
            metadata={"plugin": pattern.plugin, "command": pattern.command, "instruction": pattern.instruction},
            private=True,
        ),
    )
