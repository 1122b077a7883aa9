"""The two cache layers under context assembly, their version keys and invalidation.

Runs on the request path: a user's ingredients are read from the cache under their version, and
the shared learnings from this process's memo (or the cache) under the shared version.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.core.cache import cache

from accounts.models import User
from accounts.selectors import project_ids_for_user
from feedback.models import TaskFeedback
from learning.conf import learning_settings
from learning.models import AgentLearning, LearnedWorkflow, Memory, Preference, TastePattern


# What a user's context is made of is cached (Django's cache: Redis in production) under a
# per-user version that every write of their preferences, workflows, taste patterns or memories
# bumps after commit, so the request path usually reads a few cache keys instead of the tables.
# Shared learnings (agent learnings, team and project memories, task examples) change only through
# the promotion ledger and are cached once for everybody under their own version.
def _version_key(user_id: int) -> str:
    return f"learning:context-version:{user_id}"


_EPOCH_KEY = "learning:context-epoch"


TASTE_APPLIED = (TastePattern.Status.CANDIDATE, TastePattern.Status.ACTIVE)


_SHARED_KEY = "learning:context-shared-version"


def context_invalidate(*, user_id: int) -> None:
    """Forget the cached context ingredients of a user (after their learned items changed)."""
    cache.set(_version_key(user_id), uuid.uuid4().hex, timeout=None)


def context_invalidate_all() -> None:
    """After a set-based change across users (decay): every user's cached ingredients go."""
    cache.set(_EPOCH_KEY, uuid.uuid4().hex, timeout=None)


def context_invalidate_shared() -> None:
    """After a shared learning was applied, paused, resumed or retired."""
    global _shared_memo
    _shared_memo = None
    cache.set(_SHARED_KEY, uuid.uuid4().hex, timeout=None)


def _shared_version_start() -> str:
    """A cache without a shared version (new, or flushed) gets a fresh one, never a default that a
    process may remember from before."""
    cache.add(_SHARED_KEY, uuid.uuid4().hex, timeout=None)
    return cache.get(_SHARED_KEY) or uuid.uuid4().hex


def context_versions(*, user_id: int) -> dict[str, str]:
    """The cache versions a context of this user is built under, read in one round trip."""
    return cache.get_many([_version_key(user_id), _EPOCH_KEY, _SHARED_KEY])


def user_ingredients(*, user: User, versions: dict[str, str]) -> dict[str, Any]:
    """The user's own learned items (and project ids), from the cache under their version, else the tables."""
    version, epoch = versions.get(_version_key(user.pk), "0"), versions.get(_EPOCH_KEY, "0")
    key = f"learning:context:{user.pk}:{version}:{epoch}"
    cached = cache.get(key)
    if cached is not None:
        return cached
    preferences = (
        Preference.objects.filter(user=user, active=True, candidate=False)  # candidates are never injected
        .order_by("-confidence", "-times_reinforced")
        .values_list("id", "category", "preference", "description", "confidence", "needs_review")
    )
    ingredients = {
        "preferences": [
            {
                "id": pk,
                "category": category,
                "preference": slug,
                "description": description,
                "confidence": round(confidence, 3),
                "needs_review": flagged,
            }
            for pk, category, slug, description, confidence, flagged in preferences[
                : learning_settings.CONTEXT_MAX_PREFERENCES
            ]
        ],
        "workflows": list(
            LearnedWorkflow.objects.filter(user=user, active=True, visibility="private").values(
                "id", "workflow_name", "trigger_pattern", "preferred_output", "example_input", "confidence"
            )
        ),
        "taste_patterns": list(
            TastePattern.objects.filter(user=user, status__in=TASTE_APPLIED)
            .order_by("-confidence", "-observations", "-updated_at", "-pk")
            .values("id", "plugin", "command", "correction_type", "direction", "instruction", "status", "confidence")
        ),
        "memories": [
            {"id": str(pk), "kind": kind, "content": content, "visibility": "private", "project": None}
            for pk, kind, content in Memory.objects.filter(
                owner=user, visibility=Memory.Visibility.PRIVATE, status=Memory.Status.ACTIVE
            )
            .order_by("-confidence", "-created_at")
            .values_list("id", "kind", "content")[: learning_settings.CONTEXT_MAX_MEMORIES]
        ],
        "project_ids": set(project_ids_for_user(user=user).values_list("project_id", flat=True)),
    }
    cache.set(key, ingredients, timeout=learning_settings.CONTEXT_CACHE_SECONDS)
    return ingredients


# The shared ingredients of the current shared version, kept in this process too: the version
# itself is read from the cache on every call, so a change elsewhere is seen at once, and the
# blob (every shared learning) is not fetched and unpickled again for each request.
_shared_memo: tuple[str, dict[str, Any]] | None = None


def shared_ingredients(*, versions: dict[str, str]) -> dict[str, Any]:
    """Every active shared learning, once for all users (scoped per request in memory)."""
    global _shared_memo
    version = versions.get(_SHARED_KEY) or _shared_version_start()
    memo = _shared_memo
    if memo is not None and memo[0] == version:
        return memo[1]
    key = f"learning:context-shared:{version}"
    cached = cache.get(key)
    if cached is not None:
        _shared_memo = (version, cached)
        return cached
    shared = {
        "agent_learnings": [
            {
                "id": str(row["id"]),
                "project": row["project_id"],
                "tool_name": row["tool_name"],
                "tags": row["tags"],
                "title": row["title"],
                "prevention_prompt": row["prevention_prompt"],
            }
            for row in AgentLearning.objects.filter(status=AgentLearning.Status.ACTIVE)
            .order_by("-created_at")
            .values("id", "project_id", "tool_name", "tags", "title", "prevention_prompt")
        ],
        "memories": [
            {"id": str(pk), "kind": kind, "content": content, "visibility": visibility, "project": project_id}
            for pk, kind, content, visibility, project_id in Memory.objects.filter(status=Memory.Status.ACTIVE)
            .exclude(visibility=Memory.Visibility.PRIVATE)
            .order_by("-confidence", "-created_at")
            .values_list("id", "kind", "content", "visibility", "project_id")
        ],
        "workflows": [
            {
                "id": pk,
                "workflow_name": name,
                "trigger_pattern": trigger,
                "preferred_output": output,
                "example_input": example,
                "confidence": confidence,
                "visibility": visibility,
                "project": project_id,
            }
            for pk, name, trigger, output, example, confidence, visibility, project_id in _shared_workflow_rows()
        ],
        "task_examples": [
            {
                "id": str(pk),
                "project": project_id,
                "title": str(snapshot.get("title", "")),
                "description": str(snapshot.get("description", "")),
            }
            for pk, project_id, snapshot in TaskFeedback.objects.filter(promoted=True, rating=TaskFeedback.Rating.GOOD)
            .order_by("-created_at")
            .values_list("id", "project_id", "task_snapshot")
        ],
    }
    cache.set(key, shared, timeout=learning_settings.CONTEXT_CACHE_SECONDS)
    _shared_memo = (version, shared)
    return shared


def _shared_workflow_rows() -> list[tuple]:
    """Workflows shared with a project or the team (copies made by applied promotions)."""
    return list(
        LearnedWorkflow.objects.filter(active=True)
        .exclude(visibility="private")
        .order_by("-confidence")
        .values_list(
            "id",
            "workflow_name",
            "trigger_pattern",
            "preferred_output",
            "example_input",
            "confidence",
            "visibility",
            "project_id",
        )
    )
