"""Reads of the promotion ledger and its scan runs (staff admins only)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from accounts.actors import Actor
from accounts.models import Project
from config.exceptions import AccessDenied
from core.ids import parse_uuid
from feedback.models import FeedbackEvent
from promotions.filters import PromotionFilter
from promotions.models import LearningPromotion, PromotionStatus, ScanRun
from promotions.summaries import promotion_summaries, type_label
from retrieval.models import RetrievalWeight


def _require_admin(actor: Actor) -> None:
    if not actor.is_admin:
        raise AccessDenied("Only staff admins review promotions.")


def promotion_list(*, actor: Actor) -> QuerySet[LearningPromotion]:
    """Every promotion, newest first, with what the list shows joined in (no N+1)."""
    _require_admin(actor)
    return LearningPromotion.objects.select_related("project", "reviewed_by").order_by("-created_at", "-id")


def promotion_get(*, actor: Actor, promotion_id: str) -> LearningPromotion | None:
    """One promotion, with its project, reviewer, target and replacement joined in."""
    return (
        promotion_list(actor=actor).select_related("target", "superseded_by__project").filter(pk=promotion_id).first()
    )


def scan_run_list(*, actor: Actor) -> QuerySet[ScanRun]:
    """Every scan run, latest first, with who asked for it joined in."""
    _require_admin(actor)
    return ScanRun.objects.select_related("requested_by").order_by("-created_at", "-id")


def scan_run_get(*, actor: Actor, scan_run_id: str) -> ScanRun | None:
    """One scan run (None for an id that is not one)."""
    parsed = parse_uuid(scan_run_id)
    return scan_run_list(actor=actor).filter(pk=parsed).first() if parsed else None


def scan_run_latest(*, actor: Actor) -> ScanRun | None:
    """The latest scan run, whatever its scanner (the console shows it). One query."""
    return scan_run_list(actor=actor).first()


def console_metrics() -> dict[str, int]:
    """The console's counters: two aggregate queries, whatever the number of rows."""
    promotions = LearningPromotion.objects.aggregate(
        candidates=Count("id", filter=Q(status="candidate")),
        approvals=Count("id", filter=Q(status="approved")),
        applied=Count("id", filter=Q(status="applied")),
        superseded=Count("id", filter=Q(status="superseded")),
    )
    weights = RetrievalWeight.objects.aggregate(
        active_weights=Count("id", filter=Q(status="active")),
        paused_weights=Count("id", filter=Q(status="paused")),
        orphaned_weights=Count("id", filter=Q(status="orphaned")),
    )
    activity = FeedbackEvent.objects.filter(
        subject_type="promotion", created_at__gte=timezone.now() - timedelta(days=7)
    ).count()
    return {**promotions, **weights, "audit_activity_7d": activity}


def retrieval_weight_of(*, promotion: LearningPromotion) -> RetrievalWeight | None:
    """The weight a retrieval_weight promotion made, if any (the console shows its status: an orphaned
    one can only be superseded)."""
    if promotion.promotion_type != "retrieval_weight":
        return None
    return RetrievalWeight.objects.filter(promotion_id=promotion.pk).only("pk", "status", "document_id").first()


def promotion_activity(*, promotion_id: str | None = None, limit: int = 20) -> QuerySet:
    """The audit trail: promotion lifecycle events, newest first (one query)."""
    qs = FeedbackEvent.objects.filter(subject_type="promotion").select_related("user").order_by("-created_at")
    if promotion_id:
        qs = qs.filter(subject_id=promotion_id)
    return qs[:limit]


# --- the console's queue ------------------------------------------------------------------------

# The console's tabs, one per status, in the order a promotion moves through them.
QUEUE_TABS: tuple[str, ...] = ("candidate", "approved", "applied", "paused", "rejected", "superseded", "expired")
# The filters the console offers (the API's subject_type/subject_id are read too, if given).
QUEUE_FILTERS: tuple[str, ...] = (
    "q",
    "promotion_type",
    "project",
    "risk_level",
    "promotion_path",
    "rule",
    "created_after",
    "created_before",
    "subject_type",
    "subject_id",
)
QUERY_MAX_CHARS = 200


