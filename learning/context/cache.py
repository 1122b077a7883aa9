"""The two cache layers under context assembly, their version keys and invalidation.

Runs on the request path: a user's ingredients are read from the cache under their version, and
the shared learnings from this process's memo (or the cache) under the shared version.

The cache is an accelerator, never a dependency: when it fails (Redis down or timing out), context
is built from the tables, uncached, and the failure is logged and counted (``cache_failures``); an
invalidation that fails is logged too, and what it should have dropped expires within
CONTEXT_CACHE_SECONDS.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from django.core.cache import DEFAULT_CACHE_ALIAS, cache, caches
from django.core.cache.backends.dummy import DummyCache
from django.core.cache.backends.locmem import LocMemCache
from django.db.models import F, OrderBy, QuerySet, Window
from django.db.models.functions import RowNumber

from accounts.models import User
from accounts.selectors import project_memberships_of_users
from feedback.models import TaskFeedback
from learning.conf import learning_settings
from learning.models import AgentLearning, LearnedWorkflow, Memory, Preference, TastePattern

logger = logging.getLogger(__name__)
T = TypeVar("T")

# Cache operations that failed in this process, by operation ("get", "set", "versions", ...).
cache_failures: Counter[str] = Counter()
_failures_lock = threading.Lock()
# Put in the versions read when the cache did not answer: build from the tables, write nothing back.
CACHE_DOWN = "learning:cache-down"


def _safely(operation: str, call: Callable[[], T], default: T) -> T:
    """Run one cache operation; on any failure, count it, log it (the first and every 100th) and
    return ``default``."""
    try:
        return call()
    except Exception:  # any backend failure (connection, timeout, protocol) degrades the same way
        with _failures_lock:
            cache_failures[operation] += 1
            count = sum(cache_failures.values())
        if count % 100 == 1:
            logger.warning(
                "context cache %s failed (%d failures so far); serving uncached context",
                operation,
                count,
                exc_info=True,
            )
        return default


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
    _safely("invalidate", lambda: cache.set(_version_key(user_id), uuid.uuid4().hex, timeout=None), None)


def context_invalidate_all() -> None:
    """After a set-based change across users (decay): every user's cached ingredients go."""
    _safely("invalidate", lambda: cache.set(_EPOCH_KEY, uuid.uuid4().hex, timeout=None), None)


def context_invalidate_shared() -> None:
    """After a shared learning was applied, paused, resumed or retired."""
    global _shared_memo
    _shared_memo = None
    _safely("invalidate", lambda: cache.set(_SHARED_KEY, uuid.uuid4().hex, timeout=None), None)


def _shared_version_start() -> str:
    """A cache without a shared version (new, or flushed) gets a fresh one, never a default that a
    process may remember from before."""
    _safely("add", lambda: cache.add(_SHARED_KEY, uuid.uuid4().hex, timeout=None), None)
    return _safely("get", lambda: cache.get(_SHARED_KEY), None) or uuid.uuid4().hex


def context_versions(*, user_id: int) -> dict[str, str]:
    """The cache versions a context of this user is built under, read in one round trip
    (``CACHE_DOWN`` among them when the cache did not answer)."""
    return _safely(
        "versions", lambda: cache.get_many([_version_key(user_id), _EPOCH_KEY, _SHARED_KEY]), {CACHE_DOWN: "1"}
    )


def _ingredients_key(user_id: int, versions: dict[str, str]) -> str:
    version, epoch = versions.get(_version_key(user_id), "0"), versions.get(_EPOCH_KEY, "0")
    return f"learning:context:{user_id}:{version}:{epoch}"


def _first_per_user(queryset: QuerySet, *, user_field: str, order: tuple[str, ...], limit: int) -> QuerySet:
    """The first ``limit`` rows of each user in ``order``: a window over the users asked for, so
    that one statement serves a user or a batch of them alike."""
    return queryset.annotate(
        per_user_rank=Window(
            RowNumber(),
            partition_by=[F(user_field)],
            order_by=[OrderBy(F(f.lstrip("-")), descending=f.startswith("-")) for f in order],
        )
    ).filter(per_user_rank__lte=limit)


