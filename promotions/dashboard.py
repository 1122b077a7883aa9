"""The learning dashboard's figures (staff admins only): daily SQL aggregates over a window of days.

Each figure is one ``GROUP BY`` over a day bucket (``TruncDate`` in the configured ``TIME_ZONE``), so
the page runs the same six queries whatever the amount of data; days with nothing are filled in
here. What "helped" and "hurt" count is defined once, in the ``Q`` objects below, and said in words
on the page (each chart's definition in ``promotions/charts.py``) and in the README.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta

from django.db.models import Count, Q
from django.db.models.functions import TruncDate
from django.utils import timezone

from accounts.actors import Actor
from config.exceptions import AccessDenied
from feedback.models import EventFamily, FeedbackEvent, Signal
from learning.models import CommandRun, LearningUsage
from promotions.models import LearningPromotion, PromotionStatus
from retrieval.models import RetrievalFeedback

WINDOWS = (7, 30, 90)
DEFAULT_WINDOW = 30
_WINDOW_VALUES = {str(days): days for days in WINDOWS}  # exactly these: not "07", not " 7"


@dataclass(frozen=True)
class Window:
    """The last ``days`` days up to today, in the current time zone; ``since`` is the first one's midnight."""

    days: int
    first: date
    last: date
    since: datetime

    @property
    def dates(self) -> list[date]:
        return [self.first + timedelta(days=i) for i in range(self.days)]


def dashboard_window(*, value: str | None, now: datetime | None = None) -> tuple[Window, str]:
    """The window ``?window=`` asks for (7, 30 or 90 days), or the default one with a notice saying why."""
    notice = ""
    days = DEFAULT_WINDOW
    if value in _WINDOW_VALUES:
        days = _WINDOW_VALUES[value]
    elif value not in (None, ""):
        shown = value if len(value) <= 20 else value[:20] + "…"
        notice = (
            f"window must be {', '.join(map(str, WINDOWS[:-1]))} or {WINDOWS[-1]} days, not {shown!r}: "
            f"showing the last {DEFAULT_WINDOW} days."
        )
    last = timezone.localdate(now)
    first = last - timedelta(days=days - 1)
    since = timezone.make_aware(datetime.combine(first, time.min))
    return Window(days=days, first=first, last=last, since=since), notice


@dataclass
class DailySeries:
    """Counts per day for each of ``keys`` (in display order), one value per day of the window."""

    dates: list[date]
    keys: list[str]
    values: dict[str, list[int]]

    @classmethod
    def empty(cls, window: Window, keys: Sequence[str]) -> DailySeries:
        return cls(dates=window.dates, keys=list(keys), values={k: [0] * window.days for k in keys})

    def add(self, day: date, key: str, n: int) -> None:
        """Count ``n`` for ``key`` on ``day``; a key not declared yet is appended after the known ones."""
        if key not in self.values:
            self.keys.append(key)
            self.values[key] = [0] * len(self.dates)
        index = (day - self.dates[0]).days
        if 0 <= index < len(self.dates):  # a row stamped in the future is not a day of the window
            self.values[key][index] += n

    def total(self, key: str) -> int:
        return sum(self.values[key])

    @property
    def grand_total(self) -> int:
        return sum(sum(v) for v in self.values.values())

    def day_totals(self, keys: Iterable[str] | None = None) -> list[int]:
        chosen = list(self.keys if keys is None else keys)
        return [sum(self.values[k][i] for k in chosen) for i in range(len(self.dates))]


# --- what the figures count ----------------------------------------------------------------------

# Promotions: how far one got. Approval sets reviewed_at (a person's or an automatic path's), and so
# does rejection; every later state keeps it. Applying sets applied_at, which pausing and superseding keep.
REACHED_APPROVED = Q(reviewed_at__isnull=False) & ~Q(status=PromotionStatus.REJECTED)
REACHED_APPLIED = Q(applied_at__isnull=False)
# Display order: the way forward first, then the ways out.
PROMOTION_STATES = ["candidate", "approved", "applied", "paused", "rejected", "superseded", "expired"]

