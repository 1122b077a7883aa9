"""Server-side SVG charts for the learning dashboard: the geometry of bars, axes and legends.

Pure functions of the figures (``promotions.dashboard``); the templates draw what they return
(``templates/promotions/_daily_chart.html``; the funnel in ``dashboard.html``). No JavaScript and no library: the
page works without a network, prints, and a screen reader reads each chart's summary and table.
Numbers are formatted here (one decimal), so the templates never localise a coordinate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date

from django.utils import timezone

from feedback.models import EventFamily, Signal
from promotions.dashboard import DailySeries, DashboardFigures, Funnel

# Tableau 10: distinguishable, and it stays legible for the common colour blindnesses.
PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"]
HELPED, HURT, NEUTRAL = "#2f9e44", "#e03131", "#adb5bd"

WIDTH, HEIGHT = 720, 230
SHORT = 170  # the helped-vs-hurt charts: two series, less to tell apart
LEFT, RIGHT, TOP, BOTTOM = 48, 20, 12, 44  # room for the y ticks, the x labels and the axis titles
MAX_BAR = 36  # a week's bars stay bars, not blocks
MAX_X_LABELS = 8


def _n(value: float) -> str:
    return f"{value:.1f}"


@dataclass(frozen=True)
class Bar:
    x: str
    y: str
    width: str
    height: str
    fill: str
    key: str
    day: str  # ISO date
    title: str  # the tooltip: "2026-03-02 · retrieval: 4"


@dataclass(frozen=True)
class Tick:
    y: str
    label: str


@dataclass(frozen=True)
class DayLabel:
    x: str
    label: str


@dataclass(frozen=True)
class LegendEntry:
    key: str
    label: str
    color: str
    total: int


@dataclass
class DailyChart:
    """A bar per day and series (stacked; a diverging chart stacks ``down`` series below zero)."""

    key: str
    title: str
    description: str
    definition: str  # what a count means, when the title alone does not say
    y_label: str
    x_label: str
    empty_text: str
    summary: str
    legend: list[LegendEntry]
    bars: list[Bar] = field(default_factory=list)
    ticks: list[Tick] = field(default_factory=list)
    day_labels: list[DayLabel] = field(default_factory=list)
    zero_y: str = ""
    table_keys: list[LegendEntry] = field(default_factory=list)
    table_rows: list[tuple[str, list[int]]] = field(default_factory=list)
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    right_x: int = WIDTH - RIGHT
    plot_top: int = TOP
    tick_x: int = LEFT - 6
    x_label_x: str = _n((LEFT + WIDTH - RIGHT) / 2)
    y_label_y: str = ""

    @property
    def plot_bottom(self) -> int:
        return self.height - BOTTOM

    @property
    def day_label_y(self) -> int:
        return self.height - BOTTOM + 15

    @property
    def x_label_y(self) -> int:
        return self.height - 6

    @property
    def empty(self) -> bool:
        """Nothing to show in any series (drawn or listed) on any day of the window."""
        return not self.table_rows

    @property
    def totals(self) -> dict[str, int]:
        """Each series' total over the window, and ``all`` of them."""
        return {e.key: e.total for e in self.table_keys} | {"all": sum(e.total for e in self.legend)}

    @property
    def undrawn(self) -> list[LegendEntry]:
        """The series counted in the table but not drawn."""
        return self.table_keys[len(self.legend) :]


def nice_step(top: int, *, ticks: int = 4) -> int:
    """A step of 1, 2 or 5 times a power of ten giving at most ``ticks`` intervals up to ``top``."""
    if top <= ticks:
        return 1
    raw = top / ticks
    magnitude = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if m * magnitude >= raw:
            return int(m * magnitude)
    return int(10 * magnitude)  # unreachable: m = 10 always satisfies the loop


def _day_labels(dates: Sequence[date], slot: float) -> list[DayLabel]:
    """About MAX_X_LABELS dates, the last day always among them."""
    every = max(1, math.ceil(len(dates) / MAX_X_LABELS))
    return [
        DayLabel(x=_n(LEFT + slot * (i + 0.5)), label=f"{d:%b} {d.day}")
        for i, d in enumerate(dates)
        if (len(dates) - 1 - i) % every == 0
    ]


