"""What a promotion is, in words: the review console's explanation of each promotion type.

Reads only (a selector-level module): for one promotion, its real content (the passage and its
document, the prevention prompt rendered exactly as the context builder injects it, the memory,
the task, the rule), where it would reach (which users, projects, tools, tags), its evidence as
sentences linked to the events they came from, the impact preview of a retrieval weight, what
Apply (and Reject, Supersede) will change, and the actions its state allows. Every builder reads a
fixed number of rows, whatever the amount of evidence: the detail page's query count is constant.
The template renders the plain dataclasses below and decides nothing.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from django.contrib import admin
from django.db.models import Case, Count, IntegerField, Model, Q, QuerySet, Value, When
from django.urls import NoReverseMatch, reverse

from accounts.models import Project, ProjectMembership, User
from config.exceptions import ApplicationError
from core.ids import parse_uuid
from feedback.models import FeedbackEvent, TaskFeedback
from intelligence.conf import intelligence_settings
from intelligence.models import AttributionRule, IntelligenceTarget, PacketRule
from intelligence.services.packets import SECTION_OF_TYPE, SECTIONS
from learning.conf import learning_settings
from learning.context.build import Context
from learning.context.render import context_render
from learning.models import AgentLearning, CommandRun, LearnedWorkflow, LearningUsage, Memory
from promotions.models import LIVE_STATUSES, OPEN_STATUSES, LearningPromotion
from promotions.previews import retrieval_weight_preview
from promotions.services import actions_from
from promotions.summaries import promotion_summaries
from retrieval.conf import retrieval_settings
from retrieval.models import Chunk, Document, RetrievalFeedback, RetrievalWeight, WeightStatus

# Rows an explanation shows at most (its facts still count them all).
SHOWN = 20
# Ids in one admin changelist link (a longer address is cut here; the count stays in the sentence).
LINKED = 100


@dataclass(frozen=True)
class Link:
    text: str
    url: str


@dataclass(frozen=True)
class Passage:
    """A piece of the promotion's real content: a label and its text (``pre``: shown as written,
    line breaks kept, e.g. the block the assistant is given)."""

    label: str
    text: str
    pre: bool = False
    link: Link | None = None
    role: str = ""


@dataclass(frozen=True)
class Fact:
    """One piece of evidence as a sentence, with links to the events it came from."""

    text: str
    links: tuple[Link, ...] = ()


@dataclass(frozen=True)
class Cell:
    text: str
    url: str = ""


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[Cell]]
    role: str
    note: str = ""


@dataclass
class Preview:
    """The impact preview of a retrieval weight, in words (rows: query, rank now, rank with it)."""

    summary: str
    rows: list[list[Cell]] = field(default_factory=list)
    error: str = ""


@dataclass
class Explanation:
    type_label: str
    headline: str
    about: list[str] = field(default_factory=list)  # "project Riverside", "owner alice"
    content: list[Passage] = field(default_factory=list)
    reach: list[str] = field(default_factory=list)  # where it applies: users, projects, tools, tags
    facts: list[Fact] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    apply_effect: str = ""  # "Apply creates ...", said before the Apply button
    destination: str = ""  # what applying made, and its state now
    preview: Preview | None = None
    actions: list[str] = field(default_factory=list)
    consequences: dict[str, str] = field(default_factory=dict)  # per confirmed action
    risk: str = ""
    rule: str = ""  # why it was proposed, in words


# --- small helpers -----------------------------------------------------------------------------


def _dict(value: Any) -> dict[str, Any]:
    """A JSON value that should be an object (a hand-proposed learning may hold anything)."""
    return value if isinstance(value, dict) else {}


def _number(value: Any, kind: type[int] | type[float]) -> Any:
    """A number a hand-proposed learning may hold in any shape (0 when it is not one)."""
    try:
        return kind(value) if not isinstance(value, bool) else 0
    except (TypeError, ValueError):
        return 0


def _q(text: Any, limit: int = 200) -> str:
    """Text quoted for a sentence, shortened to ``limit`` characters."""
    words = " ".join(str(text or "").split())
    return f"“{words[: limit - 1]}…”" if len(words) > limit else f"“{words}”"


def times(n: int, one: str, many: str | None = None) -> str:
    """ "1 search", "3 searches"."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


def multiplier_text(multiplier: float) -> str:
    return "×" + f"{multiplier:.2f}".rstrip("0").rstrip(".")