# Injected learnings (agent_learning_usages): a thumbs up or down on the response they were injected
# into (POST /responses/feedback with its response_id) marks each of them helped or hurt.
USAGE_OUTCOMES = ["helped", "hurt", "pending"]

# Taste patterns, per command run they were applied to: accepted, or a success left uncorrected until
# the next run of the command (both confirm the patterns), helped; rejected or re-run, hurt (both
# override them). An edit is not counted: whether it goes against a pattern depends on what it changed.
TASTE_HELPED = Q(decision__decision="accepted") | Q(decision__isnull=True, judged_at__isnull=False, succeeded=True)
TASTE_HURT = Q(decision__decision__in=["rejected", "rerun"])
TASTE_EDITED = Q(decision__decision="edited")

# Retrieval weights, per search result shown with a net multiplier other than 1. A result is *good*
# when it was used in the answer, cited, referenced or marked helpful, unless it was also marked
# unhelpful, stale, wrong project or unsupported (*bad*; a down-voted answer marks the results it used
# unhelpful, an up-voted one helpful). A boost helped a good result and hurt a bad one; a penalty
# helped by demoting a bad result and hurt by demoting a good one. Results nobody marked or used count
# neither way.
_BAD = Q(outcome__in=["unhelpful", "stale", "wrong_project", "unsupported"])
_GOOD = ~_BAD & (Q(used_in_answer=True) | Q(cited=True) | Q(user_referenced=True) | Q(outcome="helpful"))
WEIGHT_HELPED = (Q(weight__gt=1) & _GOOD) | (Q(weight__lt=1) & _BAD)
WEIGHT_HURT = (Q(weight__gt=1) & _BAD) | (Q(weight__lt=1) & _GOOD)

# Analyzer trouble (eval_failure events): the OpenAI-compatible analyzer failing over to the local one
# (learning.services.messages), analyses given up after ANALYSIS_MAX_ATTEMPTS, and every other
# eval_failure event (deterministic eval checks reported by clients).
ANALYZER_KINDS = ["analyzer_fallback", "analysis_failed", "other"]


@dataclass
class Funnel:
    """Promotions proposed in the window: how many were approved and applied, and where each is now."""

    proposed: int = 0
    approved: int = 0
    applied: int = 0
    now: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PROMOTION_STATES, 0))


@dataclass
class DashboardFigures:
    window: Window
    events_by_family: DailySeries
    events_by_signal: DailySeries
    promotions_created: DailySeries
    funnel: Funnel
    usages: DailySeries  # helped, hurt, pending
    taste: DailySeries  # helped, hurt, edited
    weights: DailySeries  # helped, hurt, shown
    analyzer: DailySeries  # ANALYZER_KINDS


def _day() -> TruncDate:
    # TruncDate converts to the current time zone (settings.TIME_ZONE) before taking the date.
    return TruncDate("created_at")


def dashboard_figures(*, actor: Actor, window: Window) -> DashboardFigures:
    """Every figure of the dashboard over ``window``: six aggregate queries, whatever the data size."""
    if not actor.is_admin:
        raise AccessDenied("Only staff admins see the learning dashboard.")
    families, signals = _events(window)
    created, funnel = _promotions(window)
    return DashboardFigures(
        window=window,
        events_by_family=families,
        events_by_signal=signals,
        promotions_created=created,
        funnel=funnel,
        usages=_usages(window),
        taste=_taste(window),
        weights=_weights(window),
        analyzer=_analyzer(window),
    )


def _events(window: Window) -> tuple[DailySeries, DailySeries]:
    """Feedback events per day by family and by signal, from one GROUP BY day, family, signal."""
    families = DailySeries.empty(window, EventFamily.values)
    signals = DailySeries.empty(window, Signal.values)
    rows = (
        FeedbackEvent.objects.filter(created_at__gte=window.since)
        .annotate(day=_day())
        .values("day", "event_family", "signal")
        .annotate(n=Count("id"))
        .order_by()
    )
    for row in rows:
        families.add(row["day"], row["event_family"], row["n"])
        signals.add(row["day"], row["signal"], row["n"])
    return families, signals