@dataclass(frozen=True)
class PromotionQueue:
    """One tab of the console under the filters it was asked for."""

    status: str
    rows: QuerySet[LearningPromotion]  # this tab's promotions that pass the filters, newest first
    counts: dict[str, int]  # every tab's count under the same filters
    filters: dict[str, str]  # the filters applied (the invalid ones dropped): what links keep
    errors: list[str] = field(default_factory=list)  # each filter that was ignored, and why
    projects: list[tuple[str, str]] = field(default_factory=list)  # (slug, name) to filter by


def _filter_error(filterset: PromotionFilter, name: str, value: str) -> str:
    flt = filterset.filters[name]
    label = str(flt.label or name).lower()
    choices = [str(choice) for choice, _ in flt.extra.get("choices", [])]
    if choices:
        return f"Ignored the {label} filter: {value!r} is not one of {', '.join(choices)}."
    if name.startswith("created_"):
        return f"Ignored the {label} filter: {value!r} is not a date (YYYY-MM-DD) or an ISO 8601 date and time."
    return f"Ignored the {label} filter: {' '.join(filterset.errors[name])}"


def promotion_queue(*, actor: Actor, params: Mapping[str, str]) -> PromotionQueue:
    """The console's queue: the promotions of one status tab that pass the filters in ``params``
    (the API's PromotionFilter), and each tab's count under the same filters (one aggregate query).
    An unknown tab, type, risk, path or project, or a bad date, is dropped with a message saying
    so; the rest still apply."""
    _require_admin(actor)
    errors: list[str] = []
    # A NUL cannot be compared by PostgreSQL (a 500 deep in the query): it is no part of a filter.
    data = {name: str(params.get(name) or "").replace("\x00", "").strip() for name in QUEUE_FILTERS}
    data = {name: value for name, value in data.items() if value}
    if "q" in data:
        data["q"] = data["q"][:QUERY_MAX_CHARS]
    projects = list(Project.objects.order_by("slug").values_list("slug", "name"))
    if "project" in data and data["project"] not in {slug for slug, _ in projects}:
        errors.append(f"Ignored the project filter: there is no project {data.pop('project')!r}.")
    filterset = PromotionFilter(data, queryset=promotion_list(actor=actor))
    if not filterset.is_valid():
        for name in list(filterset.errors):
            errors.append(_filter_error(filterset, name, data.pop(name)))
        filterset = PromotionFilter(data, queryset=promotion_list(actor=actor))
    bounds = filterset.form.cleaned_data if filterset.is_valid() else {}
    if (
        bounds.get("created_after")
        and bounds.get("created_before")
        and bounds["created_after"] >= bounds["created_before"]
    ):
        errors.append("The created-from date is not before the created-before date: no promotion can match both.")
    status = str(params.get("status") or PromotionStatus.CANDIDATE)
    if status not in QUEUE_TABS:
        errors.append(f"There is no {status!r} tab; showing the candidates. Tabs: {', '.join(QUEUE_TABS)}.")
        status = PromotionStatus.CANDIDATE
    queryset = filterset.qs
    counts = queryset.aggregate(**{tab: Count("pk", filter=Q(status=tab)) for tab in QUEUE_TABS})
    return PromotionQueue(
        status=status,
        rows=queryset.filter(status=status),
        counts=counts,
        filters=data,
        errors=errors,
        projects=projects,
    )


@dataclass(frozen=True)
class PromotionLine:
    """A promotion as a list row shows it: the row, what it would do in words, its type in words."""

    promotion: LearningPromotion
    summary: str
    kind: str


def promotion_lines(*, promotions: Iterable[LearningPromotion]) -> list[PromotionLine]:
    """Each promotion with its line in words (promotions.summaries): one query for the passages of
    the retrieval weights among them, none otherwise. The project must be joined in."""
    rows = list(promotions)
    summaries = promotion_summaries(rows)
    return [PromotionLine(row, summaries[row.pk], type_label(row.promotion_type)) for row in rows]


# The scheduled scans (Celery beat), in words, for the console's empty state.
SCHEDULED_SCANS = {
    "promotions.retrieval_scan": "search traces (retrieval weights)",
    "promotions.agent_learning_scan": "thumbs-down on answers (prevention prompts)",
    "promotions.task_example_scan": "rated tasks (task examples)",
}


