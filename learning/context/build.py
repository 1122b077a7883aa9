"""Building a context: everything learned that applies to one LLM call.

Runs on the request path, so it does no model work and reads a cached snapshot (``cache``): the
workflow matching the current message is chosen by word overlap with each workflow's trigger and
example (learned workflows are few per user); embedding similarity is used where the analysis
runs, in the worker. Building writes nothing: recording the injections is
``learning.services.usages.usages_record``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from accounts.actors import Actor
from accounts.models import User
from accounts.selectors import project_ids_for_user
from core.text import lexical_similarity, normalise
from intelligence.selectors import packet_evidence
from learning.conf import learning_settings
from learning.context.cache import context_versions, shared_ingredients, user_ingredients
from learning.context.render import context_render
from learning.corrections import patterns_consistent


@dataclass
class Context:
    preferences: list[dict[str, Any]] = field(default_factory=list)
    workflow: dict[str, Any] | None = None
    taste_patterns: list[dict[str, Any]] = field(default_factory=list)
    agent_learnings: list[dict[str, Any]] = field(default_factory=list)
    memories: list[dict[str, Any]] = field(default_factory=list)
    task_examples: list[dict[str, Any]] = field(default_factory=list)
    packet_evidence: list[dict[str, Any]] = field(default_factory=list)
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
            "packet_evidence": self.packet_evidence,
            "text": self.text,
        }


@dataclass(frozen=True)
class Scope:
    """Where the context goes: which project (and intelligence target in it), surface, plugin/command,
    tool and tags."""

    project_id: int | None = None
    surface: str = "chat"
    plugin: str = ""
    command: str = ""
    tool_name: str = ""
    tags: tuple[str, ...] = ()
    target_id: int | None = None  # None: the project's own target


def _in_scope(item: dict[str, Any], scope: Scope) -> bool:
    return item["project"] is None or item["project"] == scope.project_id


def agent_learning_in_scope(item: dict[str, Any], scope: Scope) -> bool:
    """Gate 6: a prevention prompt reaches a context only within its scope. Project: its own (or
    every project, when it has none). Tool: its own (``search_docs``, or ``plugin/command`` for a
    tool run), or every tool when it names none. Tags: a learning with tags reaches only a context
    that shares one of them, the surface counting as a tag (so one tagged ``task_generation``
    reaches task generation only); a learning without tags reaches every context in its scope."""
    tools = {"", scope.tool_name}
    if scope.plugin:
        tools.add(f"{scope.plugin}/{scope.command}"[:100])
    tags = {t.lower() for t in item.get("tags") or []}
    return (
        _in_scope(item, scope)
        and item["tool_name"] in tools
        and (not tags or bool(tags & {t.lower() for t in (*scope.tags, scope.surface)}))
    )


def context_build(*, user: User, message: str | None = None, scope: Scope | None = None) -> Context:
    """Everything learned that applies to this call, within ``CONTEXT_MAX_CHARS``: active
    preferences, the workflow the message matches, the taste patterns of the plugin/command (each
    with its notice), agent learnings scoped to the project and tool, the memories the user may see,
    and, for task generation, up to three approved task examples and the top cards of the target's
    packet with one evidence excerpt each. ``scope.project_id`` counts only
    for the project's members (and staff); for anyone else it is ignored. Writes
    nothing: the caller records the injections (``learning.services.usages.usages_record``)."""
    if not learning_settings.REGGIE_PREFERENCE_LEARNING:
        return Context(enabled=False)
    scope = scope or Scope()
    versions = context_versions(user_id=user.pk)
    ingredients = user_ingredients(user=user, versions=versions)
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
    shared = shared_ingredients(versions=versions)
    context = Context(preferences=list(ingredients["preferences"]))
    best = learning_settings.WORKFLOW_CONTEXT_MIN_SIMILARITY
    workflow = None
    # A shared workflow reaches its project's members (a team one, everybody), as shared memories do.
    reachable = list(ingredients["workflows"]) + [
        w
        for w in shared.get("workflows", [])
        if w["visibility"] == "team" or (scope.project_id is not None and w["project"] == scope.project_id)
    ]
    if message:
        for candidate in reachable:
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
        # Never two patterns that contradict: the command's own before a plugin-wide one.
        context.taste_patterns = [
            {k: v for k, v in p.items() if k not in ("correction_type", "direction")}
            for p in patterns_consistent(
                [p for p in ingredients["taste_patterns"] if p["plugin"] == scope.plugin], command=scope.command
            )
        ][: learning_settings.CONTEXT_MAX_TASTE_PATTERNS]
    context.agent_learnings = [a for a in shared["agent_learnings"] if agent_learning_in_scope(a, scope)][
        : learning_settings.CONTEXT_MAX_AGENT_LEARNINGS
    ]
    own = ingredients["memories"]
    seen = {normalise(m["content"]) for m in own}
    visible_shared = []
    for memory in shared["memories"]:
        # Team memories reach everyone; project memories only inside their project.
        if memory["visibility"] == "project" and (scope.project_id is None or memory["project"] != scope.project_id):
            continue
        normalised = normalise(memory["content"])
        if normalised not in seen:
            seen.add(normalised)
            visible_shared.append(memory)
    context.memories = own + visible_shared[: learning_settings.CONTEXT_MAX_MEMORIES]
    if scope.surface == "task_generation":
        context.task_examples = [t for t in shared["task_examples"] if _in_scope(t, scope)][
            : learning_settings.CONTEXT_MAX_TASK_EXAMPLES
        ]
        if scope.project_id is not None:
            # The target's packet: its top cards, each with one excerpt of its evidence (read through
            # intelligence's selector, which applies project membership again).
            context.packet_evidence = packet_evidence(
                actor=Actor(user=user),
                project_id=scope.project_id,
                target_id=scope.target_id,
                limit=learning_settings.CONTEXT_MAX_PACKET_CARDS,
            )

    # Trim to the budget, least essential first; the taste notices go last (they say what is applied).
    trim_order = (
        "memories",
        "packet_evidence",
        "task_examples",
        "agent_learnings",
        "preferences",
        "workflow",
        "taste_patterns",
    )
    while True:
        context.text = "\n\n".join(context_render(context))
        if len(context.text) <= learning_settings.CONTEXT_MAX_CHARS:
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
