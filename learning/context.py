"""Context assembly: what to inject into a user's next LLM call.

Runs on the request path, so it does no model work and reads a cached snapshot: the workflow matching the current
message is chosen by word overlap with each workflow's trigger and example (learned
workflows are few per user); embedding similarity is used where the analysis runs, in
the worker.
"""

from __future__ import annotations

import math
import re
import uuid
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from django.conf import settings
from django.core.cache import cache

from accounts.models import User
from accounts.selectors import project_ids_for_user
from learning.models import AgentLearning, LearnedWorkflow, Memory, Preference, TastePattern
from learning.safety import quoted

_WORD = re.compile(r"[a-z0-9']+")
_STOP = frozenset(
    (
        "a an the and or but if of to in on for with at by from about as into is are was were be been am i me my "
        "we our you your it its this that these those can could would will should please pls do does did have has "
        "had just some any all so up out what which who how when where why not no yes hey hi thanks thank"
    ).split()
)


def _terms(text: str) -> Counter:
    return Counter(w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1)


def lexical_similarity(a: str, b: str) -> float:
    """Cosine similarity of the two texts' content-word counts (0..1)."""
    ta, tb = _terms(a), _terms(b)
    if not ta or not tb:
        return 0.0
    dot = sum(count * tb[word] for word, count in ta.items())
    return dot / (math.sqrt(sum(v * v for v in ta.values())) * math.sqrt(sum(v * v for v in tb.values())))


@dataclass
class Context:
    preferences: list[dict[str, Any]] = field(default_factory=list)
    workflow: dict[str, Any] | None = None
    taste_patterns: list[dict[str, Any]] = field(default_factory=list)
    agent_learnings: list[dict[str, Any]] = field(default_factory=list)
    memories: list[dict[str, Any]] = field(default_factory=list)
    task_examples: list[dict[str, Any]] = field(default_factory=list)
    text: str = ""
    enabled: bool = True

    def as_dict(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "preferences": self.preferences,
            "workflow": self.workflow,
            "taste_patterns": self.taste_patterns,
            "agent_learnings": self.agent_learnings,
            "memories": self.memories,
            "task_examples": self.task_examples,
            "text": self.text,
        }


def notice(instruction: str) -> str:
    """The line that makes every application of a taste pattern visible."""
    return f"[Intel] Applying learned preference: {quoted(instruction)}"


def _render(context: Context) -> list[str]:
    blocks = []
    if context.taste_patterns:
        blocks.append("\n".join(notice(p["instruction"]) for p in context.taste_patterns))
    if context.preferences:
        blocks.append(
            "[User Preferences]\n"
            + "\n".join(
                # The user's own words that read like orders to the assistant stay their stated preference.
                f"- The user's stated preference: {quoted(p['description'])}"
                if p.get("needs_review")
                else f"- {p['description']}"
                for p in context.preferences
            )
        )
    if context.workflow is not None:
        workflow = context.workflow
        lines = [f"[Known Workflow: {workflow['workflow_name']}]", f"Trigger: {workflow['trigger_pattern']}"]
        if workflow["preferred_output"]:
            lines.append(f"Output format: {workflow['preferred_output']}")
        blocks.append("\n".join(lines))
    if context.agent_learnings:
        blocks.append(
            "[Lessons From Reviewed Feedback]\n"
            + "\n".join(f"- {a['prevention_prompt']}" for a in context.agent_learnings)
        )
    own = [m for m in context.memories if m["visibility"] == "private"]
    shared = [m for m in context.memories if m["visibility"] != "private"]
    if own:
        # Learned text is data about the user, quoted, never instructions to follow.
        blocks.append("[About the User]\n" + "\n".join(f"- The user said: {quoted(m['content'])}" for m in own))
    if shared:
        blocks.append("[Team Knowledge]\n" + "\n".join(f"- {m['kind']}: {quoted(m['content'])}" for m in shared))
    if context.task_examples:
        blocks.append(
            "[Approved Task Examples]\n"
            + "\n".join(f"- {quoted(t['title'], 120)}: {quoted(t['description'], 300)}" for t in context.task_examples)
        )
    return blocks


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


def _ingredients(user: User, versions: dict[str, str]) -> dict[str, Any]:
    version, epoch = versions.get(_version_key(user.pk), "0"), versions.get(_EPOCH_KEY, "0")
    key = f"learning:context:{user.pk}:{version}:{epoch}"
    cached = cache.get(key)
    if cached is not None:
        return cached
    preferences = (
        Preference.objects.filter(user=user, active=True)
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
            for pk, category, slug, description, confidence, flagged in preferences[: settings.CONTEXT_MAX_PREFERENCES]
        ],
        "workflows": list(
            LearnedWorkflow.objects.filter(user=user, active=True).values(
                "id", "workflow_name", "trigger_pattern", "preferred_output", "example_input", "confidence"
            )
        ),
        "taste_patterns": list(
            TastePattern.objects.filter(user=user, status__in=TASTE_APPLIED)
            .order_by("-confidence", "-observations")
            .values("id", "plugin", "command", "instruction", "status", "confidence")
        ),
        "memories": [
            {"id": str(pk), "kind": kind, "content": content, "visibility": "private", "project": None}
            for pk, kind, content in Memory.objects.filter(
                owner=user, visibility=Memory.Visibility.PRIVATE, status=Memory.Status.ACTIVE
            )
            .order_by("-confidence", "-created_at")
            .values_list("id", "kind", "content")[: settings.CONTEXT_MAX_MEMORIES]
        ],
        "project_ids": set(project_ids_for_user(user=user).values_list("project_id", flat=True)),
    }
    cache.set(key, ingredients, timeout=settings.CONTEXT_CACHE_SECONDS)
    return ingredients