def daily_chart(
    series: DailySeries,
    *,
    key: str,
    title: str,
    description: str,
    y_label: str,
    x_label: str,
    empty_text: str,
    labels: dict[str, str] | None = None,
    colors: dict[str, str] | None = None,
    up: Sequence[str] | None = None,
    down: Sequence[str] = (),
    table_only: Sequence[str] = (),
    definition: str = "",
    height: int = HEIGHT,
) -> DailyChart:
    """Stacked daily bars of ``up`` (every key by default) above the axis and ``down`` below it.
    ``table_only`` keys are listed in the table and summary but not drawn (e.g. pending usages)."""
    labels = labels or {}
    up = [k for k in (series.keys if up is None else up) if k not in down and k not in table_only]
    drawn = [*up, *down]
    colors = colors or {}
    color = {k: colors.get(k, PALETTE[i % len(PALETTE)]) for i, k in enumerate(series.keys)}
    legend = [LegendEntry(k, labels.get(k, k), color[k], series.total(k)) for k in drawn]
    listed = [*legend, *(LegendEntry(k, labels.get(k, k), NEUTRAL, series.total(k)) for k in table_only)]
    chart = DailyChart(
        key=key,
        title=title,
        description=description,
        definition=definition,
        y_label=y_label,
        x_label=x_label,
        empty_text=empty_text,
        summary="",
        legend=legend,
        table_keys=listed,
        height=height,
    )
    chart.table_rows = [
        (day.isoformat(), [series.values[e.key][i] for e in listed])
        for i, day in enumerate(series.dates)
        if any(series.values[e.key][i] for e in listed)
    ]
    chart.summary = _summary(series, listed, unit=y_label)
    if not chart.table_rows:
        return chart  # the empty state
    up_top = max(series.day_totals(up), default=0)
    down_top = max(series.day_totals(down), default=0) if down else 0
    plot_h = height - TOP - BOTTOM
    # One scale for both sides; the step from the larger side, each side rounded up to whole steps.
    step = nice_step(max(up_top, down_top), ticks=4 if not down else 2)
    up_max = math.ceil(up_top / step) * step
    down_max = math.ceil(down_top / step) * step if down else 0
    if down:  # a step on each side, so that "none hurt" reads as nothing below the line
        up_max, down_max = max(step, up_max), max(step, down_max)
    elif not up_max:  # only undrawn series have counts (injections not judged yet): a flat chart
        up_max = step
    scale = plot_h / (up_max + down_max)
    zero = TOP + up_max * scale
    chart.zero_y = _n(zero)
    chart.ticks = [Tick(_n(zero - v * scale), str(v)) for v in range(0, up_max + 1, step)]
    chart.ticks += [Tick(_n(zero + v * scale), f"−{v}") for v in range(step, down_max + 1, step)]
    chart.y_label_y = _n(TOP + plot_h / 2)
    slot = (WIDTH - LEFT - RIGHT) / len(series.dates)
    bar_w = min(MAX_BAR, max(1.0, slot * 0.78))
    for i, day in enumerate(series.dates):
        x = LEFT + slot * i + (slot - bar_w) / 2
        for keys, sign in ((up, -1), (down, 1)):
            offset = 0.0
            for k in keys:
                n = series.values[k][i]
                if not n:
                    continue
                h = n * scale
                y = zero - offset - h if sign < 0 else zero + offset
                offset += h
                chart.bars.append(
                    Bar(
                        x=_n(x),
                        y=_n(y),
                        width=_n(bar_w),
                        height=_n(h),
                        fill=color[k],
                        key=k,
                        day=day.isoformat(),
                        title=f"{day.isoformat()} · {labels.get(k, k)}: {n}",
                    )
                )
    chart.day_labels = _day_labels(series.dates, slot)
    return chart


