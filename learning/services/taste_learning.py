"""Taste learning's writes to patterns: judging the patterns applied to a run (confirmed by an
accepted or an uncorrected successful output, overridden by a correction the other way) and
learning patterns from the user's recent decisions.

A direction becomes a pattern only if it holds its dimension: seen ``TASTE_MIN_OBSERVATIONS``
times and at least ``TASTE_MAJORITY_SHARE`` of the latest corrections on that dimension (3 shorter
and 3 longer: no pattern). When a direction wins, the live pattern of the other direction in the
same scope is superseded (rejected, with the reason and the winner kept). A direction that several
commands of one plugin share, and that no command of it contradicts, becomes a plugin-wide pattern
(``command`` None).
"""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import User
from learning.conf import learning_settings
from learning.corrections import Correction, dimension
from learning.models import CommandDecision, CommandRun, TastePattern
from learning.services.taste_rules import (
    PLUGIN_WIDE_TYPES,
    distill,
    pattern_confidence,
    pattern_overridden,
    winning_directions,
)

_JUDGED_FIELDS = ["confirmations", "rejections", "consecutive_rejections", "status", "rejected_reason", "confidence"]
LIVE = (TastePattern.Status.CANDIDATE, TastePattern.Status.ACTIVE)


def _confirm(pattern: TastePattern) -> None:
    pattern.confirmations += 1
    pattern.consecutive_rejections = 0
    if pattern.confirmations >= learning_settings.TASTE_CONFIRMATIONS_TO_ACTIVATE:
        pattern.status = TastePattern.Status.ACTIVE


def patterns_judge(
    *,
    user: User,
    applied: list[int],
    decision: str,
    corrections: list[Correction],
    plain_rerun: bool = False,
    confirmed_by_success: bool = False,
) -> tuple[list[int], list[int], list[int]]:
    """Confirm or override each pattern applied to a run; three overrides in a row reject it.
    A run already confirmed by its uncorrected success is not confirmed again by "accepted", and
    a later correction takes that confirmation back. Returns (confirmed, overridden, rejected)."""
    confirmed: list[int] = []
    overridden: list[int] = []
    rejected: list[int] = []
    if not applied:
        return confirmed, overridden, rejected
    for pattern in TastePattern.objects.select_for_update().filter(pk__in=applied, user=user).order_by("pk"):
        if pattern.status == TastePattern.Status.REJECTED:
            continue
        if decision == "accepted":
            if confirmed_by_success:
                continue  # counted when the next run showed the success stood
            _confirm(pattern)
            confirmed.append(pattern.pk)
        elif pattern_overridden(pattern, decision, corrections, plain_rerun=plain_rerun):
            if confirmed_by_success and pattern.confirmations:
                pattern.confirmations -= 1  # the success was corrected after all
            pattern.rejections += 1
            pattern.consecutive_rejections += 1
            overridden.append(pattern.pk)
            if pattern.consecutive_rejections >= learning_settings.TASTE_REJECTIONS_TO_STOP:
                pattern.status, pattern.rejected_reason = TastePattern.Status.REJECTED, "overridden"
                rejected.append(pattern.pk)
        else:
            continue  # edited in some other respect: says nothing about this pattern
        pattern.confidence = pattern_confidence(pattern)
        pattern.save(update_fields=[*_JUDGED_FIELDS, "updated_at"])
    return confirmed, overridden, rejected


def runs_confirm_succeeded(*, user: User, plugin: str, command: str) -> list[int]:
    """The user moved on to a new run: the earlier successful runs of this command that got no
    decision were not corrected, so they confirm the patterns applied to them (each run once)."""
    pending = list(
        CommandRun.objects.filter(
            user=user, plugin=plugin, command=command, succeeded=True, judged_at__isnull=True, decision__isnull=True
        )
        .order_by("-created_at")
        .values_list("pk", "applied_patterns")[: learning_settings.TASTE_WINDOW]
    )
    confirmed: list[int] = []
    now = timezone.now()
    for run_id, applied in pending:
        # The claim: a concurrent sweep or decision that judged the run first leaves nothing to claim.
        if not CommandRun.objects.filter(pk=run_id, judged_at__isnull=True).update(judged_at=now) or not applied:
            continue
        for pattern in TastePattern.objects.select_for_update().filter(pk__in=applied, user=user, status__in=LIVE):
            _confirm(pattern)
            pattern.confidence = pattern_confidence(pattern)
            pattern.save(update_fields=[*_JUDGED_FIELDS, "updated_at"])
            confirmed.append(pattern.pk)
    return confirmed


def patterns_learn(*, user: User, plugin: str, command: str) -> list[TastePattern]:
    """Learn from the user's recent decisions on this plugin/command, then on every command of
    the plugin: create, update or revive the pattern of each winning direction."""
    window = learning_settings.TASTE_WINDOW
    # Decision rows only: decision_point events sent through the generic events API are not read.
    decided = CommandDecision.objects.filter(run__user=user, run__plugin=plugin).order_by("-created_at")
    own = list(decided.filter(run__command=command).values_list("corrections", flat=True)[:window])
    plugin_rows = list(decided.values_list("run__command", "corrections")[:window])
    changed = []
    for (kind, direction), details in _winners(own).items():
        pattern = _upsert(
            user,
            plugin,
            command,
            kind,
            direction,
            details,
            distill(plugin, command, kind, direction, details, len(own)),
            len(own),
        )
        if pattern is not None:
            changed.append(pattern)
    for (kind, direction), (details, commands) in _plugin_winners(plugin_rows).items():
        texts = distill(plugin, None, kind, direction, details, len(plugin_rows), commands=len(commands))
        pattern = _upsert(user, plugin, None, kind, direction, details, texts, len(plugin_rows))
        if pattern is not None:
            changed.append(pattern)
    return changed