def _day(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d") if value else ""


def project_label(project: Project | None) -> str:
    return f"project {project.name or project.slug}" if project is not None else ""


def _names(names: Iterable[str | None], total: int | None = None, shown: int = 8) -> str:
    """ "alice, bob and 3 more"."""
    unique = list(dict.fromkeys(n for n in names if n))
    total = max(total or 0, len(unique))
    head = ", ".join(unique[:shown])
    return f"{head} and {total - len(unique[:shown])} more" if total > len(unique[:shown]) else head


def admin_change_url(model: type[Model], pk: Any) -> str:
    """The Django admin's change page of a row, if the model has an admin (else "")."""
    if pk in (None, "") or not admin.site.is_registered(model):
        return ""
    try:
        return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_change", args=[pk])
    except NoReverseMatch:
        return ""


def admin_list_url(model: type[Model], **filters: Any) -> str:
    """The Django admin's changelist of a model, filtered (local-field lookups only), if registered."""
    if not admin.site.is_registered(model):
        return ""
    try:
        base = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
    except NoReverseMatch:
        return ""
    return f"{base}?{urlencode(filters)}" if filters else base


def events_link(event_ids: Sequence[Any], text: str = "") -> Link | None:
    """A link to the events behind a fact: the event's admin page, or the changelist of them."""
    ids = [str(e) for e in dict.fromkeys(str(e) for e in event_ids if parse_uuid(e) is not None)]
    if not ids:
        return None
    if len(ids) == 1:
        url = admin_change_url(FeedbackEvent, ids[0])
        return Link(text if text and not text.startswith("the 1 ") else "the event", url) if url else None
    url = admin_list_url(FeedbackEvent, id__in=",".join(ids[:LINKED]))
    return Link(text or f"the {len(ids)} events", url) if url else None


def _links(*links: Link | None) -> tuple[Link, ...]:
    return tuple(link for link in links if link is not None and link.url)


def _members(project: Project | None) -> tuple[int, list[str]]:
    """How many members a project has, and the first names (one query)."""
    if project is None:
        return 0, []
    members = ProjectMembership.objects.filter(project=project)
    names = list(members.order_by("user__username").values_list("user__username", flat=True)[:8])
    return (len(names) if len(names) < 8 else members.count()), names


def _audience(project: Project | None, visibility: str = "project") -> str:
    """Who a shared learning reaches: a project's members (named), or everybody."""
    if visibility == "team" or project is None:
        return "every user (in every project and outside projects)"
    total, names = _members(project)
    if not total:
        return f"the members of {project_label(project)} (it has none yet)"
    return f"the {times(total, 'member')} of {project_label(project)} ({_names(names, total)})"


def _event_people(event_ids: Sequence[str]) -> dict[str, tuple[str, datetime]]:
    """Who wrote each event and when (one query): {event id: (username or "", created_at)}."""
    ids = [pk for pk in map(parse_uuid, event_ids[:500]) if pk is not None]
    return {
        str(pk): (username or "", created)
        for pk, username, created in FeedbackEvent.objects.filter(pk__in=ids).values_list(
            "pk", "user__username", "created_at"
        )
    }


def _span(people: dict[str, tuple[str, datetime]]) -> str:
    dates = sorted(created for _, created in people.values())
    if not dates:
        return ""
    first, last = _day(dates[0]), _day(dates[-1])
    return f" on {first}" if first == last else f" between {first} and {last}"


def _who(people: dict[str, tuple[str, datetime]]) -> str:
    users = sorted({name for name, _ in people.values() if name})  # sorted: the same page every time
    return f" from {times(len(users), 'user')} ({_names(users)})" if users else ""


def _risk(learning: dict[str, Any], level: str) -> str:
    risk = _dict(learning.get("risk"))
    reasons = [str(r).replace("_", "-") for r in (risk.get("reasons") or []) if r]  # "client-facing: client"
    if reasons:
        return f"{level.capitalize()}: it touches {'; '.join(reasons)}. No automatic path applies it: a person decides."
    if level == "low":
        return "Low: nothing financial, legal, contractual or client-facing in its text, tags or tool."
    return level.capitalize() + "."


# --- per type ----------------------------------------------------------------------------------


def _retrieval_weight(promotion: LearningPromotion, learning: dict[str, Any], x: Explanation) -> None:
    chunk_pk = _number(learning.get("chunk"), int) or _number(promotion.subject_id, int)
    chunk = (
        Chunk.objects.select_related("document__project")
        .defer("embedding", "document__raw_text")
        .filter(pk=chunk_pk)
        .first()
    )
    document = (
        chunk.document
        if chunk is not None
        else Document.objects.select_related("project").defer("raw_text").filter(pk=learning.get("document")).first()
    )
    multiplier = _number(learning.get("multiplier"), float) or 1.0
    factor = multiplier_text(multiplier)
    reason = str(learning.get("reason") or "")
    scope = str(learning.get("scope") or "")
    weight_project = Project.objects.filter(slug=learning["project"]).first() if learning.get("project") else None
    higher = multiplier > 1

    # The searches behind it: the anchor queries (query scope), or the latest marks of its kind.
    if chunk is None:
        rows: list[Any] = []
    else:
        base = RetrievalFeedback.objects.filter(chunk_id=chunk.pk)
        if scope == "query":
            anchors = [pk for pk in map(parse_uuid, learning.get("anchor_traces") or []) if pk is not None]
            base = base.filter(trace_id__in=anchors)
        else:
            base = base.filter(outcome=reason)
            if scope == "project" and weight_project is not None:
                base = base.filter(project=weight_project)
        rows = list(
            base.order_by("-created_at", "-pk").values(
                "pk",
                "query_text",
                "rank",
                "cited",
                "used_in_answer",
                "user_referenced",
                "outcome",
                "created_at",
                "user__username",
                "trace__feedback_at",
            )[:SHOWN]
        )
    queries = list(dict.fromkeys(" ".join(r["query_text"].split()) for r in rows))
    terms = [" ".join(t) for t in (learning.get("anchor_terms") or []) if isinstance(t, list)]
    like = ", ".join(_q(q, 80) for q in queries[:3]) or ", ".join(_q(t, 80) for t in terms[:3])
    n_queries = len(learning.get("anchor_traces") or []) or len(queries)

    direction = "higher" if higher else "lower"
    if scope == "query":
        x.headline = f"Rank this passage {direction} ({factor}) for queries like {like or 'its supporting queries'}"
    elif scope == "project":
        x.headline = (
            f"Rank this passage lower ({factor}) in searches within {project_label(weight_project) or 'one project'}:"
            " users said it belongs to another project"
        )
    else:
        x.headline = f"Rank this passage {direction} ({factor}) in every search: users marked it stale"
    x.type_label = "Retrieval weight"

    if document is not None:
        url = admin_change_url(Document, document.pk)
        x.content.append(
            Passage(
                "Document",
                document.title or document.pk,
                link=Link("open the document", url or document.url) if (url or document.url) else None,
                role="document",
            )
        )
        x.about.append(project_label(document.project) or "an organisation-wide document")
    if chunk is not None:
        x.content.append(Passage("Passage", chunk.content, pre=True, role="passage"))
    else:
        x.content.append(
            Passage("Passage", "This passage no longer exists: a re-import changed or removed it.", role="passage")
        )

    # Where it applies.
    if scope == "query":
        conf_drop = retrieval_settings.RETRIEVAL_SCOPE_MAX_DROPPED
        x.reach.append(
            f"Only searches that re-ask one of its {times(n_queries, 'supporting query', 'supporting queries')}: "
            f"embedding similarity at least {learning.get('min_similarity')} and the same content words "
            f"(at most {conf_drop} left out, none added)."
        )
    elif scope == "project":
        x.reach.append(f"Every search within {project_label(weight_project) or 'its project'}, and no other.")
    else:
        x.reach.append("Every search, in every project.")
    if document is not None:
        readers = _audience(document.project) if document.project else "everyone signed in (organisation-wide)"
        x.reach.append(f"It changes what {readers} find, since they can read the document.")

    # The supporting searches, one per row, with what the user did.
    if rows:
        event_of = dict(
            FeedbackEvent.objects.filter(
                source_table=RetrievalFeedback._meta.db_table, source_record_id__in=[str(r["pk"]) for r in rows]
            )
            .order_by("created_at")
            .values_list("source_record_id", "pk")
        )
        x.tables.append(
            Table(
                title="Supporting searches" if scope == "query" else "Searches where users marked it",
                columns=["Query", "Asked by", "Shown at rank", "What the user did", "Event"],
                rows=[
                    [
                        Cell(r["query_text"][:300]),
                        Cell(r["user__username"] or "a deleted user"),
                        Cell(str(r["rank"])),
                        Cell(_did(r)),
                        Cell("event", admin_change_url(FeedbackEvent, event_of.get(str(r["pk"]))))
                        if event_of.get(str(r["pk"]))
                        else Cell("—"),
                    ]
                    for r in rows
                ],
                role="supporting-queries",
            )
        )
        shown_users = {r["user__username"] for r in rows if r["user__username"]}
        used_users = {r["user__username"] for r in rows if r["user__username"] and _used(r)}
        mean_rank = statistics.mean(r["rank"] for r in rows)
        who = (
            f"{len(used_users)} of {times(len(shown_users), 'user')} shown it in these searches used it"
            if shown_users
            else f"used in {sum(_used(r) for r in rows)} of these {times(len(rows), 'search', 'searches')}"
        )
        x.facts.append(
            Fact(
                f"{who[0].upper()}{who[1:]}; shown at rank {mean_rank:.1f} on average.",
                _links(events_link(list(event_of.values()), "the feedback events")),
            )
        )
    evidence = _dict(learning.get("evidence"))
    chunk_events = (
        admin_list_url(FeedbackEvent, event_type="retrieval_result_feedback", subject_id=chunk.chunk_id)
        if chunk is not None
        else ""
    )
    for figures in (evidence.get("neighbourhoods") or [])[:5]:
        if isinstance(figures, dict):
            x.facts.append(
                Fact(_neighbourhood(figures, reason), _links(Link("all feedback on this passage", chunk_events)))
            )
    propensity = _dict(evidence.get("propensity"))
    if propensity:
        fitted = (
            f"estimated from {propensity.get('explored_clicks', '?')} uses of the {propensity.get('explored')} "
            f"results exploration placed at random ranks, and the prior; give or take {propensity.get('eta_sd', '?')}"
            if propensity.get("source") == "exploration"
            else "the prior: no use of a result exploration placed yet"
        )
        x.facts.append(
            Fact(
                f"Position bias corrected: a user is assumed to look at rank r with probability "
                f"(1/r)^{propensity.get('eta')} ({fitted})."
            )
        )

    # What Apply will change (and what it replaces).
    current = (
        list(
            RetrievalWeight.objects.filter(
                chunk_id=chunk.pk, status__in=[WeightStatus.ACTIVE, WeightStatus.PAUSED], scope=scope
            )
            .exclude(promotion_id=promotion.pk)
            .values_list("multiplier", "status")[:3]
        )
        if chunk is not None
        else []
    )
    where = (
        f"for {times(n_queries, 'query', 'queries')} like {like}"
        if scope == "query"
        else ("in every search" if scope == "global" else f"in searches within {project_label(weight_project)}")
    )
    x.apply_effect = (
        f"Apply creates a ranking weight {factor} on this passage {where}; search uses it at once; Pause undoes it."
    )
    if current:
        x.apply_effect += (
            " It replaces the passage's current "
            + ", ".join(f"{status} weight {multiplier_text(m)}" for m, status in current)
            + " of the same scope."
        )
    weight = RetrievalWeight.objects.filter(promotion_id=promotion.pk).values_list("multiplier", "status").first()
    if weight is not None:
        x.destination = f"Its weight {multiplier_text(weight[0])} is {weight[1]}."
        if weight[1] == WeightStatus.ORPHANED:
            x.destination += (
                f" Its passage in {_q(document.title or document.pk, 80) if document else 'its document'} changed or"
                " was removed by a re-import: it applies to nothing and can only be superseded."
            )
            x.actions = [a for a in x.actions if a not in ("apply", "pause", "resume")]

    # The impact preview, inline, while Apply is still ahead.
    if promotion.status in OPEN_STATUSES and chunk is not None:
        x.preview = _preview(promotion)


def _used(row: dict[str, Any]) -> bool:
    return bool(row["cited"] or row["used_in_answer"] or row["user_referenced"] or row["outcome"] == "helpful")


def _did(row: dict[str, Any]) -> str:
    """What the user did with the result, in words."""
    verdicts = {
        "helpful": "marked it helpful",
        "unhelpful": "marked it unhelpful",
        "unsupported": "said it did not support the answer",
        "stale": "marked it stale",
        "wrong_project": "said it belongs to another project",
    }
    if row["outcome"] in verdicts:
        done = verdicts[row["outcome"]]
        return f"used it and {done}" if (row["cited"] or row["used_in_answer"]) else done
    if row["cited"] or row["used_in_answer"]:
        return "used it in the answer"
    if row["user_referenced"]:
        return "referred to it"
    if row["trace__feedback_at"]:
        return "skipped it (gave feedback on the search, did not use this result)"
    return "no feedback on this search"


def _neighbourhood(figures: dict[str, Any], reason: str) -> str:
    """One neighbourhood's (or a problem mark's) figures as a sentence."""
    if "marks" in figures:
        kind = "stale" if reason == "stale" else "as belonging to another project"
        share = float(figures.get("share_lower") or 0)
        return (
            f"Marked {kind} {times(int(figures.get('marks') or 0), 'time')} and used "
            f"{times(int(figures.get('positives') or 0), 'time')} in "
            f"{times(int(figures.get('shown') or 0), 'showing')}: "
            f"at least {share:.0%} of the verdicts on it say so."
        )
    words = " ".join(str(t) for t in figures.get("terms") or [])
    shown, used = int(figures.get("shown") or 0), int(figures.get("positives") or 0)
    skips, negatives = int(figures.get("skips") or 0), int(figures.get("negatives") or 0)
    sentence = (
        f"Searches with the words {_q(words, 80)}: shown {times(shown, 'time')} in searches that got feedback, "
        f"used {times(used, 'time')}, skipped {times(skips, 'time')}, marked unhelpful or unsupported "
        f"{times(negatives, 'time')}."
    )
    if figures.get("at_rank_1") is not None:
        sentence += f" It was at rank 1 in {float(figures['at_rank_1']):.0%} of them."
    relevance, baseline = figures.get("relevance"), figures.get("baseline")
    if relevance is not None and baseline is not None:
        bound = (
            f"at least {float(figures.get('lower') or 0):.2f}"
            if reason == "helpful"
            else f"at most {float(figures.get('upper') or 0):.2f}"
        )
        sentence += (
            f" Once seen it is used {float(relevance):.0%} of the time ({bound} at the scan's confidence), against "
            f"{float(baseline):.0%} for the passages these searches usually return."
        )
    return sentence


def _preview(promotion: LearningPromotion) -> Preview:
    try:
        found = retrieval_weight_preview(promotion=promotion)
    except ApplicationError as exc:
        return Preview(summary="", error=exc.message)
    rows, summary = found["queries"], found["summary"]
    if not rows:
        return Preview(summary="No recent search would be reached: the weight changes nothing for them yet.")
    up = sum(1 for r in rows if _moved(r) > 0)
    down = sum(1 for r in rows if _moved(r) < 0)
    text = (
        f"Replayed the {times(summary['touched'], 'recent search', 'recent searches')} this weight would reach: "
        f"the passage moves up in {up}, down in {down} and stays where it is in {len(rows) - up - down}."
    )
    if summary["judged"]:
        change = summary["mean_ndcg_change"]
        text += (
            f" Of the {summary['judged']} whose results users judged, {summary['improved']} rank them better and "
            f"{summary['worsened']} worse (mean NDCG@10 change {change:+.3f})."
        )
    return Preview(
        summary=text,
        rows=[
            [
                Cell(r["query"]),
                Cell(str(r["rank_before"]) if r["rank_before"] else "not shown"),
                Cell(str(r["rank_after"]) if r["rank_after"] else "not shown"),
            ]
            for r in rows[:SHOWN]
        ],
    )


def _moved(row: dict[str, Any]) -> int:
    """Positive when the passage ranks higher with the weight (a rank past the page counts as k+1)."""
    before, after = row["rank_before"] or 10_000, row["rank_after"] or 10_000
    return before - after


# Per subject: where the learning came from, and its evidence's unit (singular, plural).
AGENT_SOURCES = {
    "response_feedback": ("thumbs-down on responses", "thumbs-down", "thumbs-down"),
    "tool_failure": ("repeated tool failures", "failed run", "failed runs"),
    "task_feedback": ("bad task ratings", "bad rating", "bad ratings"),
    "eval_failure": ("deterministic eval failures", "eval failure", "eval failures"),
}


def _agent_learning(promotion: LearningPromotion, learning: dict[str, Any], x: Explanation) -> None:
    source, unit, units = AGENT_SOURCES.get(promotion.subject_type, ("feedback", "event", "events"))
    prompt = str(learning.get("prevention_prompt") or "")
    title = str(learning.get("title") or "")
    tool = str(learning.get("tool_name") or "")
    tags = [str(t) for t in learning.get("tags") or []]
    x.type_label = f"Agent learning (from {source})"
    x.headline = f"Add a lesson to the assistant's context: {_q(title or prompt, 160)}"
    if promotion.project is not None:
        x.about.append(project_label(promotion.project))
    if title:
        x.content.append(Passage("Title", title, role="title"))
    injected = context_render(Context(agent_learnings=[{"prevention_prompt": prompt}]))
    x.content.append(Passage("Injected as", "\n\n".join(injected), pre=True, role="injected-text"))

    audience = _audience(promotion.project)
    x.reach.append(
        f"Users: {audience}"
        + (", in contexts for that project." if promotion.project is not None else ", in every context.")
    )
    if not tool:
        x.reach.append("Tools and surfaces: every tool and surface (chat included).")
    elif "/" in tool:
        x.reach.append(f"Tools and surfaces: only runs of the command {tool} (plugin/command).")
    else:
        x.reach.append(f"Tools and surfaces: only when the tool {tool} runs.")
    x.reach.append(
        f"Tags: only contexts tagged {', '.join(tags)} (or built for a surface of that name)."
        if tags
        else "Tags: none, so every context in that scope."
    )
    x.reach.append(
        f"At most {learning_settings.CONTEXT_MAX_AGENT_LEARNINGS} lessons reach one context, the newest first."
    )

    evidence = (
        [e for e in learning.get("evidence") or [] if isinstance(e, dict)]
        if isinstance(learning.get("evidence"), list)
        else []
    )
    ids = [str(e) for e in promotion.source_event_ids or []]
    people = _event_people(ids + [str(e.get("event")) for e in evidence if e.get("event")])
    if ids:
        counted = {k: v for k, v in people.items() if k in ids}
        x.facts.append(
            Fact(
                f"{times(len(ids), unit, units)}{_who(counted)}{_span(counted)}.",
                _links(events_link(ids, f"the {times(len(ids), 'event')}")),
            )
        )
    columns, cells = _agent_columns(promotion.subject_type)
    if evidence:
        x.tables.append(
            Table(
                title=f"The {units}" if units != unit else f"The {unit}",
                columns=["When", "User", *columns, "Event"],
                rows=[
                    [
                        Cell(_day(people.get(str(e.get("event")), ("", None))[1])),
                        Cell(people.get(str(e.get("event")), ("",))[0] or "—"),
                        *cells(e),
                        Cell("event", admin_change_url(FeedbackEvent, e.get("event"))) if e.get("event") else Cell("—"),
                    ]
                    for e in evidence[:SHOWN]
                ],
                role="evidence",
                note=f"The first {len(evidence[:SHOWN])} of {len(ids)}." if len(ids) > len(evidence[:SHOWN]) else "",
            )
        )
    x.risk = _risk(learning, promotion.risk_level)
    usage = LearningUsage.objects.filter(learning__promotion_id=promotion.pk).aggregate(
        total=Count("pk"),
        helped=Count("pk", filter=Q(outcome=LearningUsage.Outcome.HELPED)),
        hurt=Count("pk", filter=Q(outcome=LearningUsage.Outcome.HURT)),
    )
    if usage["total"]:
        x.facts.append(
            Fact(
                f"Injected into {times(usage['total'], 'context')} since it was applied: {usage['helped']} helped, "
                f"{usage['hurt']} hurt, {usage['total'] - usage['helped'] - usage['hurt']} without feedback yet."
            )
        )
    scope = (
        f"the contexts of {audience}"
        + (f" when {tool} runs" if tool else "")
        + (f", tagged {', '.join(tags)}" if tags else "")
    )
    x.apply_effect = (
        f"Apply adds this lesson to the [Lessons From Reviewed Feedback] block of {scope}; it reaches the next "
        "context built; Pause takes it out."
    )
    row = AgentLearning.objects.filter(promotion_id=promotion.pk).values_list("pk", "status").first()
    if row is not None:
        x.destination = f"The lesson is {row[1]}."


def _agent_columns(subject_type: str) -> tuple[list[str], Callable[[dict[str, Any]], list[Cell]]]:
    """The evidence table's own columns per kind of evidence, and how a row fills them."""
    if subject_type == "tool_failure":
        return ["Error shown", "Run"], lambda e: [
            Cell(str(e.get("error") or "—")),
            Cell("the run", admin_change_url(CommandRun, e.get("run"))) if e.get("run") else Cell("—"),
        ]
    if subject_type == "task_feedback":
        return ["Task", "Reason given"], lambda e: [
            Cell(str(e.get("title") or "—")),
            Cell(str(e.get("reason") or "—")),
        ]
    if subject_type == "eval_failure":
        return ["Observed"], lambda e: [Cell(str(e.get("observed") or "—"))]
    return ["Response", "Reason given", "Tool trace"], lambda e: [
        Cell(str(e.get("response") or "—")),
        Cell(str(e.get("reason") or "—")),
        Cell(_trace_text(e.get("tool_trace")) or "—"),
    ]


def _trace_text(trace: Any) -> str:
    """A tool trace as the user's tool reported it: text as is, steps one per line."""
    if not trace:
        return ""
    if isinstance(trace, str):
        return trace[:500]
    if isinstance(trace, list):
        return "; ".join(_trace_text(step) for step in trace[:10])[:500]
    if isinstance(trace, dict):
        return ", ".join(f"{k}: {_trace_text(v)}" for k, v in list(trace.items())[:10])[:500]
    return str(trace)[:500]


def _task_example(promotion: LearningPromotion, learning: dict[str, Any], x: Explanation) -> None:
    title, description = str(learning.get("title") or ""), str(learning.get("description") or "")
    x.type_label = "Task example"
    x.headline = f"Show task generation this example: {_q(title, 160)}"
    if promotion.project is not None:
        x.about.append(project_label(promotion.project))
    x.content += [
        Passage("Task", title, role="title"),
        Passage("Description", description, pre=True, role="description"),
        Passage(
            "Injected as",
            "\n\n".join(context_render(Context(task_examples=[{"title": title, "description": description}]))),
            pre=True,
            role="injected-text",
        ),
    ]
    where = (
        f"for {project_label(promotion.project)} (its members' task generation)"
        if promotion.project is not None
        else "for task generation outside projects"
    )
    x.reach.append(
        f"Task generation contexts (the task_generation surface) {where}; at most "
        f"{learning_settings.CONTEXT_MAX_TASK_EXAMPLES} examples reach one context."
    )
    rated_pk = parse_uuid(promotion.subject_id)
    rated = TaskFeedback.objects.select_related("user").filter(pk=rated_pk).first() if rated_pk is not None else None
    if rated is not None:
        text = f"Rated good by {rated.user.username if rated.user else 'a deleted user'} on {_day(rated.created_at)}"
        text += ", and completed" if rated.completed else ", not completed"
        text += f"; reason {_q(rated.reason)}." if rated.reason else "."
        x.facts.append(Fact(text, _links(Link("the rating", admin_change_url(TaskFeedback, rated.pk)))))
        x.destination = "It is an approved example now." if rated.promoted else ""
    outcomes = _dict(learning.get("outcomes")) or None
    if outcomes:
        ids = [str(e) for e in promotion.source_event_ids or []]
        x.facts.append(
            Fact(
                f"{outcomes.get('successes')} of {outcomes.get('total')} reported workflow outcomes succeeded "
                f"(lower bound of the success share {outcomes.get('lower_bound')}).",
                _links(events_link(ids, "the outcome events")),
            )
        )
    x.risk = _risk(learning, promotion.risk_level) if learning.get("risk") else ""
    x.apply_effect = (
        f"Apply makes this task an approved example: task generation {where} is shown it from the next call; "
        "Pause withdraws it."
    )


def _owner(learning: dict[str, Any]) -> User | None:
    owner = learning.get("owner")
    return User.objects.filter(pk=owner).first() if isinstance(owner, int) and not isinstance(owner, bool) else None


def _shared_project(learning: dict[str, Any], promotion: LearningPromotion) -> Project | None:
    if learning.get("visibility") == "team":
        return None
    return promotion.project or (
        Project.objects.filter(slug=learning["project"]).first() if learning.get("project") else None
    )


def _memory(promotion: LearningPromotion, learning: dict[str, Any], x: Explanation) -> None:
    owner = _owner(learning)
    visibility = str(learning.get("visibility") or "team")
    content, kind = str(learning.get("content") or ""), str(learning.get("kind") or "fact")
    project = _shared_project(learning, promotion)
    audience = _audience(project, visibility)
    x.type_label = "Memory share"
    x.headline = f"Share {owner.username if owner else 'a user'}'s memory with {audience}"
    x.about += [f"owner {owner.username}" if owner else "owner: a deleted user", project_label(project)]
    x.content += [
        Passage("Memory", content, pre=True, role="memory"),
        Passage("Kind", kind),
        Passage(
            "Injected as",
            "\n\n".join(
                context_render(Context(memories=[{"kind": kind, "content": content, "visibility": visibility}]))
            ),
            pre=True,
            role="injected-text",
        ),
    ]
    x.reach.append(
        f"Users: {audience}" + (", in contexts for that project." if project is not None else ", in every context.")
    )
    memory_pk = parse_uuid(promotion.subject_id) if promotion.subject_type == "memory" else None
    original = (
        Memory.objects.select_related("source_message").filter(pk=memory_pk).first() if memory_pk is not None else None
    )
    if original is not None:
        said = (
            f"Said by {owner.username if owner else 'its owner'} in chat on {_day(original.source_message.created_at)}"
            if original.source_message is not None
            else f"Kept by {owner.username if owner else 'its owner'} since {_day(original.created_at)}"
        )
        x.facts.append(
            Fact(
                f"{said}; confidence {original.confidence:.2f}; the owner asked for it to be shared.",
                _links(Link("the private memory", admin_change_url(Memory, original.pk))),
            )
        )
        if " ".join(original.content.split()) != " ".join(content.split()):
            x.facts.append(Fact(f"The owner has edited it since it was proposed; it now reads {_q(original.content)}."))
        if original.status != Memory.Status.ACTIVE:
            x.facts.append(Fact("The owner has archived the private memory since: Apply will refuse to share it."))
    x.apply_effect = (
        f"Apply creates a {visibility} memory that {audience} see under [Team Knowledge] from their next context; "
        f"{owner.username if owner else 'the owner'}'s private memory stays theirs; Pause archives the shared copy."
    )
    shared = Memory.objects.filter(promotion_id=promotion.pk).values_list("status", flat=True).first()
    if shared is not None:
        x.destination = f"The shared copy is {shared}."


def _workflow(promotion: LearningPromotion, learning: dict[str, Any], x: Explanation) -> None:
    owner = _owner(learning)
    visibility = str(learning.get("visibility") or "project")
    project = _shared_project(learning, promotion)
    audience = _audience(project, visibility)
    name = str(learning.get("workflow_name") or "")
    x.type_label = "Workflow share"
    x.headline = f"Share the workflow {_q(name, 120)} with {audience}"
    x.about += [f"owner {owner.username}" if owner else "owner: a deleted user", project_label(project)]
    steps = (
        [str(s) for s in learning.get("learned_steps") or [] if s]
        if isinstance(learning.get("learned_steps"), list)
        else []
    )
    x.content.append(Passage("Workflow", name, role="title"))
    x.content.append(Passage("Trigger", str(learning.get("trigger_pattern") or "")))
    if steps:
        x.content.append(Passage("Steps", "\n".join(f"{i}. {s}" for i, s in enumerate(steps, 1)), pre=True))
    if learning.get("preferred_output"):
        x.content.append(Passage("Output", str(learning["preferred_output"])))
    block = {
        "workflow_name": name,
        "trigger_pattern": str(learning.get("trigger_pattern") or ""),
        "preferred_output": str(learning.get("preferred_output") or ""),
    }
    x.content.append(
        Passage("Injected as", "\n\n".join(context_render(Context(workflow=block))), pre=True, role="injected-text")
    )
    x.reach.append(
        f"Users: {audience}, when a message matches its trigger"
        + (" in a context for that project." if project is not None else ".")
    )
    source = (
        LearnedWorkflow.objects.filter(pk=int(promotion.subject_id))
        .values_list("times_detected", "example_input", "created_at")
        .first()
        if promotion.subject_id.isdigit()
        else None
    )
    if source is not None:
        detected, example, created = source
        whose = owner.username if owner else "its owner"
        text = f"Learned from {times(detected, 'request')} of {whose}'s since {_day(created)}"
        text += f", for example {_q(example)}." if example else "."
        x.facts.append(
            Fact(text, _links(Link("the workflow", admin_change_url(LearnedWorkflow, promotion.subject_id))))
        )
    x.apply_effect = (
        f"Apply shares a copy that {audience} are offered when a message matches it, from their next context; the "
        "owner's own workflow stays theirs; Pause switches the copy off."
    )
    shared = LearnedWorkflow.objects.filter(promotion_id=promotion.pk).values_list("active", flat=True).first()
    if shared is not None:
        x.destination = f"The shared copy is {'active' if shared else 'switched off'}."


SECTION_TITLES = {key: title for key, title, _ in SECTIONS}
MARKED = {"positive": "useful", "negative": "wrong", "stale": "stale"}


def _section(card_type: Any) -> str:
    return SECTION_TITLES.get(SECTION_OF_TYPE.get(str(card_type), ""), str(card_type))


def packet_rule_effect(rule_type: str, parameters: dict[str, Any]) -> str:
    """What a packet rule changes in a packet, in words (intelligence.services.packets applies it)."""
    card_type = str(parameters.get("card_type") or "")
    if rule_type == "section_order":
        order = [SECTION_TITLES.get(str(k), str(k)) for k in parameters.get("order") or []]
        audience = f"{parameters['audience']} " if parameters.get("audience") else ""
        return f"In {audience}packets, {' then '.join(order)} appear in this order, at the place of the first of them."
    if rule_type == "card_type_rank":
        if parameters.get("direction") == "up":
            return f"The {_section(card_type)} section moves up to just after the active blockers."
        return f"The {_section(card_type)} section moves down to the end of the fresh sections."
    if rule_type == "stale_after_days":
        return (
            f"{card_type} cards with no new evidence for {parameters.get('days')} days drop to the stale section "
            f"(instead of after {intelligence_settings.INTELLIGENCE_STALE_DAYS} days)."
        )
    if rule_type == "confirming_source":
        systems = ", ".join(str(s) for s in parameters.get("source_systems") or [])
        return (
            f"A {card_type} card whose evidence comes only from {systems} is shown with its confidence capped at "
            f"{parameters.get('confidence_cap', 0.5)}, after the confirmed cards of its section."
        )
    if rule_type == "coverage_watch":
        return (
            f"{parameters.get('source_system')} must feed the packet: when it fed no card within the window it is "
            "listed as missing coverage."
        )
    return ""


def _packet_rule(promotion: LearningPromotion, learning: dict[str, Any], x: Explanation) -> None:
    rule_type = str(learning.get("rule_type") or "")
    parameters = _dict(learning.get("parameters"))
    x.type_label = "Packet rule"
    x.headline = str(learning.get("description") or rule_type)
    if promotion.project is not None:
        x.about.append(project_label(promotion.project))
    x.content.append(Passage("Rule", str(learning.get("description") or ""), role="rule"))
    effect = packet_rule_effect(rule_type, parameters)
    x.content.append(Passage("What it changes", effect, role="effect"))
    targets = (
        list(
            IntelligenceTarget.objects.filter(project=promotion.project, active=True)
            .order_by("name")
            .values_list("name", flat=True)[:9]
        )
        if promotion.project is not None
        else []
    )
    scope = (
        f"the packets of {project_label(promotion.project)}"
        + (f" ({times(len(targets), 'target')}: {_names(targets)})" if targets else "")
        if promotion.project is not None
        else "every project's packets"
    )
    x.reach.append(f"Packets: {scope}.")
    if learning.get("client_facing"):
        x.reach.append("What owners and clients see: a person must decide.")
    evidence = _dict(learning.get("evidence"))
    ids = [str(e) for e in promotion.source_event_ids or []]
    people = _event_people(ids)
    link = _links(events_link(ids, f"the {times(len(ids), 'event')}"))
    if "marks" in evidence:
        cards = evidence.get("cards") or []
        x.facts.append(
            Fact(
                f"Users marked {parameters.get('card_type')} cards {MARKED.get(str(evidence.get('signal')), 'so')} "
                f"{times(int(evidence['marks']), 'time')}, on {times(len(cards), 'card')}"
                f"{_who(people)}{_span(people)}.",
                link,
            )
        )
    elif "edits" in evidence:
        order = [SECTION_TITLES.get(str(k), str(k)) for k in parameters.get("order") or []]
        x.facts.append(
            Fact(
                f"{times(int(evidence['edits']), 'edit')} of {parameters.get('audience') or ''} summaries moved "
                f"{' above '.join(order)}; {evidence.get('reverse', 0)} moved them the other way{_who(people)}.",
                link,
            )
        )
    elif "packets" in evidence:
        versions = " and ".join(f"v{v}" for v in evidence.get("packets") or [])
        x.facts.append(
            Fact(
                f"{parameters.get('source_system')} fed no card in packets {versions} in a row, "
                "although it had documents."
            )
        )
    x.apply_effect = (
        f"Apply activates the rule for {scope}: they are refreshed at once and show it; Pause turns it off and "
        "refreshes them again."
    )
    row = PacketRule.objects.filter(promotion_id=promotion.pk).values_list("status", flat=True).first()
    if row is not None:
        x.destination = f"The rule is {row}."


MATCH_WORDS = {
    "alias": "documents whose title or text contains the phrase {p}",
    "phrase": "documents whose title or text contains the phrase {p}",
    "title": "documents whose title contains {p}",
    "path": "documents in the folder {p} (or below it)",
    "participant": "documents with {p} among their participants",
    "domain": "documents from the domain {p}",
    "source": "documents from the source system {p}",
}


def attribution_match_text(match_kind: str, pattern: str) -> str:
    return MATCH_WORDS.get(match_kind, "documents matching {p}").format(p=_q(pattern, 120))


def _attribution_rule(promotion: LearningPromotion, learning: dict[str, Any], x: Explanation) -> None:
    target = promotion.target
    matches = attribution_match_text(str(learning.get("match_kind") or ""), str(learning.get("pattern") or ""))
    target_name = (
        f"{target.name} ({project_label(promotion.project)})"
        if target is not None and promotion.project is not None
        else (target.name if target is not None else str(learning.get("target") or "its target"))
    )
    x.type_label = "Attribution rule"
    x.headline = f"Attribute {matches} to {target_name}"
    x.about += [f"target {target.name}" if target is not None else "", project_label(promotion.project)]
    x.content.append(
        Passage("Rule", f"{matches[0].upper()}{matches[1:]} count as evidence for {target_name}.", role="rule")
    )
    x.content.append(
        Passage(
            "What it changes",
            "When a document is attributed on import, a match is strong evidence for this target (as a name in the "
            "target's profile is); a document that already has a project is never attributed again.",
            role="effect",
        )
    )
    x.reach.append("Documents imported from now on, from every source.")
    support = _dict(learning.get("support"))
    ids = [str(e) for e in promotion.source_event_ids or []]
    people = _event_people(ids)
    if support:
        x.facts.append(
            Fact(
                f"Reviewers attributed {times(int(support.get('reviewed') or 0), 'document')} with this pattern to "
                f"{target.name if target else 'the target'}{_who(people)}{_span(people)}; "
                f"{times(int(support.get('attributed') or 0), 'document')} of "
                f"{project_label(promotion.project) or 'its project'} "
                f"match it, and at most {support.get('best_other_project', 0)} of any other project.",
                _links(events_link(ids, "the review events")),
            )
        )
    reviewed = [str(d) for d in learning.get("reviewed_documents") or []][:SHOWN]
    if reviewed:
        titles = dict(Document.objects.filter(pk__in=reviewed).values_list("pk", "title"))
        x.tables.append(
            Table(
                title="Documents reviewers attributed",
                columns=["Document"],
                rows=[
                    [Cell(titles.get(d) or d, admin_change_url(Document, d) if d in titles else "")] for d in reviewed
                ],
                role="reviewed-documents",
            )
        )
    x.apply_effect = (
        f"Apply creates an active attribution rule: {matches} imported from now on count as evidence for "
        f"{target_name}; Pause stops it."
    )
    row = AttributionRule.objects.filter(promotion_id=promotion.pk).values_list("status", flat=True).first()
    if row is not None:
        x.destination = f"The rule is {row}."


BUILDERS: dict[str, Callable[[LearningPromotion, dict[str, Any], Explanation], None]] = {
    "retrieval_weight": _retrieval_weight,
    "agent_learning": _agent_learning,
    "task_example": _task_example,
    "memory": _memory,
    "workflow": _workflow,
    "packet_rule": _packet_rule,
    "attribution_rule": _attribution_rule,
}

# Reject, per type: what happens to what it was built from (the scanners' own rules).
REJECT_EFFECT = (
    "Reject closes this candidate: nothing the assistant does changes, and the decision and your notes stay in "
    "the audit trail."
)
AFTER_REJECT = {
    "retrieval_weight": " A later scan may propose a weight for this passage again if new evidence points at it.",
    "memory": " The owner may ask again.",
    "workflow": " The owner may ask again.",
}
AFTER_REJECT_DEFAULT = " The scans do not count its evidence again."


def rule_words(rule: str) -> str:
    """A rule as the reviewer reads it: "one_off_thumbs_down: a single thumbs-down opens..." loses
    its code name (kept in the ledger and the audit events)."""
    name, _, words = rule.partition(": ")
    return words if words and " " not in name else rule


def promotion_explain(*, promotion: LearningPromotion) -> Explanation:
    """The console's explanation of one promotion (see the module); a fixed number of queries."""
    learning = promotion.proposed_learning if isinstance(promotion.proposed_learning, dict) else {}
    x = Explanation(
        type_label=promotion.promotion_type,
        headline="",
        actions=actions_from(promotion.status),
        rule=rule_words(promotion.rule),
    )
    builder = BUILDERS.get(promotion.promotion_type)
    if builder is not None:
        builder(promotion, learning, x)
    x.about = [a for a in x.about if a]
    if not x.risk:
        x.risk = promotion.risk_level.capitalize() + "."
    retires = (
        "retires what it made, which stops applying at once"
        if promotion.applied_at is not None
        else "changes nothing the assistant does (it was never applied)"
    )
    x.consequences = {
        "apply": x.apply_effect,
        "reject": REJECT_EFFECT + AFTER_REJECT.get(promotion.promotion_type, AFTER_REJECT_DEFAULT),
        "supersede": (
            f"Supersede closes this promotion for good and {retires}; the replacement you picked is recorded with it "
            "in the ledger and the audit trail."
        ),
    }
    return x


def promotion_briefs(promotions: Sequence[LearningPromotion]) -> dict[str, str]:
    """Each promotion in one line of words, by id (the list's own ``promotion_summaries``: one query
    for the passages of retrieval weights)."""
    return {str(pk): line for pk, line in promotion_summaries(promotions).items()}


@dataclass(frozen=True)
class Choice:
    value: str
    label: str


def replacement_choices(*, promotion: LearningPromotion, limit: int = 50) -> list[Choice]:
    """What may replace a promotion when it is superseded: the other live promotions of its type,
    those about the same subject first, then the newest (two queries)."""
    others = list(_replacements(promotion)[:limit])
    briefs = promotion_briefs(others)
    same = (promotion.subject_type, promotion.subject_id)
    return [
        Choice(
            str(p.pk),
            f"{briefs[str(p.pk)]} · {p.status}, proposed {_day(p.created_at)}"
            + (" · same subject" if (p.subject_type, p.subject_id) == same else ""),
        )
        for p in others
    ]


def _replacements(promotion: LearningPromotion) -> QuerySet[LearningPromotion]:
    return (
        LearningPromotion.objects.filter(promotion_type=promotion.promotion_type, status__in=LIVE_STATUSES)
        .select_related("project")
        .exclude(pk=promotion.pk)
        .annotate(
            other_subject=Case(
                When(Q(subject_type=promotion.subject_type, subject_id=promotion.subject_id), then=Value(0)),
                default=Value(1),
                output_field=IntegerField(),
            )
        )
        .order_by("other_subject", "-created_at", "-pk")
    )


@dataclass(frozen=True)
class Button:
    """One action the page offers: its label, and for a confirmed one the dialog's title and consequence."""

    action: str
    label: str
    notes: bool = False  # the form takes review notes
    confirm_title: str = ""
    consequence: str = ""


BUTTONS = {
    "approve": ("Approve", True, ""),
    "reject": ("Reject…", True, "Reject this candidate?"),
    "apply": ("Apply…", False, "Apply this promotion?"),
    "pause": ("Pause", False, ""),
    "resume": ("Resume", False, ""),
    "supersede": ("Supersede…", False, "Supersede this promotion?"),
}


def action_buttons(x: Explanation) -> list[Button]:
    """The buttons of the actions the promotion's state allows, in the state machine's order."""
    return [
        Button(action, BUTTONS[action][0], BUTTONS[action][1], BUTTONS[action][2], x.consequences.get(action, ""))
        for action in x.actions
        if action in BUTTONS
    ]


PAST = {
    "approve": "approved",
    "reject": "rejected",
    "apply": "applied",
    "pause": "paused",
    "resume": "resumed",
    "supersede": "superseded",
}


def action_message(action: str, promotion: LearningPromotion) -> str:
    """The console's message once an action succeeded: "Promotion applied.", "Promotion superseded by …"."""
    if action == "supersede" and promotion.superseded_by is not None:
        return (
            f"Promotion superseded by “{promotion_briefs([promotion.superseded_by])[str(promotion.superseded_by.pk)]}”."
        )
    return f"Promotion {PAST[action]}."


@dataclass(frozen=True)
class AuditLine:
    when: datetime
    text: str
    notes: str
    url: str


AUDIT_WORDS = {
    "promotion_propose": "Proposed",
    "promotion_reinforce": "Reinforced with new evidence",
    "promotion_approve": "Approved",
    "promotion_reject": "Rejected",
    "promotion_apply": "Applied",
    "promotion_pause": "Paused",
    "promotion_resume": "Resumed",
    "promotion_supersede": "Superseded",
    "promotion_expire": "Expired",
}


def audit_trail(events: Iterable[FeedbackEvent]) -> list[AuditLine]:
    """The audit events of a promotion as lines: what happened, by whom, the notes, a link to the event."""
    lines = []
    for event in events:
        what = AUDIT_WORDS.get(event.event_type) or event.event_type.replace("_", " ").capitalize()
        after = event.after_snapshot if isinstance(event.after_snapshot, dict) else {}
        if event.signal == "failed":
            what = f"{what.split(' ')[0]} refused" + (f": {after['error']}" if after.get("error") else "")
        elif event.event_type == "promotion_reinforce" and after.get("evidence") is not None:
            what += f" (evidence {after.get('previous_evidence')} → {after.get('evidence')})"
        who = f"by {event.user.username}" if event.user is not None else "by the system"
        lines.append(
            AuditLine(event.created_at, f"{what} {who}", event.free_text, admin_change_url(FeedbackEvent, event.pk))
        )
    return lines