def _summary(series: DailySeries, listed: Sequence[LegendEntry], *, unit: str) -> str:
    """The chart in one sentence: totals per series, and the busiest day."""
    first, last = series.dates[0], series.dates[-1]
    span = f"{len(series.dates)} days ({first.isoformat()} to {last.isoformat()})"
    totals = [e for e in listed if e.total]
    if not totals:
        return f"None in {span}."
    parts = ", ".join(f"{e.label} {e.total}" for e in sorted(totals, key=lambda e: -e.total))
    day_totals = series.day_totals([e.key for e in listed])
    busiest = max(range(len(day_totals)), key=lambda i: day_totals[i])
    peak = f"Busiest day {series.dates[busiest].isoformat()} ({day_totals[busiest]})"
    return f"{unit.capitalize()} over {span}: {parts}. {peak}."


@dataclass(frozen=True)
class FunnelStage:
    label: str
    count: int
    width: str  # percent of the widest stage, for CSS
    share: str  # of the proposed, for the text


@dataclass(frozen=True)
class StateShare:
    key: str
    count: int
    width: str
    color: str


@dataclass
class FunnelChart:
    stages: list[FunnelStage]
    states: list[StateShare]
    summary: str

    @property
    def empty(self) -> bool:
        return not self.stages or self.stages[0].count == 0


STATE_COLORS = {
    "candidate": "#4e79a7",
    "approved": "#76b7b2",
    "applied": "#59a14f",
    "paused": "#edc948",
    "rejected": "#e15759",
    "superseded": "#9c755f",
    "expired": "#bab0ac",
}


def funnel_chart(funnel: Funnel) -> FunnelChart:
    """Proposed → approved → applied as bars proportional to the proposed, and where each one is now."""
    proposed = funnel.proposed
    stages = []
    for label, n in (("Proposed", proposed), ("Approved", funnel.approved), ("Applied", funnel.applied)):
        share = f"{round(100 * n / proposed)} %" if proposed else "–"
        width = _n(100 * n / proposed) if proposed else "0.0"
        stages.append(FunnelStage(label, n, width, share))
    states = [
        StateShare(k, n, _n(100 * n / proposed), STATE_COLORS.get(k, PALETTE[-1]))
        for k, n in funnel.now.items()
        if n and proposed
    ]
    now = ", ".join(f"{s.count} {s.key}" for s in states)
    summary = (
        f"{proposed} proposed, {funnel.approved} approved, {funnel.applied} applied. Now: {now}."
        if proposed
        else "No promotions proposed."
    )
    return FunnelChart(stages=stages, states=states, summary=summary)


FAMILY_LABELS = {f: f.replace("_", " ") for f in EventFamily.values}
SIGNAL_LABELS = {s: s.replace("_", " ") for s in Signal.values}
ANALYZER_LABELS = {
    "analyzer_fallback": "fell back to the local analyzer",
    "analysis_failed": "analysis given up",
    "other": "other eval failures",
}


@dataclass
class DashboardCharts:
    events_by_family: DailyChart
    events_by_signal: DailyChart
    promotions_created: DailyChart
    funnel: FunnelChart
    usages: DailyChart
    taste: DailyChart
    weights: DailyChart
    analyzer: DailyChart


