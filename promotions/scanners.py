"""Scanners: rules that turn repeated evidence into promotion candidates.

The retrieval scan aggregates the search traces in SQL (one GROUP BY over
``ai_retrieval_feedback``), then decides per aggregated chunk:

* a **boost** only from repeated positive signals (cited, used in the answer, referenced,
  or marked helpful) and no problem signal, when the chunk earned more of them than its
  ranks predict: each showing counts ``1 / log2(rank + 1)`` of an expected positive
  (rank 1 is cited more for being first), and the lift is smoothed toward 1;
* a **penalty** from repeated problem outcomes (unhelpful, wrong_project, stale,
  unsupported), from their smoothed rate.

Each weight is scoped to what its evidence supports: stale content everywhere,
wrong-project content within that project, relevance (helpful or not) in the
neighbourhood of the queries that produced it (near-paraphrases of any of them).
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Count, F, FloatField, Q, Sum, Value
from django.db.models.functions import Cast, Ln
from django.utils import timezone

from accounts.actors import Actor
from accounts.models import Project
from config.exceptions import ApplicationError
from feedback.models import EventFamily, FeedbackEvent, Signal, TaskFeedback
from feedback.services.events import EventInput, event_record
from learning.safety import quoted, steering_reasons
from promotions.destinations import task_example_learning, task_example_titles_taken, task_title
from promotions.models import OPEN_STATUSES, LearningPromotion
from promotions.services import Proposal, promotions_propose_bulk
from retrieval.models import RetrievalFeedback
from retrieval.selectors import query_terms

POSITIVE = Q(cited=True) | Q(used_in_answer=True) | Q(user_referenced=True) | Q(outcome="helpful")
PROBLEMS = ("unhelpful", "wrong_project", "stale", "unsupported")
# A query-scoped weight never reaches queries less similar than this to its evidence.
MIN_NEIGHBOURHOOD = 0.85
MAX_ANCHORS = 20
SCOPE_FOR_PROBLEM = {"stale": "global", "wrong_project": "project", "unhelpful": "query", "unsupported": "query"}


@dataclass
class ScanReport:
    groups: int = 0
    boosts: int = 0
    penalties: int = 0
    skipped_open: int = 0


def _discount():
    # 1 / log2(rank + 1) = ln 2 / ln(rank + 1): what one showing at this rank is worth in expected
    # positives. Natural logs stay in double precision (PostgreSQL's two-argument log is numeric-only).
    return Value(math.log(2.0)) / Ln(Cast(F("rank"), FloatField()) + 1.0)


def retrieval_scan(*, actor: Actor | None = None) -> ScanReport:
    """Propose retrieval-weight candidates from repeated, grouped trace signals."""
    actor = actor or Actor.for_system()
    since = timezone.now() - timedelta(days=settings.RETRIEVAL_SCAN_DAYS)
    support = settings.RETRIEVAL_SCAN_MIN_SUPPORT
    traces = RetrievalFeedback.objects.filter(created_at__gte=since)
    totals = traces.aggregate(positives=Count("id", filter=POSITIVE), discount=Sum(_discount()))
    per_discount = (totals["positives"] or 0) / (totals["discount"] or 1.0)

    groups = (
        traces.values("chunk_id", "document_id", "project_id")
        .annotate(
            shown=Count("id"),
            positives=Count("id", filter=POSITIVE),
            discount=Sum(_discount()),
            **{problem: Count("id", filter=Q(outcome=problem)) for problem in PROBLEMS},
        )
        .filter(_any_at_least(("positives", *PROBLEMS), support))
        .order_by()
    )
    report = ScanReport()
    proposals = []
    for group in groups:
        report.groups += 1
        problems: dict[str, int] = {p: group[p] for p in PROBLEMS}  # type: ignore[literal-required]
        if any(problems.values()):
            kind, count = max(problems.items(), key=lambda item: item[1])
            if count < support:
                continue  # problem signals block a boost, but are too few to penalise
            rate = count / (group["shown"] + settings.RETRIEVAL_SCAN_PRIOR)
            multiplier = min(0.95, max(0.65, 1.0 - 0.5 * rate))
            proposals.append((group, kind, multiplier, SCOPE_FOR_PROBLEM[kind], count))
        elif group["positives"] >= support:
            expected = per_discount * (group["discount"] or 0.0)
            prior = settings.RETRIEVAL_SCAN_PRIOR
            lift = (group["positives"] + prior) / (expected + prior)
            if lift < settings.RETRIEVAL_SCAN_MIN_LIFT:
                continue  # as often used as its rank predicts: nothing to learn
            multiplier = min(1.5, max(1.05, 1.0 + 0.5 * math.log2(lift)))
            proposals.append((group, "helpful", multiplier, "query", group["positives"]))

    open_subjects = set(
        LearningPromotion.objects.filter(promotion_type="retrieval_weight", status__in=OPEN_STATUSES).values_list(
            "subject_id", flat=True
        )
    )
    fresh = [proposal for proposal in proposals if str(proposal[0]["chunk_id"]) not in open_subjects]
    report.skipped_open = len(proposals) - len(fresh)
    neighbourhoods = _query_neighbourhoods(
        traces, {(g["chunk_id"], g["project_id"]): kind for g, kind, _, scope, _ in fresh if scope == "query"}
    )
    projects = Project.objects.in_bulk({g["project_id"] for g, *_ in fresh if g["project_id"]})
    candidates = []
    for group, kind, multiplier, scope, count in fresh:
        subject = str(group["chunk_id"])
        project = projects.get(group["project_id"]) if group["project_id"] else None
        learning = {
            "chunk": group["chunk_id"],
            "document": group["document_id"],
            "multiplier": round(multiplier, 4),
            "scope": scope,
            "project": project.slug if (project and scope == "project") else None,
            "reason": kind,
            "evidence": {"shown": group["shown"], "positives": group["positives"], "problems": count},
        }
        if scope == "query":
            anchors, min_similarity = neighbourhoods[(group["chunk_id"], group["project_id"])]
            learning.update(
                {
                    "anchor_traces": [str(trace) for trace, _ in anchors],
                    "anchor_terms": [terms for _, terms in anchors],
                    "min_similarity": min_similarity,
                }
            )
        candidates.append(
            Proposal(
                subject_id=subject,
                proposed_learning=learning,
                confidence=round(1 - 1 / (1 + count / support), 3),
                risk_level="low" if kind in ("helpful", "stale") else "medium",
                project=project,
            )
        )
    opened = promotions_propose_bulk(
        actor=actor, promotion_type="retrieval_weight", subject_type="chunk", proposals=candidates
    )
    report.skipped_open += len(candidates) - len(opened)
    for promotion in opened:
        if promotion.proposed_learning["reason"] == "helpful":
            report.boosts += 1
        else:
            report.penalties += 1
    return report


def _any_at_least(names: tuple[str, ...], support: int) -> Q:
    condition = Q()
    for name in names:
        condition |= Q(**{f"{name}__gte": support})
    return condition


def _query_neighbourhoods(traces, wanted: dict[tuple[int, int | None], str]) -> dict:
    """For each (chunk, project): up to MAX_ANCHORS distinct queries that carried its signal (their
    trace ids and content words). The weight will apply to a query at least MIN_NEIGHBOURHOOD similar
    to one of them that also shares most of its content words. One query."""
    by_kind: dict[str, set[int]] = {}
    for (chunk_id, _), kind in wanted.items():
        by_kind.setdefault(kind, set()).add(chunk_id)
    carried = Q(pk__in=[])
    for kind, chunk_ids in by_kind.items():
        carried |= Q(chunk_id__in=chunk_ids) & (POSITIVE if kind == "helpful" else Q(outcome=kind))
    rows = traces.filter(carried).order_by("created_at").values_list("chunk_id", "project_id", "trace_id", "query_text")
    kept: dict[tuple[int, int | None], dict[str, Any]] = {key: {} for key in wanted}
    for chunk_id, project_id, trace_id, text in rows.iterator(chunk_size=5000):
        found = kept.get((chunk_id, project_id))
        if found is not None and len(found) < MAX_ANCHORS:
            found.setdefault(" ".join(text.lower().split()), trace_id)
    terms = {text: query_terms(text) for found in kept.values() for text in found}
    return {
        key: ([(trace, terms[text]) for text, trace in found.items()], MIN_NEIGHBOURHOOD) for key, found in kept.items()
    }


@dataclass
class AgentScanReport:
    thumbs_down: int = 0
    groups: int = 0
    proposed: int = 0
    flagged: int = 0


def agent_learning_scan(*, actor: Actor | None = None) -> AgentScanReport:
    """Group recent thumbs-down on assistant responses by similarity (embedding of the response and
    the reason, within one project and tool); every group of at least AGENT_SCAN_MIN_SUPPORT
    distinct responses becomes one candidate prevention prompt, with the responses as evidence.
    Thumbs-down already behind a promotion are not counted again; reasons that try to steer the
    assistant are flagged for review and never become a prompt."""
    from core.embeddings import get_embedder

    actor = actor or Actor.for_system()
    since = timezone.now() - timedelta(days=settings.AGENT_SCAN_DAYS)
    # Thumbs-down already behind a promotion. A promotion is younger than its evidence, so only
    # those opened within the window can cite a thumbs-down this scan reads.
    used = {
        str(event_id)
        for ids in LearningPromotion.objects.filter(promotion_type="agent_learning", created_at__gte=since).values_list(
            "source_event_ids", flat=True
        )
        for event_id in ids or []
    }
    events = [
        event
        for event in FeedbackEvent.objects.filter(
            event_type="response_feedback",
            event_family=EventFamily.ASSISTANT_RESPONSE,
            signal=Signal.NEGATIVE,
            created_at__gte=since,
        )
        .select_related("project")
        .order_by("-created_at")[: settings.AGENT_SCAN_MAX_EVENTS]
        if str(event.pk) not in used
    ]
    report = AgentScanReport(thumbs_down=len(events))
    already_flagged = set(
        FeedbackEvent.objects.filter(
            event_type="learned_text_flagged",
            subject_type="feedback_event",
            subject_id__in=[str(e.pk) for e in events],
        ).values_list("subject_id", flat=True)
    )
    clean = []
    for event in events:
        if str(event.pk) in already_flagged:
            continue  # flagged by an earlier scan: left for review, not counted again
        if steering_reasons(event.free_text) or steering_reasons(_response_text(event)):
            report.flagged += 1
            _flag(event)
        else:
            clean.append(event)
    if not clean:
        return report
    clean.reverse()  # oldest first: a group is named after its first thumbs-down
    vectors = get_embedder().embed([f"{_response_text(e)[:2000]}\n{e.free_text[:500]}" for e in clean])
    groups: list[list[int]] = []
    for index, event in enumerate(clean):
        for group in groups:
            first = clean[group[0]]
            same_scope = (first.project_id, _tool(first)) == (event.project_id, _tool(event))
            if same_scope and float(vectors[group[0]] @ vectors[index]) >= settings.AGENT_SCAN_SIMILARITY:
                group.append(index)
                break
        else:
            groups.append([index])
    proposals = []
    for group in groups:
        members = [clean[i] for i in group]
        if len({e.subject_id for e in members}) < settings.AGENT_SCAN_MIN_SUPPORT:
            continue
        report.groups += 1
        proposals.append(
            Proposal(
                subject_id=str(members[0].pk),
                proposed_learning=_prevention(members),
                confidence=round(1 - 1 / (1 + len(members) / settings.AGENT_SCAN_MIN_SUPPORT), 3),
                risk_level="medium",
                project=members[0].project,
                source_event_ids=[str(e.pk) for e in members],
            )
        )
    opened = promotions_propose_bulk(
        actor=actor, promotion_type="agent_learning", subject_type="response_feedback", proposals=proposals
    )
    report.proposed = len(opened)
    return report


# Thumbs-down may also reach the stream through the generic events API, in any shape: these
# readers take only what they can use, and never fail on the rest.
def _snapshot(event: FeedbackEvent) -> dict[str, Any]:
    return event.after_snapshot if isinstance(event.after_snapshot, dict) else {}


def _response_text(event: FeedbackEvent) -> str:
    return str(_snapshot(event).get("response") or "")


def _tool(event: FeedbackEvent) -> str:
    metadata = event.metadata if isinstance(event.metadata, dict) else {}
    return str(metadata.get("tool_name") or "")[:100]


def _tags(event: FeedbackEvent) -> list[str]:
    metadata = event.metadata if isinstance(event.metadata, dict) else {}
    tags = metadata.get("tags")
    return [str(tag)[:50] for tag in tags] if isinstance(tags, list) else []


def _prevention(members: list[FeedbackEvent]) -> dict[str, Any]:
    """The proposed prevention prompt: what went wrong, in the users' words, quoted as evidence."""
    tool = _tool(members[0])
    reasons = list(dict.fromkeys(" ".join(e.free_text.split())[:200] for e in members if e.free_text.strip()))[:3]
    where = f" from {tool}" if tool else ""
    prompt = f"Users rejected {len(members)} similar responses{where}."
    if reasons:
        prompt += " Their reasons: " + "; ".join(quoted(r, 200) for r in reasons) + "."
    excerpt = quoted(_response_text(members[0]), 160)
    prompt += f" One such response began {excerpt}. Before answering a similar request, avoid these problems."
    return {
        "title": f"{len(members)} thumbs-down on similar responses{where}"[:200],
        "prevention_prompt": prompt,
        "tool_name": tool,
        "tags": sorted({tag for e in members for tag in _tags(e)})[:20],
        "evidence": [
            {
                "event": str(e.pk),
                "response_id": e.subject_id,
                "reason": e.free_text[:500],
                "response": _response_text(e)[:500],
                "tool_trace": _snapshot(e).get("tool_trace"),
            }
            for e in members[:10]
        ],
    }