def _analyzer(window: Window) -> DailySeries:
    """eval_failure events per day: analyzer fallbacks, analyses given up, the others."""
    series = DailySeries.empty(window, ANALYZER_KINDS)
    rows = (
        FeedbackEvent.objects.filter(created_at__gte=window.since, event_family=EventFamily.EVAL_FAILURE)
        .annotate(day=_day())
        .values("day", "event_type")
        .annotate(n=Count("id"))
        .order_by()
    )
    for row in rows:
        series.add(row["day"], row["event_type"] if row["event_type"] in ANALYZER_KINDS else "other", row["n"])
    return series


def _promotions(window: Window) -> tuple[DailySeries, Funnel]:
    """Promotions proposed per day by their status now, and how many of them were approved and applied."""
    created = DailySeries.empty(window, PROMOTION_STATES)
    funnel = Funnel()
    rows = (
        LearningPromotion.objects.filter(created_at__gte=window.since)
        .annotate(day=_day())
        .values("day", "status")
        .annotate(
            n=Count("id"),
            approved=Count("id", filter=REACHED_APPROVED),
            applied=Count("id", filter=REACHED_APPLIED),
        )
        .order_by()
    )
    for row in rows:
        if not window.first <= row["day"] <= window.last:
            continue
        created.add(row["day"], row["status"], row["n"])
        funnel.proposed += row["n"]
        funnel.approved += row["approved"]
        funnel.applied += row["applied"]
        funnel.now[row["status"]] = funnel.now.get(row["status"], 0) + row["n"]
    return created, funnel


def _usages(window: Window) -> DailySeries:
    """Injected learnings per injection day: helped, hurt, not judged yet."""
    series = DailySeries.empty(window, USAGE_OUTCOMES)
    rows = (
        LearningUsage.objects.filter(created_at__gte=window.since)
        .annotate(day=_day())
        .values("day", "outcome")
        .annotate(n=Count("id"))
        .order_by()
    )
    for row in rows:
        series.add(row["day"], row["outcome"], row["n"])
    return series


def _taste(window: Window) -> DailySeries:
    """Command runs with taste patterns applied, per run day: helped, hurt, edited (not counted)."""
    series = DailySeries.empty(window, ["helped", "hurt", "edited"])
    rows = (
        # A run with at least one pattern applied (applied_patterns is a JSON list of their ids).
        CommandRun.objects.filter(created_at__gte=window.since, applied_patterns__0__isnull=False)
        .annotate(day=_day())
        .values("day")
        .annotate(
            helped=Count("id", filter=TASTE_HELPED),
            hurt=Count("id", filter=TASTE_HURT),
            edited=Count("id", filter=TASTE_EDITED),
        )
        .order_by()
    )
    for row in rows:
        series.add(row["day"], "helped", row["helped"])
        series.add(row["day"], "hurt", row["hurt"])
        series.add(row["day"], "edited", row["edited"])
    return series


def _weights(window: Window) -> DailySeries:
    """Search results shown with a learned weight, per search day: helped, hurt, and all shown."""
    series = DailySeries.empty(window, ["helped", "hurt", "shown"])
    rows = (
        RetrievalFeedback.objects.filter(created_at__gte=window.since)
        .exclude(weight=1.0)
        .annotate(day=_day())
        .values("day")
        .annotate(
            helped=Count("id", filter=WEIGHT_HELPED),
            hurt=Count("id", filter=WEIGHT_HURT),
            shown=Count("id"),
        )
        .order_by()
    )
    for row in rows:
        series.add(row["day"], "helped", row["helped"])
        series.add(row["day"], "hurt", row["hurt"])
        series.add(row["day"], "shown", row["shown"])
    return series