def dashboard_charts(figures: DashboardFigures) -> DashboardCharts:
    """The dashboard's charts, titled and labelled, from its figures."""
    days = figures.window.days
    x_label = f"day ({timezone.get_current_timezone_name()})"
    last = f"in the last {days} days"
    helped_hurt = {"helped": HELPED, "hurt": HURT}
    return DashboardCharts(
        events_by_family=daily_chart(
            figures.events_by_family,
            key="events-family",
            title="Feedback events per day, by family",
            description="Every row of the feedback event stream (ai_feedback_events), by its event_family.",
            y_label="events",
            x_label=x_label,
            empty_text=f"No events {last}.",
            labels=FAMILY_LABELS,
        ),
        events_by_signal=daily_chart(
            figures.events_by_signal,
            key="events-signal",
            title="Feedback events per day, by signal",
            description="The same events, by their signal.",
            y_label="events",
            x_label=x_label,
            empty_text=f"No events {last}.",
            labels=SIGNAL_LABELS,
        ),
        promotions_created=daily_chart(
            figures.promotions_created,
            key="promotions-created",
            title="Promotions proposed per day, by where they are now",
            description="Promotions by the day they were proposed (created_at), coloured by their status today.",
            y_label="promotions",
            x_label=x_label,
            empty_text=f"No promotions proposed {last}.",
            colors=STATE_COLORS,
        ),
        funnel=funnel_chart(figures.funnel),
        usages=daily_chart(
            figures.usages,
            key="usages",
            title="Injected learnings: helped vs hurt",
            description=(
                "Learnings injected into a recorded context, by injection day, "
                "as the feedback on the response they went into judged them."
            ),
            y_label="injections",
            x_label=x_label,
            empty_text=f"No learnings injected {last}.",
            definition=(
                "One count per learning (preference, workflow, taste pattern, agent learning, memory, task "
                "example, packet evidence) injected into a recorded context (agent_learning_usages). Helped: the "
                "response it went into got a thumbs up (POST /responses/feedback with that response_id); hurt: a "
                "thumbs down; without a rating it is not judged yet. Helped rises above the line, hurt hangs below "
                "it, on the day of the injection."
            ),
            height=SHORT,
            labels={"pending": "not judged yet"},
            colors=helped_hurt,
            up=["helped"],
            down=["hurt"],
            table_only=["pending"],
        ),
        taste=daily_chart(
            figures.taste,
            key="taste",
            title="Taste patterns: helped vs hurt",
            description="Command runs with taste patterns applied, by run day, as what the user did next judged them.",
            y_label="runs",
            x_label=x_label,
            empty_text=f"No command runs with taste patterns applied {last}.",
            definition=(
                "One count per command run that had taste patterns applied (command_runs). Helped: the user "
                "accepted the output, or the run succeeded and was not corrected before the next run of the command "
                "(both confirm the patterns). Hurt: the user rejected the output or re-ran the command (both "
                "override them). Edits are listed, not counted: whether an edit goes against a pattern depends on "
                "what it changed."
            ),
            height=SHORT,
            labels={"edited": "edited (not counted)"},
            colors=helped_hurt,
            up=["helped"],
            down=["hurt"],
            table_only=["edited"],
        ),
        weights=daily_chart(
            figures.weights,
            key="weights",
            title="Retrieval weights: helped vs hurt",
            description="Search results shown with a learned weight, by search day, as their feedback judged them.",
            y_label="results",
            x_label=x_label,
            empty_text=f"No search results shown with a learned weight {last}.",
            definition=(
                "One count per search result shown with a learned weight (a net multiplier other than 1, "
                "ai_retrieval_feedback.weight). A result is good when it was used in the answer, cited, referenced "
                "or marked helpful, and bad when marked unhelpful, stale, wrong project or unsupported (a down-voted "
                "answer marks the results it used unhelpful, an up-voted one helpful; bad wins over good). Helped: "
                "a boosted result that was good, or a penalised one that was bad. Hurt: a boosted result that was "
                "bad, or a penalised one that was good. Results nobody used or marked count neither way."
            ),
            height=SHORT,
            labels={"shown": "shown with a weight"},
            colors=helped_hurt,
            up=["helped"],
            down=["hurt"],
            table_only=["shown"],
        ),
        analyzer=daily_chart(
            figures.analyzer,
            key="analyzer",
            title="Analyzer fallbacks and failures per day",
            description=(
                "eval_failure events: the model server failing over to the local analyzer, analyses given up, "
                "and other eval failures."
            ),
            y_label="events",
            x_label=x_label,
            empty_text=f"No analyzer fallbacks or failures {last}.",
            labels=ANALYZER_LABELS,
            colors={"analyzer_fallback": "#f28e2b", "analysis_failed": "#e15759", "other": "#b07aa1"},
        ),
    )