def _flag(event: FeedbackEvent) -> None:
    # Written by the system whoever runs the scan: an admin's own actor may not write an event about
    # another user, and one writer keeps the idempotency key meaning one flag per thumbs-down.
    event_record(
        actor=Actor.for_system(),
        data=EventInput(
            event_type="learned_text_flagged",
            event_family=EventFamily.ASSISTANT_RESPONSE,
            signal=Signal.NEEDS_REVIEW,
            user_id=event.user_id,
            surface="agent_learning_scan",
            subject_type="feedback_event",
            subject_id=str(event.pk),
            reason_category="steering",
            free_text=event.free_text[:10_000],
            idempotency_key=f"steering:{event.pk}",
        ),
    )


@dataclass
class TaskExampleScanReport:
    eligible: int = 0
    proposed: int = 0


def task_example_scan(*, actor: Actor | None = None) -> TaskExampleScanReport:
    """Propose as task examples the tasks rated good and completed that are not examples yet (and
    have no promotion): the writer checks each is complete and not a duplicate."""
    actor = actor or Actor.for_system()
    behind_promotions = LearningPromotion.objects.filter(promotion_type="task_example").values("subject_id")
    eligible = (
        TaskFeedback.objects.filter(rating=TaskFeedback.Rating.GOOD, completed=True, promoted=False)
        .exclude(id__in=[uuid.UUID(str(s)) for s in behind_promotions.values_list("subject_id", flat=True)])
        .select_related("project")
        .order_by("created_at")[:500]
    )
    rows = list(eligible)
    report = TaskExampleScanReport(eligible=len(rows))
    # Titles of examples and of open candidates are taken (else every later scan would propose
    # their duplicates); each proposal takes its own. Two queries for the whole scan.
    taken = task_example_titles_taken(project_ids={feedback.project_id for feedback in rows})
    proposals = []
    for feedback in rows:
        try:
            learning = task_example_learning(feedback, actor=actor, taken=taken)
        except ApplicationError:
            continue  # incomplete, a duplicate, or steering text
        taken.add((feedback.project_id, task_title(learning["title"])))
        proposals.append(
            Proposal(subject_id=str(feedback.pk), proposed_learning=learning, confidence=0.8, project=feedback.project)
        )
    report.proposed = len(
        promotions_propose_bulk(
            actor=actor, promotion_type="task_example", subject_type="task_feedback", proposals=proposals
        )
    )
    return report


SCANNERS = ("retrieval", "agent_learning", "task_example")


def promotions_scan(*, actor: Actor | None = None, scanner: str = "all") -> dict[str, Any]:
    """Run one scanner or all of them; each one's report by name (the API, console and tasks)."""
    if scanner != "all" and scanner not in SCANNERS:
        raise ApplicationError(f"scanner must be 'all' or one of {', '.join(SCANNERS)}.", field="scanner")
    run = {"retrieval": retrieval_scan, "agent_learning": agent_learning_scan, "task_example": task_example_scan}
    return {name: run[name](actor=actor) for name in SCANNERS if scanner in ("all", name)}
