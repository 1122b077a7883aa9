"""One line per promotion, in words, for the console's list and activity feed: what the candidate
would do ("Rank passage 'Croup in children…' higher ×1.3"), never "chunk 2" or "project None".

Built from what a list row already has (its proposed learning and its joined project); the one
thing a row does not carry, the passage of a retrieval weight, is read for all rows at once."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any
from uuid import UUID

from django.db.models.functions import Substr
from django.utils.text import Truncator

from promotions.models import LearningPromotion
from retrieval.models import Chunk

# How much of a passage, prompt or memory a line quotes.
QUOTE_CHARS = 60
TEXT_CHARS = 110


def type_label(promotion_type: str) -> str:
    """'retrieval_weight' -> 'Retrieval weight'."""
    return promotion_type.replace("_", " ").capitalize()


def _quote(value: Any, limit: int = QUOTE_CHARS) -> str:
    return Truncator(" ".join(str(value or "").split())).chars(limit)


def _factor(multiplier: float) -> str:
    """×1.3, ×0.65, ×1.25: two decimals at most, no trailing zeros."""
    return "×" + f"{multiplier:.2f}".rstrip("0").rstrip(".")


def _audience(promotion: LearningPromotion, learning: dict[str, Any]) -> str:
    """Who a shared memory or workflow would reach: a project by its name, or the team."""
    if learning.get("visibility") != "project":
        return "the team"  # a team memory or workflow reaches everybody, whatever the project
    if promotion.project is not None:
        return promotion.project.name or promotion.project.slug
    return str(learning.get("project") or "its project")


def _retrieval_weight(promotion: LearningPromotion, learning: dict[str, Any], passage: str | None) -> str:
    try:
        multiplier = float(learning.get("multiplier"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return f"Retrieval weight for passage {promotion.subject_id}"
    direction = "higher" if multiplier >= 1 else "lower"
    what = f"passage '{_quote(passage)}'" if passage else f"passage {promotion.subject_id} (no longer stored)"
    where = ""
    if learning.get("scope") == "project" and promotion.project is not None:
        where = f" in {promotion.project.name or promotion.project.slug}"
    elif learning.get("scope") == "query":
        # Each anchor's terms are the content words of one supporting query (a list; a string before).
        first = next(iter(learning.get("anchor_terms") or []), None)
        words = " ".join(map(str, first)) if isinstance(first, list) else str(first or "")
        where = f" for queries about '{_quote(words, 40)}'" if words.strip() else " for similar queries"
    return f"Rank {what} {direction} {_factor(multiplier)}{where}"


def _agent_learning(promotion: LearningPromotion, learning: dict[str, Any], passage: str | None) -> str:
    prompt = learning.get("prevention_prompt") or learning.get("title")
    tool = f" ({learning['tool_name']})" if learning.get("tool_name") else ""
    return f"Prevention prompt{tool}: {_quote(prompt, TEXT_CHARS)}"


def _memory(promotion: LearningPromotion, learning: dict[str, Any], passage: str | None) -> str:
    return f"Share memory with {_audience(promotion, learning)}: {_quote(learning.get('content'), TEXT_CHARS)}"


def _workflow(promotion: LearningPromotion, learning: dict[str, Any], passage: str | None) -> str:
    name = learning.get("workflow_name") or learning.get("trigger_pattern") or f"workflow {promotion.subject_id}"
    return f"Share workflow '{_quote(name)}' with {_audience(promotion, learning)}"


def _task_example(promotion: LearningPromotion, learning: dict[str, Any], passage: str | None) -> str:
    return f"Task example: {_quote(learning.get('title') or promotion.subject_id, TEXT_CHARS)}"


def _packet_rule(promotion: LearningPromotion, learning: dict[str, Any], passage: str | None) -> str:
    what = learning.get("description") or str(learning.get("rule_type") or promotion.subject_id).replace("_", " ")
    return f"Packet rule: {_quote(what, TEXT_CHARS)}"


def _attribution_rule(promotion: LearningPromotion, learning: dict[str, Any], passage: str | None) -> str:
    kind = str(learning.get("match_kind") or "pattern").replace("_", " ")
    target = learning.get("target") or f"target {learning.get('target_id', '?')}"
    return f"Attribute documents with {kind} '{_quote(learning.get('pattern'), 40)}' to {target}"


_LINES: dict[str, Callable[[LearningPromotion, dict[str, Any], str | None], str]] = {
    "retrieval_weight": _retrieval_weight,
    "agent_learning": _agent_learning,
    "memory": _memory,
    "workflow": _workflow,
    "task_example": _task_example,
    "packet_rule": _packet_rule,
    "attribution_rule": _attribution_rule,
}


def promotion_summary(promotion: LearningPromotion, *, passage: str | None = None) -> str:
    """The promotion in one line of words; ``passage`` is a retrieval weight's chunk text. A learning
    missing what its type needs still reads as its type and subject."""
    learning = promotion.proposed_learning if isinstance(promotion.proposed_learning, dict) else {}
    line = _LINES.get(promotion.promotion_type)
    if line is None:
        return f"{type_label(promotion.promotion_type)} about {promotion.subject_type} {promotion.subject_id}"
    return line(promotion, learning, passage)


def promotion_summaries(promotions: Iterable[LearningPromotion]) -> dict[UUID, str]:
    """Each promotion's line by id, with the passages of the retrieval weights among them read in
    one query (none if there are no weights). The project must be joined in (select_related)."""
    promotions = list(promotions)
    chunk_ids = {
        int(p.subject_id)
        for p in promotions
        if p.promotion_type == "retrieval_weight" and p.subject_type == "chunk" and p.subject_id.isdigit()
    }
    passages: dict[int, str] = {}
    if chunk_ids:
        # The head of each passage is enough for a line (a passage can be long).
        heads = Chunk.objects.filter(pk__in=chunk_ids).annotate(head=Substr("content", 1, 4 * QUOTE_CHARS))
        passages = dict(heads.values_list("pk", "head"))
    return {
        p.pk: promotion_summary(p, passage=passages.get(int(p.subject_id)) if p.subject_id.isdigit() else None)
        for p in promotions
    }