# The shared ingredients of the current shared version, kept in this process too: the version
# itself is read from the cache on every call, so a change elsewhere is seen at once, and the
# blob (every shared learning) is not fetched and unpickled again for each request.
_shared_memo: tuple[str, dict[str, Any]] | None = None


def _shared_ingredients(version: str) -> dict[str, Any]:
    """Every active shared learning, once for all users (scoped per request in memory)."""
    global _shared_memo
    memo = _shared_memo
    if memo is not None and memo[0] == version:
        return memo[1]
    key = f"learning:context-shared:{version}"
    cached = cache.get(key)
    if cached is not None:
        _shared_memo = (version, cached)
        return cached
    from feedback.models import TaskFeedback  # the feedback app owns rated tasks

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
    cache.set(key, shared, timeout=settings.CONTEXT_CACHE_SECONDS)
    _shared_memo = (version, shared)
    return shared


@dataclass(frozen=True)
class Scope:
    """Where the context goes: which project, surface, plugin/command and tool."""

    project_id: int | None = None
    surface: str = "chat"
    plugin: str = ""
    command: str = ""
    tool_name: str = ""


def _in_scope(item: dict[str, Any], scope: Scope) -> bool:
    return item["project"] is None or item["project"] == scope.project_id


def context_build(*, user: User, message: str | None = None, scope: Scope | None = None) -> Context:
    """Everything learned that applies to this call, within ``CONTEXT_MAX_CHARS``: active
    preferences, the workflow the message matches, the taste patterns of the plugin/command (each
    with its notice), agent learnings scoped to the project and tool, the memories the user may see,
    and, for task generation, up to three approved task examples. ``scope.project_id`` counts only
    for the project's members (and staff); for anyone else it is ignored. Writes
    nothing: the caller records the injections (``learning.services.usages.usages_record``)."""
    if not settings.REGGIE_PREFERENCE_LEARNING:
        return Context(enabled=False)
    scope = scope or Scope()
    versions = cache.get_many([_version_key(user.pk), _EPOCH_KEY, _SHARED_KEY])
    ingredients = _ingredients(user, versions)
    if (
        scope.project_id is not None
        and not user.is_staff
        and scope.project_id not in ingredients["project_ids"]
        and not project_ids_for_user(user=user).filter(project_id=scope.project_id).exists()
    ):
        # Project memories, agent learnings and task examples reach the project's members only,
        # whoever named the project. Members are found in the cached ingredients; a project not
        # there is checked live (a member added since the cache was filled), so nobody waits for it.
        scope = replace(scope, project_id=None)
    shared = _shared_ingredients(versions.get(_SHARED_KEY) or _shared_version_start())
    context = Context(preferences=list(ingredients["preferences"]))
    best = settings.WORKFLOW_CONTEXT_MIN_SIMILARITY
    workflow = None
    if message:
        for candidate in ingredients["workflows"]:
            similarity = max(
                lexical_similarity(message, candidate["trigger_pattern"]),
                lexical_similarity(message, candidate["example_input"]),
            )
            if similarity >= best:
                best, workflow = similarity, candidate
    if workflow is not None:
        context.workflow = {
            "id": workflow["id"],
            "workflow_name": workflow["workflow_name"],
            "trigger_pattern": workflow["trigger_pattern"],
            "preferred_output": workflow["preferred_output"],
            "confidence": round(workflow["confidence"], 3),
            "similarity": round(best, 3),
        }
    if scope.plugin:
        context.taste_patterns = [
            p
            for p in ingredients["taste_patterns"]
            if p["plugin"] == scope.plugin and p["command"] in (None, scope.command)
        ][: settings.CONTEXT_MAX_TASTE_PATTERNS]
    context.agent_learnings = [
        a for a in shared["agent_learnings"] if _in_scope(a, scope) and a["tool_name"] in ("", scope.tool_name)
    ][: settings.CONTEXT_MAX_AGENT_LEARNINGS]
    own = ingredients["memories"]
    seen = {" ".join(m["content"].lower().split()) for m in own}
    visible_shared = []
    for memory in shared["memories"]:
        # Team memories reach everyone; project memories only inside their project.
        if memory["visibility"] == "project" and (scope.project_id is None or memory["project"] != scope.project_id):
            continue
        normalised = " ".join(memory["content"].lower().split())
        if normalised not in seen:
            seen.add(normalised)
            visible_shared.append(memory)
    context.memories = own + visible_shared[: settings.CONTEXT_MAX_MEMORIES]
    if scope.surface == "task_generation":
        context.task_examples = [t for t in shared["task_examples"] if _in_scope(t, scope)][
            : settings.CONTEXT_MAX_TASK_EXAMPLES
        ]

    # Trim to the budget, least essential first; the taste notices go last (they say what is applied).
    trim_order = ("memories", "task_examples", "agent_learnings", "preferences", "workflow", "taste_patterns")
    while True:
        context.text = "\n\n".join(_render(context))
        if len(context.text) <= settings.CONTEXT_MAX_CHARS:
            break
        for name in trim_order:
            value = getattr(context, name)
            if isinstance(value, list) and value:
                value.pop()
                break
            if name == "workflow" and value is not None:
                context.workflow = None
                break
        else:
            break
    return context