def _every(seconds: float) -> str:
    hours, minutes = seconds / 3600, seconds / 60
    if hours == 1:
        return "every hour"
    if hours >= 1 and hours.is_integer():
        return f"every {int(hours)} hours"
    return "every minute" if minutes == 1 else f"every {minutes:g} minutes"


def scan_schedule() -> list[str]:
    """What the beat schedule scans, and how often ("search traces (retrieval weights) every hour")."""
    schedule = getattr(settings, "CELERY_BEAT_SCHEDULE", {}) or {}
    lines = []
    for entry in schedule.values():
        words = SCHEDULED_SCANS.get(entry.get("task", ""))
        seconds = entry.get("schedule")
        if words and isinstance(seconds, int | float):
            lines.append(f"{words} {_every(float(seconds))}")
    return lines


# --- the activity feed --------------------------------------------------------------------------

# A lifecycle event's action in words (event type "promotion_<action>").
ACTION_WORDS = {
    "propose": "proposed",
    "reinforce": "added evidence to",
    "approve": "approved",
    "reject": "rejected",
    "apply": "applied",
    "pause": "paused",
    "resume": "resumed",
    "supersede": "superseded",
    "expire": "expired",
}


@dataclass(frozen=True)
class FeedEntry:
    """One audit event of the ledger in words: ``who`` ``verb`` ``summary`` (a link when the
    promotion is still stored), then ``detail`` (notes, or why it failed)."""

    created_at: datetime
    who: str
    verb: str
    summary: str
    promotion_id: str | None
    detail: str = ""
    failed: bool = False


def _who_and_verb(event: FeedbackEvent, action: str) -> tuple[str, str]:
    """Who did it and what they did, in words; an empty ``who`` puts the verb after the promotion."""
    user = event.user.username if event.user else ""
    rule = str((event.metadata or {}).get("rule") or "")
    if action == "expire":
        return "", "expired: nobody reviewed it in time"
    if event.event_type == "retrieval_weight_orphaned":
        return "", "lost its passage to a re-import (the weight is orphaned)"
    if action not in ACTION_WORDS:  # an event this feed has no words for: its name, in words
        return "", f"— {event.event_type.replace('_', ' ')}"
    if event.signal == "failed":
        return user or "the system", f"could not {action}"
    if action == "propose" and rule.startswith("owner_share_request"):
        return user or "an owner", "asked to share"
    if action == "propose" and rule.startswith("admin_proposal"):
        return user or "an admin", "proposed"
    if action in ("propose", "reinforce"):
        # The scanners' audit events name who asked for the scan (nobody, for the scheduled ones).
        return f"a scan by {user}" if user else "a scheduled scan", ACTION_WORDS[action]
    verb = ACTION_WORDS[action]
    if not user:
        # The automatic paths approve and apply as the system, under the rule that fired.
        return "the system", f"automatically {verb}" if action in ("approve", "apply") else verb
    return user, verb


def promotion_feed(*, actor: Actor, limit: int = 20) -> list[FeedEntry]:
    """The newest lifecycle events of the ledger, each saying who did what to which promotion:
    the events (with their users), the promotions they name and any weight's passage: three
    queries at most, whatever the number of events."""
    _require_admin(actor)
    events = list(
        FeedbackEvent.objects.filter(subject_type="promotion").select_related("user").order_by("-created_at")[:limit]
    )
    ids = {parsed for parsed in (parse_uuid(event.subject_id) for event in events) if parsed is not None}
    promotions = LearningPromotion.objects.select_related("project").in_bulk(ids) if ids else {}
    summaries = promotion_summaries(promotions.values())
    entries = []
    for event in events:
        action = event.event_type.removeprefix("promotion_")
        who, verb = _who_and_verb(event, action)
        parsed = parse_uuid(event.subject_id)
        promotion = promotions.get(parsed) if parsed else None
        failed = event.signal == "failed"
        detail = str((event.after_snapshot or {}).get("error") or "") if failed else event.free_text
        entries.append(
            FeedEntry(
                created_at=event.created_at,
                who=who,
                verb=verb,
                summary=summaries[promotion.pk] if promotion else f"promotion {event.subject_id[:8]} (deleted)",
                promotion_id=str(promotion.pk) if promotion else None,
                detail=detail[:200],
                failed=failed,
            )
        )
    return entries
