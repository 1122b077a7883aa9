"""Erasing a user from learning: everything learned about them and everything they said."""

from __future__ import annotations

from django.apps import apps
from django.db import transaction

from accounts.models import User
from learning.context.cache import context_invalidate, context_invalidate_shared
from learning.models import (
    AgentLearning,
    ChatMessage,
    CommandRun,
    LearnedWorkflow,
    LearningUsage,
    Memory,
    Preference,
    PromptPattern,
    TastePattern,
    UndoEntry,
)

# In dependency order: what points at a message goes before the messages.
USER_TABLES = (
    (LearningUsage, "user"),
    (UndoEntry, "user"),  # what the user's deleted items held, until purged
    (Preference, "user"),
    (LearnedWorkflow, "user"),
    (TastePattern, "user"),
    (Memory, "owner"),
    (CommandRun, "user"),
    (PromptPattern, "user"),
    (ChatMessage, "user"),
)


def learning_user_items(*, user: User) -> dict[str, list[str]]:
    """The ids of the user's items a promotion may name as its subject, by subject type."""
    return {
        "preference": [str(pk) for pk in Preference.objects.filter(user=user).values_list("pk", flat=True)],
        "memory": [str(pk) for pk in Memory.objects.filter(owner=user).values_list("pk", flat=True)],
        "workflow": [str(pk) for pk in LearnedWorkflow.objects.filter(user=user).values_list("pk", flat=True)],
    }


def learning_erase_user(*, user: User, counts: dict[str, int]) -> None:
    """Delete the user's preferences, workflows, taste patterns, memories (shared ones included),
    command runs and decisions, prompt patterns, messages, learning usages and undo entries."""
    with transaction.atomic():
        for model, field in USER_TABLES:
            _, per_model = model.objects.filter(**{field: user}).delete()
            for label, rows in per_model.items():
                table = _table(label)
                counts[table] = counts.get(table, 0) + rows
        user_id = user.pk
        transaction.on_commit(lambda: context_invalidate(user_id=user_id))
        transaction.on_commit(context_invalidate_shared)


def _table(label: str) -> str:
    return apps.get_model(label)._meta.db_table


def agent_learning_scrub(*, promotion_id, evidence: list, prevention_prompt: str) -> int:
    """Replace an agent learning's evidence and prompt with versions that no longer quote an erased
    user (the erasure's path; the learning stays, learned from the others' evidence)."""
    rows = AgentLearning.objects.filter(promotion_id=promotion_id).update(
        evidence=evidence, prevention_prompt=prevention_prompt
    )
    if rows:
        transaction.on_commit(context_invalidate_shared)
    return rows
