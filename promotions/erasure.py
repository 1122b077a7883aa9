"""Erasing a user (the right to erasure): one transaction over every app, audited by an event.

What goes: everything learned about the user (preferences, workflows, taste patterns, memories,
shared ones included, and their usages), everything they said (messages, prompt patterns, command
runs), their search traces and marks, task ratings, keys, memberships, sessions, login-lockout
records, and the promotions about their own items. What stays, anonymised: their feedback events (no user, writer, text,
snapshots, context, metadata, session or idempotency key; the kind of signal, its subject, project
and time remain as evidence), under a ``user_erased`` event that records the erasure. Promotions
and agent learnings built from several users' evidence stay, with the user's evidence and quotes
removed. It lives here because it is the one operation that reaches every app, and ``promotions``
is the app above all others.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from accounts.actors import Actor
from accounts.models import User
from accounts.services import user_delete_erased
from feedback.models import FeedbackEvent, TaskFeedback
from feedback.services.erasure import feedback_erase_user
from learning.safety import quoted
from learning.services.erasure import agent_learning_scrub, learning_erase_user, learning_user_items
from promotions.models import LearningPromotion
from retrieval.erasure import retrieval_erase_user, retrieval_user_trace_ids


@dataclass
class ErasureReport:
    user_id: int
    erasure_event_id: str
    rows: dict[str, int] = field(default_factory=dict)  # rows deleted (or anonymised) per table


def user_erase(*, actor: Actor, user: User) -> ErasureReport:
    """Erase ``user`` (see the module's docstring). All or nothing."""
    counts: dict[str, int] = {}
    user_id = user.pk
    with transaction.atomic():
        user = User.objects.select_for_update().get(pk=user_id)
        event_ids = {str(pk) for pk in FeedbackEvent.objects.filter(user=user).values_list("pk", flat=True)}
        items = learning_user_items(user=user)
        items["task_feedback"] = [str(pk) for pk in TaskFeedback.objects.filter(user=user).values_list("pk", flat=True)]
        traces = retrieval_user_trace_ids(user=user)
        counts.update(_promotions_forget(items=items, event_ids=event_ids, traces=traces))
        erasure = feedback_erase_user(actor=actor, user=user, counts=counts)
        learning_erase_user(user=user, counts=counts)
        retrieval_erase_user(user=user, counts=counts)
        user_delete_erased(user=user, counts=counts)
    return ErasureReport(user_id=user_id, erasure_event_id=str(erasure.pk), rows=counts)


# Agent learnings whose prompts keep their scanner's own wording (less the erased quotes); every
# other agent learning is about thumbs-down, whose prompt is rebuilt from the evidence that is left.
QUOTING_SUBJECTS = ("tool_failure", "eval_failure", "task_feedback")


def _promotions_forget(*, items: dict[str, list[str]], event_ids: set[str], traces: set[str]) -> dict[str, int]:
    """Promotions about the user's own items go (their destinations are those items, deleted too);
    promotions built from several users' evidence lose the user's part."""
    deleted = 0
    for subject_type, ids in items.items():
        if ids:
            deleted += LearningPromotion.objects.filter(subject_type=subject_type, subject_id__in=ids).delete()[0]
    scrubbed = 0
    for promotion in LearningPromotion.objects.filter(promotion_type__in=("agent_learning", "retrieval_weight")):
        learning = promotion.proposed_learning if isinstance(promotion.proposed_learning, dict) else {}
        if promotion.promotion_type == "agent_learning":
            # Thumbs-down prompts are rebuilt in the scanner's wording; the other scanners' prompts
            # (tool failures, task ratings, eval failures) keep theirs, less the erased quotes.
            changed = (
                _without_evidence(learning, event_ids)
                if promotion.subject_type not in QUOTING_SUBJECTS
                else _without_quotes(learning, event_ids)
            )
            if changed is not None:
                agent_learning_scrub(
                    promotion_id=promotion.pk,
                    evidence=changed["evidence"],
                    prevention_prompt=changed["prevention_prompt"],
                )
        else:
            changed = _without_anchors(learning, traces)
        if changed is not None:
            LearningPromotion.objects.filter(pk=promotion.pk).update(proposed_learning=changed)
            scrubbed += 1
    return {"ai_learning_promotions": deleted, "ai_learning_promotions (scrubbed)": scrubbed}


def _without_evidence(learning: dict[str, Any], event_ids: set[str]) -> dict[str, Any] | None:
    """An agent learning's proposal without the user's evidence, its prompt rebuilt from the rest
    (the scanner's wording), or None if it cites none of their events."""
    evidence = [e for e in learning.get("evidence") or [] if isinstance(e, dict)]
    kept = [e for e in evidence if str(e.get("event")) not in event_ids]
    if len(kept) == len(evidence):
        return None
    tool = str(learning.get("tool_name") or "")
    where = f" from {tool}" if tool else ""
    prompt = f"Users rejected {len(kept)} similar responses{where}." if kept else f"Users rejected responses{where}."
    reasons = list(dict.fromkeys(" ".join(str(e.get("reason") or "").split())[:200] for e in kept))
    reasons = [r for r in reasons if r][:3]
    if reasons:
        prompt += " Their reasons: " + "; ".join(quoted(r, 200) for r in reasons) + "."
    if kept and kept[0].get("response"):
        prompt += f" One such response began {quoted(str(kept[0]['response']), 160)}."
    prompt += " Before answering a similar request, avoid these problems."
    return {**learning, "evidence": kept, "prevention_prompt": prompt}


def _without_quotes(learning: dict[str, Any], event_ids: set[str]) -> dict[str, Any] | None:
    """A prevention prompt's proposal without the user's evidence, each of their texts that it quotes
    replaced by "(erased)", or None if it cites none of their events."""
    evidence = [e for e in learning.get("evidence") or [] if isinstance(e, dict)]
    removed = [e for e in evidence if str(e.get("event")) in event_ids]
    if not removed:
        return None
    prompt = str(learning.get("prevention_prompt") or "")
    for entry in removed:
        for key, value in entry.items():
            if key != "event" and isinstance(value, str) and value.strip():
                for limit in (120, 160, 200, 500):  # the lengths the scanners quote at
                    prompt = prompt.replace(quoted(value, limit), '"(erased)"')
    kept = [e for e in evidence if str(e.get("event")) not in event_ids]
    return {**learning, "evidence": kept, "prevention_prompt": prompt}


def _without_anchors(learning: dict[str, Any], traces: set[str]) -> dict[str, Any] | None:
    """A query-scoped weight's proposal without the user's queries among its anchors, or None."""
    anchors = learning.get("anchor_traces") or []
    if not any(str(a) in traces for a in anchors):
        return None
    terms = learning.get("anchor_terms") or []
    keep = [i for i, a in enumerate(anchors) if str(a) not in traces]
    return {
        **learning,
        "anchor_traces": [anchors[i] for i in keep],
        "anchor_terms": [terms[i] for i in keep if i < len(terms)],
    }
