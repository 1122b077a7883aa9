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
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.cache import cache

from accounts.models import User
from learning.models import LearnedWorkflow, Memory, Preference

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
    memories: list[dict[str, Any]] = field(default_factory=list)
    text: str = ""
    enabled: bool = True

    def as_dict(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "preferences": self.preferences,
            "workflow": self.workflow,
            "memories": self.memories,
            "text": self.text,
        }


def _render(preferences: list[dict], workflow: dict | None, memories: list[dict]) -> list[str]:
    blocks = []
    if preferences:
        blocks.append("[User Preferences]\n" + "\n".join(f"- {p['description']}" for p in preferences))
    if workflow is not None:
        lines = [f"[Known Workflow: {workflow['workflow_name']}]", f"Trigger: {workflow['trigger_pattern']}"]
        if workflow["preferred_output"]:
            lines.append(f"Output format: {workflow['preferred_output']}")
        blocks.append("\n".join(lines))
    if memories:
        # Learned text is data about the user, quoted, never instructions to follow.
        blocks.append("[About the User]\n" + "\n".join(f'- The user said: "{m["content"]}"' for m in memories))
    return blocks


# What a user's context is made of is cached (Django's cache: Redis in production) under a
# per-user version that every write of preferences, workflows or memories bumps after
# commit, so the request path usually reads two cache keys instead of three tables.
def _version_key(user_id: int) -> str:
    return f"learning:context-version:{user_id}"


def context_invalidate(*, user_id: int) -> None:
    """Forget the cached context ingredients of a user (after their learned items changed)."""
    cache.set(_version_key(user_id), uuid.uuid4().hex, timeout=None)


def context_invalidate_all() -> None:
    """After a set-based change across users (decay): every user's cached ingredients go."""
    cache.set(_EPOCH_KEY, uuid.uuid4().hex, timeout=None)


_EPOCH_KEY = "learning:context-epoch"


def _ingredients(user: User) -> dict[str, Any]:
    versions = cache.get_many([_version_key(user.pk), _EPOCH_KEY])
    version, epoch = versions.get(_version_key(user.pk), "0"), versions.get(_EPOCH_KEY, "0")
    key = f"learning:context:{user.pk}:{version}:{epoch}"
    cached = cache.get(key)
    if cached is not None:
        return cached
    preferences = (
        Preference.objects.filter(user=user, active=True)
        .order_by("-confidence", "-times_reinforced")
        .values_list("id", "category", "preference", "description", "confidence")
    )
    ingredients = {
        "preferences": [
            {"id": pk, "category": category, "preference": slug, "description": description,
             "confidence": round(confidence, 3)}
            for pk, category, slug, description, confidence in preferences[: settings.CONTEXT_MAX_PREFERENCES]
        ],
        "workflows": list(
            LearnedWorkflow.objects.filter(user=user, active=True).values(
                "id", "workflow_name", "trigger_pattern", "preferred_output", "example_input", "confidence"
            )
        ),
        "memories": [
            {"id": str(pk), "kind": kind, "content": content}
            for pk, kind, content in Memory.objects.filter(owner=user, status=Memory.Status.ACTIVE)
            .order_by("-confidence", "-created_at")
            .values_list("id", "kind", "content")[: settings.CONTEXT_MAX_MEMORIES]
        ],
    }  # fmt: skip
    cache.set(key, ingredients, timeout=settings.CONTEXT_CACHE_SECONDS)
    return ingredients


def context_build(*, user: User, message: str | None = None) -> Context:
    """Active preferences (highest confidence first), the workflow the message matches, and
    the user's own memories, within ``CONTEXT_MAX_CHARS``."""
    if not settings.REGGIE_PREFERENCE_LEARNING:
        return Context(enabled=False)
    ingredients = _ingredients(user)
    preferences = list(ingredients["preferences"])
    memories = list(ingredients["memories"])
    workflow = None
    best = settings.WORKFLOW_CONTEXT_MIN_SIMILARITY
    if message:
        for candidate in ingredients["workflows"]:
            similarity = max(
                lexical_similarity(message, candidate["trigger_pattern"]),
                lexical_similarity(message, candidate["example_input"]),
            )
            if similarity >= best:
                best, workflow = similarity, candidate

    # Trim to the budget: lowest-confidence memories and preferences go first.
    while True:
        text = "\n\n".join(_render(preferences, workflow, memories))
        if len(text) <= settings.CONTEXT_MAX_CHARS:
            break
        if memories:
            memories.pop()
        elif preferences:
            preferences.pop()
        else:
            workflow = None
    return Context(
        preferences=preferences,
        workflow=None
        if workflow is None
        else {
            "id": workflow["id"],
            "workflow_name": workflow["workflow_name"],
            "trigger_pattern": workflow["trigger_pattern"],
            "preferred_output": workflow["preferred_output"],
            "confidence": round(workflow["confidence"], 3),
            "similarity": round(best, 3),
        },
        memories=memories,
        text=text,
    )