def _winners(decisions: list[list[dict[str, Any]]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    return winning_directions(
        decisions,
        min_observations=learning_settings.TASTE_MIN_OBSERVATIONS,
        majority=learning_settings.TASTE_MAJORITY_SHARE,
        dimension_window=learning_settings.TASTE_DIMENSION_WINDOW,
    )


def _plugin_winners(rows: list[tuple[str, list[dict[str, Any]]]]) -> dict[tuple[str, str], tuple[list[Any], set[str]]]:
    """The directions that hold their dimension across the plugin's recent decisions, that at least
    TASTE_PLUGIN_MIN_COMMANDS commands show and that every command correcting that dimension agrees with."""
    shared = [[c for c in found if c["type"] in PLUGIN_WIDE_TYPES] for _, found in rows]
    by_command: dict[str, list[list[dict[str, Any]]]] = {}
    for (command, _), found in zip(rows, shared, strict=True):
        by_command.setdefault(command, []).append(found)
    winners = {}
    for (kind, direction), details in _winners(shared).items():
        key = dimension(kind, direction)
        showing, agreeing = set(), True
        for command, decisions in by_command.items():
            if any(dimension(c["type"], c["direction"]) == key for found in decisions for c in found):
                # Every command that corrected this dimension must lean this way itself.
                own = winning_directions(
                    decisions,
                    min_observations=1,
                    majority=learning_settings.TASTE_MAJORITY_SHARE,
                    dimension_window=learning_settings.TASTE_DIMENSION_WINDOW,
                )
                agreeing = agreeing and (kind, direction) in own
                showing.add(command)
        if agreeing and len(showing) >= learning_settings.TASTE_PLUGIN_MIN_COMMANDS:
            winners[(kind, direction)] = (details, showing)
    return winners


def _upsert(
    user: User,
    plugin: str,
    command: str | None,
    kind: str,
    direction: str,
    details: list[dict[str, Any]],
    texts: tuple[str, str],
    decisions: int,
) -> TastePattern | None:
    """Create or update the pattern of a winning direction, and supersede the other directions
    of its dimension in the same scope. None if the user stopped it or a concurrent decision is
    creating it."""
    instruction, description = texts
    evidence = {"decisions": decisions, "observations": len(details), "details": details[:10]}
    pattern = (
        TastePattern.objects.select_for_update()
        .filter(user=user, plugin=plugin, command=command, correction_type=kind, direction=direction)
        .first()
    )
    if pattern is None:
        try:
            with transaction.atomic():
                pattern = TastePattern.objects.create(
                    user=user,
                    plugin=plugin,
                    command=command,
                    correction_type=kind,
                    direction=direction,
                    description=description,
                    instruction=instruction,
                    evidence=evidence,
                    observations=len(details),
                    confidence=0.0,
                )
        except IntegrityError:
            return None  # a concurrent decision created it; it will be updated on the next one
    elif pattern.status == TastePattern.Status.REJECTED and pattern.rejected_reason != "superseded":
        return None  # the user said no: evidence does not bring it back
    else:
        if pattern.status == TastePattern.Status.REJECTED:
            # Superseded by the other direction, which has now lost: on trial again.
            pattern.status, pattern.rejected_reason, pattern.consecutive_rejections = (
                TastePattern.Status.CANDIDATE,
                "",
                0,
            )
        pattern.instruction, pattern.description, pattern.evidence = instruction, description, evidence
        pattern.observations = len(details)
        pattern.confidence = pattern_confidence(pattern)
        pattern.save(
            update_fields=[
                "instruction",
                "description",
                "evidence",
                "observations",
                "confidence",
                "status",
                "rejected_reason",
                "consecutive_rejections",
                "updated_at",
            ]
        )
    patterns_supersede_rivals(pattern)
    return pattern


def pattern_rivals(pattern: TastePattern) -> list[TastePattern]:
    """The live patterns of the pattern's scope that contradict it (the other directions of its
    dimension), locked."""
    key = dimension(pattern.correction_type, pattern.direction)
    rivals = (
        TastePattern.objects.select_for_update()
        .filter(user_id=pattern.user_id, plugin=pattern.plugin, command=pattern.command, status__in=LIVE)
        .exclude(pk=pattern.pk)
    )
    return [rival for rival in rivals if dimension(rival.correction_type, rival.direction) == key]


def patterns_supersede_rivals(winner: TastePattern) -> list[dict[str, Any]]:
    """Stop applying the live patterns of the winner's scope that contradict it; their state
    before (id, status, rejected_reason, evidence)."""
    before = []
    for rival in pattern_rivals(winner):
        before.append(
            {
                "id": rival.pk,
                "status": rival.status,
                "rejected_reason": rival.rejected_reason,
                "evidence": rival.evidence,
            }
        )
        rival.status, rival.rejected_reason = TastePattern.Status.REJECTED, "superseded"
        rival.evidence = {**rival.evidence, "superseded_by": winner.pk, "superseded_at": timezone.now().isoformat()}
        rival.save(update_fields=["status", "rejected_reason", "evidence", "updated_at"])
    return before
