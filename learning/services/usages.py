"""Usages: one row per learning injected into a response's context, later marked helped or hurt."""

from __future__ import annotations

from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from accounts.models import User
from core.ids import parse_uuid
from learning.context.build import Context, Scope
from learning.models import LearningUsage
from learning.services.workflows import workflows_mark_used

_ITEM_TYPES = (
    ("preferences", "preference"),
    ("taste_patterns", "taste_pattern"),
    ("agent_learnings", "agent_learning"),
    ("memories", "memory"),
    ("task_examples", "task_example"),
    ("packet_evidence", "insight_card"),
)


_USAGE_COLUMNS = (
    "learning_id",
    "item_type",
    "item_id",
    "user_id",
    "project_id",
    "surface",
    "plugin",
    "command",
    "tool_name",
    "response_id",
    "outcome",
    "created_at",
)


def usages_record(*, user: User, context: Context, scope: Scope, response_id: str) -> None:
    """Record one usage row per learning injected into a response's context, in one INSERT.

    This runs on every recorded context and every observed message, so the statement is built here:
    the ORM's bulk_create spent about 1.5 ms per call preparing a dozen rows of plain values
    (measured in-process on PostgreSQL)."""
    items = [(item_type, item["id"]) for name, item_type in _ITEM_TYPES for item in getattr(context, name)]
    if context.workflow is not None:
        items.append(("workflow", context.workflow["id"]))
        workflows_mark_used(workflow_ids=[context.workflow["id"]])  # last_used_at: injected just now
    if not items:
        return
    learning_field = LearningUsage._meta.get_field("learning").target_field
    created_at = connection.ops.adapt_datetimefield_value(timezone.now())
    common = (
        user.pk,
        scope.project_id,
        scope.surface[:50],
        scope.plugin[:100],
        scope.command[:100],
        scope.tool_name[:100],
        response_id[:255],
        LearningUsage.Outcome.PENDING.value,
        created_at,
    )
    params: list[Any] = []
    for item_type, item_id in items:
        learning_id = (
            learning_field.get_db_prep_value(parse_uuid(item_id), connection) if item_type == "agent_learning" else None
        )
        params.extend((learning_id, item_type, str(item_id), *common))
    row = "(" + ", ".join(["%s"] * len(_USAGE_COLUMNS)) + ")"
    # Constant table and column names; every value is a parameter.
    table, columns = LearningUsage._meta.db_table, ", ".join(_USAGE_COLUMNS)
    sql = f"INSERT INTO {table} ({columns}) VALUES {', '.join([row] * len(items))}"  # noqa: S608
    if connection.in_atomic_block:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)  # committed with the caller's writes
        return
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # Usage rows are telemetry: not waiting for their WAL flush halves the cost of
            # recording them; a crash can lose the last few milliseconds of them, nothing else.
            cursor.execute("SET LOCAL synchronous_commit TO OFF")
        cursor.execute(sql, params)


def usages_judge(*, user: User, response_id: str, helped: bool) -> int:
    """Mark the pending usages of one response helped or hurt (feedback on it); returns how many."""
    return LearningUsage.objects.filter(
        user=user, response_id=response_id[:255], outcome=LearningUsage.Outcome.PENDING
    ).update(outcome=LearningUsage.Outcome.HELPED if helped else LearningUsage.Outcome.HURT)