def _ingredients_from_tables(user_ids: list[int]) -> dict[int, dict[str, Any]]:
    """The learned items of these users (and their project ids), in five statements however many
    users are asked for."""
    found: dict[int, dict[str, Any]] = {
        user_id: {"preferences": [], "workflows": [], "taste_patterns": [], "memories": [], "project_ids": set()}
        for user_id in user_ids
    }
    order = ("-confidence", "-times_reinforced")
    preferences = _first_per_user(
        Preference.objects.filter(user_id__in=user_ids, active=True, candidate=False),  # candidates are never injected
        user_field="user_id",
        order=order,
        limit=learning_settings.CONTEXT_MAX_PREFERENCES,
    ).order_by("user_id", *order)
    for user_id, pk, category, slug, description, confidence, flagged in preferences.values_list(
        "user_id", "id", "category", "preference", "description", "confidence", "needs_review"
    ):
        found[user_id]["preferences"].append(
            {
                "id": pk,
                "category": category,
                "preference": slug,
                "description": description,
                "confidence": round(confidence, 3),
                "needs_review": flagged,
            }
        )
    for workflow in (
        LearnedWorkflow.objects.filter(user_id__in=user_ids, active=True, visibility="private")
        .order_by("user_id", "-confidence", "-times_detected")
        .values("user_id", "id", "workflow_name", "trigger_pattern", "preferred_output", "example_input", "confidence")
    ):
        found[workflow["user_id"]]["workflows"].append({k: v for k, v in workflow.items() if k != "user_id"})
    for pattern in (
        TastePattern.objects.filter(user_id__in=user_ids, status__in=TASTE_APPLIED)
        .order_by("user_id", "-confidence", "-observations", "-updated_at", "-pk")
        .values(
            "user_id", "id", "plugin", "command", "correction_type", "direction", "instruction", "status", "confidence"
        )
    ):
        found[pattern["user_id"]]["taste_patterns"].append({k: v for k, v in pattern.items() if k != "user_id"})
    order = ("-confidence", "-created_at")
    memories = _first_per_user(
        Memory.objects.filter(owner_id__in=user_ids, visibility=Memory.Visibility.PRIVATE, status=Memory.Status.ACTIVE),
        user_field="owner_id",
        order=order,
        limit=learning_settings.CONTEXT_MAX_MEMORIES,
    ).order_by("owner_id", *order)
    for owner_id, pk, kind, content in memories.values_list("owner_id", "id", "kind", "content"):
        found[owner_id]["memories"].append(
            {"id": str(pk), "kind": kind, "content": content, "visibility": "private", "project": None}
        )
    for user_id, project_id in project_memberships_of_users(user_ids=user_ids):
        found[user_id]["project_ids"].add(project_id)
    return found


def user_ingredients(*, user: User, versions: dict[str, str]) -> dict[str, Any]:
    """The user's own learned items (and project ids), from the cache under their version, else the tables."""
    down = CACHE_DOWN in versions
    key = _ingredients_key(user.pk, versions)
    cached = None if down else _safely("get", lambda: cache.get(key), None)
    if cached is not None:
        return cached
    ingredients = _ingredients_from_tables([user.pk])[user.pk]
    if not down:
        _safely("set", lambda: cache.set(key, ingredients, timeout=learning_settings.CONTEXT_CACHE_SECONDS), None)
    return ingredients


def cache_is_shared() -> bool:
    """Whether other processes read what this one puts in the cache (Redis, memcached, a database
    table), rather than a cache of its own (local memory) or none."""
    return not isinstance(caches[DEFAULT_CACHE_ALIAS], DummyCache | LocMemCache)


def context_warm(*, users: Iterable[User]) -> int:
    """Refresh ahead: put each user's ingredients in the cache under their current version, so that
    the request after a change of their learned items reads the cache instead of five tables (the
    analysis worker calls it after each batch, off the request path). Up to date is what a reader
    would build itself: the versions are read first and the tables after, so what is stored under a
    version is never older than the change that set it. Three cache round trips and, for the users
    whose ingredients are not cached under their version, five statements, whatever the number of
    users. Returns how many users were looked at."""
    if isinstance(caches[DEFAULT_CACHE_ALIAS], DummyCache):
        return 0
    user_ids = sorted({user.pk for user in users})
    if not user_ids:
        return 0
    names = [_version_key(user_id) for user_id in user_ids] + [_EPOCH_KEY]
    versions = _safely("versions", lambda: cache.get_many(names), None)
    if versions is None:
        return 0  # nothing to warm; the requests build from the tables meanwhile
    keys = {user_id: _ingredients_key(user_id, versions) for user_id in user_ids}
    cached = _safely("get", lambda: cache.get_many(list(keys.values())), None)
    if cached is None:
        return 0
    stale = [user_id for user_id, key in keys.items() if key not in cached]
    if stale:
        built = _ingredients_from_tables(stale)
        fresh = {keys[user_id]: built[user_id] for user_id in stale}
        _safely("set", lambda: cache.set_many(fresh, timeout=learning_settings.CONTEXT_CACHE_SECONDS), None)
    return len(user_ids)


# The shared ingredients of the current shared version, kept in this process too: the version
# itself is read from the cache on every call, so a change elsewhere is seen at once, and the
# blob (every shared learning) is not fetched and unpickled again for each request.
_shared_memo: tuple[str, dict[str, Any]] | None = None


def shared_ingredients(*, versions: dict[str, str]) -> dict[str, Any]:
    """Every active shared learning, once for all users (scoped per request in memory)."""
    global _shared_memo
    # With the cache down the shared version is unknown: a change made elsewhere would go unseen in
    # this process's memo, so the tables are read (and nothing is kept) until the cache answers.
    down = CACHE_DOWN in versions
    version = "" if down else (versions.get(_SHARED_KEY) or _shared_version_start())
    memo = _shared_memo
    if not down and memo is not None and memo[0] == version:
        return memo[1]
    key = f"learning:context-shared:{version}"
    cached = None if down else _safely("get", lambda: cache.get(key), None)
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
    if not down:
        _safely("set", lambda: cache.set(key, shared, timeout=learning_settings.CONTEXT_CACHE_SECONDS), None)
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
