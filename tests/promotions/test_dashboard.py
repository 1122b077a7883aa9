"""The learning dashboard: staff only, daily figures from SQL aggregates (a fixed number of queries
whatever the data size, days in the configured time zone), what "helped" and "hurt" count, the SVG
charts, and bad input answered with the default window."""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from config.exceptions import AccessDenied
from feedback.models import EventFamily, FeedbackEvent
from learning.conf import learning_settings
from learning.models import ChatMessage, LearningUsage
from learning.services import messages
from promotions import dashboard
from promotions.charts import daily_chart, dashboard_charts, nice_step
from promotions.dashboard import DailySeries, dashboard_figures, dashboard_window
from promotions.models import LearningPromotion
from promotions.services import promotion_propose, promotion_transition
from retrieval.models import RetrievalFeedback
from tests.conftest import bearer_client
from tests.factories import (
    ChatMessageFactory,
    CommandDecisionFactory,
    CommandRunFactory,
    FeedbackEventFactory,
    LearningPromotionFactory,
    LearningUsageFactory,
    PreferenceFactory,
    RetrievalFeedbackFactory,
    TaskFeedbackFactory,
)

URL = reverse("console-dashboard")
UTC = ZoneInfo("UTC")
# Noon on a fixed day: far from midnight in UTC, so "days ago" never straddles a date line by accident.
NOW = datetime(2026, 3, 20, 12, 0, tzinfo=UTC)


def at(days_ago: int, hour: int = 12, minute: int = 0) -> datetime:
    """A moment ``days_ago`` days before NOW's date, at hour:minute UTC."""
    day = NOW.date() - timedelta(days=days_ago)
    return datetime(day.year, day.month, day.day, hour, minute, tzinfo=UTC)


def window(days: int = 30, now: datetime = NOW) -> dashboard.Window:
    return dashboard_window(value=str(days), now=now)[0]


def figures(world, days: int = 30, now: datetime = NOW) -> dashboard.DashboardFigures:
    return dashboard_figures(actor=world.actor("admin"), window=window(days, now))


def on(series: DailySeries, key: str, day: date) -> int:
    return series.values[key][series.dates.index(day)]


def backdate(model, pk, when: datetime) -> None:
    """Rows whose created_at is auto_now_add get their day afterwards."""
    model.objects.filter(pk=pk).update(created_at=when)


# --- access ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("who", ["anonymous", "owner", "member", "service key", "admin's key"])
def test_the_dashboard_is_for_staff_sessions_only(world, who):
    """As the other console pages: anonymous and non-staff users go to the admin login; an API key
    (even a staff admin's) is never a console session."""
    if who == "service key":
        client = bearer_client(world.service_raw)
    elif who == "admin's key":
        client = bearer_client(world.keys["admin"])
    else:
        client = Client()
        if who != "anonymous":
            client.force_login(getattr(world, who))
    response = client.get(URL)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))


def test_a_staff_admin_sees_it_and_the_console_links_to_it(world):
    client = world.session_client("admin")
    assert client.get(URL).status_code == 200
    console = client.get(reverse("console-promotions")).content.decode()
    assert f'href="{URL}" data-role="nav-dashboard"' in console


def test_the_figures_are_for_admins_only(world):
    for role in ("owner", "service"):
        with pytest.raises(AccessDenied):
            dashboard_figures(actor=world.actor(role), window=window())


# --- bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["abc", "1000", "0", "-7", "30.5", "7 ", "<b>90</b>"])
def test_a_bad_window_shows_the_default_with_a_message(world, value):
    response = world.session_client("admin").get(URL, {"window": value})
    assert response.status_code == 200
    assert response.context["window"].days == 30
    notice = response.context["notice"]
    assert notice.startswith("window must be 7, 30 or 90 days")
    assert "showing the last 30 days" in notice
    page = response.content.decode()
    assert 'data-role="notice"' in page
    assert "<b>90</b>" not in page  # the value is echoed escaped
    assert re.search(r'data-window="30" aria-current="page"', page)


@pytest.mark.parametrize("days", [7, 30, 90])
def test_each_window_has_a_day_per_bucket(world, days):
    response = world.session_client("admin").get(URL, {"window": str(days)})
    assert response.context["notice"] == ""
    assert response.context["window"].days == days
    assert len(response.context["window"].dates) == days
    assert f'data-window="{days}" aria-current="page"' in response.content.decode()


def test_no_window_is_the_default_without_a_message():
    win, notice = dashboard_window(value=None, now=NOW)
    assert (win.days, notice, win.first, win.last) == (30, "", date(2026, 2, 19), date(2026, 3, 20))
    assert win.since == datetime(2026, 2, 19, tzinfo=UTC)


# --- a fixed number of queries ----------------------------------------------------------------------


def _seed_day(world, when: datetime, *, events: int) -> None:
    """A day's worth of every kind of row the dashboard reads."""
    for i in range(events):
        FeedbackEventFactory(
            user=world.owner,
            created_at=when,
            event_family=EventFamily.values[i % len(EventFamily.values)],
            signal="failed" if i % 2 else "positive",
            event_type="analyzer_fallback" if i % 3 == 0 else "something",
        )
    promotion = LearningPromotionFactory(status="applied", reviewed_at=when, applied_at=when)
    backdate(LearningPromotion, promotion.pk, when)
    usage = LearningUsageFactory(user=world.owner, outcome="helped")
    backdate(LearningUsage, usage.pk, when)
    CommandDecisionFactory(run=CommandRunFactory(user=world.owner, applied_patterns=[1], created_at=when))
    result = RetrievalFeedbackFactory(weight=1.3, used_in_answer=True)
    backdate(RetrievalFeedback, result.pk, when)


def test_the_page_runs_the_same_queries_for_one_day_as_for_ninety_days_of_many_rows(world):
    client = world.session_client("admin")
    _seed_day(world, timezone.now(), events=3)
    with CaptureQueriesContext(connection) as one_day:
        first = client.get(URL, {"window": "90"})
    assert first.status_code == 200
    for days_ago in range(1, 90):
        _seed_day(world, timezone.now() - timedelta(days=days_ago), events=12)
    with CaptureQueriesContext(connection) as ninety_days:
        response = client.get(URL, {"window": "90"})
    assert len(ninety_days) == len(one_day)
    # Six aggregates, plus the session and its user.
    aggregates = [q["sql"] for q in ninety_days.captured_queries if "GROUP BY" in q["sql"]]
    assert len(aggregates) == 6
    charts = response.context["charts"]
    # The seeded events, and each day's command run and decision write one event each.
    assert charts.events_by_family.totals["all"] == 3 + 89 * 12 + 90 * 2
    days_with_bars = {bar.day for bar in charts.events_by_family.bars}
    assert len(days_with_bars) == 90


# --- what the figures count -----------------------------------------------------------------------


def test_events_are_counted_per_day_family_and_signal(world):
    FeedbackEventFactory(created_at=at(0), event_family="retrieval", signal="positive")
    FeedbackEventFactory(created_at=at(0), event_family="retrieval", signal="negative")
    FeedbackEventFactory(created_at=at(2), event_family="tool_action", signal="failed")
    FeedbackEventFactory(created_at=at(30), event_family="tool_action", signal="failed")  # before the window
    f = figures(world)
    today, two_ago = NOW.date(), NOW.date() - timedelta(days=2)
    assert on(f.events_by_family, "retrieval", today) == 2
    assert on(f.events_by_family, "tool_action", two_ago) == 1
    assert f.events_by_family.grand_total == 3
    assert (on(f.events_by_signal, "positive", today), on(f.events_by_signal, "negative", today)) == (1, 1)
    assert on(f.events_by_signal, "failed", two_ago) == 1
    assert f.events_by_family.keys == EventFamily.values  # every family has a series, zero or not


def test_days_are_those_of_the_configured_time_zone(world, settings):
    """23:30 and 00:30 UTC are two days in UTC; in Auckland (UTC+13 in March) they are one."""
    FeedbackEventFactory(created_at=at(1, 23, 30), event_family="retrieval")
    FeedbackEventFactory(created_at=at(0, 0, 30), event_family="retrieval")
    f = figures(world)
    assert on(f.events_by_family, "retrieval", NOW.date() - timedelta(days=1)) == 1
    assert on(f.events_by_family, "retrieval", NOW.date()) == 1

    settings.TIME_ZONE = "Pacific/Auckland"
    with timezone.override(ZoneInfo("Pacific/Auckland")):
        f = figures(world)
    # NOW (12:00 UTC) is already the next day in Auckland, and both events fall on March 20 there.
    assert f.window.last == date(2026, 3, 21)
    assert on(f.events_by_family, "retrieval", date(2026, 3, 20)) == 2
    assert on(f.events_by_family, "retrieval", date(2026, 3, 21)) == 0


def test_the_window_starts_at_local_midnight(world):
    FeedbackEventFactory(created_at=at(6, 0, 0), event_family="retrieval")  # the first day of 7
    FeedbackEventFactory(created_at=at(7, 23, 59), event_family="retrieval")  # the day before it
    f = figures(world, days=7)
    assert f.events_by_family.grand_total == 1
    assert on(f.events_by_family, "retrieval", f.window.first) == 1


def test_the_funnel_counts_how_far_each_promotion_got(world):
    rows = [
        ("candidate", None, None),
        ("approved", at(1), None),
        ("applied", at(1), at(1)),
        ("paused", at(1), at(1)),
        ("superseded", at(1), at(1)),  # superseded after being applied
        ("superseded", at(1), None),  # superseded after approval
        ("superseded", None, None),  # superseded as a candidate
        ("rejected", at(1), None),
        ("expired", None, None),
    ]
    for status, reviewed_at, applied_at in rows:
        p = LearningPromotionFactory(status=status, reviewed_at=reviewed_at, applied_at=applied_at)
        backdate(LearningPromotion, p.pk, at(2))
    old = LearningPromotionFactory(status="applied", reviewed_at=at(60), applied_at=at(60))
    backdate(LearningPromotion, old.pk, at(60))
    f = figures(world)
    assert (f.funnel.proposed, f.funnel.approved, f.funnel.applied) == (9, 5, 3)
    assert f.funnel.now == {
        "candidate": 1,
        "approved": 1,
        "applied": 1,
        "paused": 1,
        "rejected": 1,
        "superseded": 3,
        "expired": 1,
    }
    two_ago = NOW.date() - timedelta(days=2)
    assert on(f.promotions_created, "superseded", two_ago) == 3
    assert f.promotions_created.grand_total == 9


def test_injected_learnings_count_as_their_responses_were_rated(world):
    for outcome, days_ago in (("helped", 0), ("helped", 0), ("hurt", 0), ("pending", 3), ("hurt", 40)):
        usage = LearningUsageFactory(user=world.owner, outcome=outcome)
        backdate(LearningUsage, usage.pk, at(days_ago))
    f = figures(world)
    assert (on(f.usages, "helped", NOW.date()), on(f.usages, "hurt", NOW.date())) == (2, 1)
    assert on(f.usages, "pending", NOW.date() - timedelta(days=3)) == 1
    assert f.usages.total("hurt") == 1


def test_taste_patterns_count_per_run_by_what_the_user_did_next(world):
    def run(decision=None, patterns=(7,), **fields):
        command_run = CommandRunFactory(user=world.owner, applied_patterns=list(patterns), created_at=at(1), **fields)
        if decision:
            CommandDecisionFactory(run=command_run, decision=decision)

    run("accepted")
    run(succeeded=True, judged_at=at(1))  # an uncorrected success: confirmed when the next run came
    run(succeeded=True)  # a success not judged yet: nothing to say
    run("rejected")
    run("rerun")
    run("edited")
    run("accepted", patterns=())  # no pattern applied: not a taste pattern's run
    f = figures(world)
    day = NOW.date() - timedelta(days=1)
    assert (on(f.taste, "helped", day), on(f.taste, "hurt", day), on(f.taste, "edited", day)) == (2, 2, 1)


def test_weighted_results_count_by_their_feedback(world):
    cases = [
        (1.3, {"used_in_answer": True}, "helped"),  # a boost on a used result
        (1.3, {"cited": True}, "helped"),
        (1.3, {"outcome": "helpful"}, "helped"),
        (1.3, {"used_in_answer": True, "outcome": "unhelpful"}, "hurt"),  # used in a down-voted answer
        (1.3, {"outcome": "stale"}, "hurt"),
        (0.7, {"outcome": "wrong_project"}, "helped"),  # a penalty on a bad result
        (0.7, {"user_referenced": True}, "hurt"),  # a penalty on a result the user still went to
        (1.3, {}, None),  # shown, nobody said anything
        (1.0, {"used_in_answer": True}, "unweighted"),
    ]
    for weight, fields, _ in cases:
        result = RetrievalFeedbackFactory(weight=weight, **fields)
        backdate(RetrievalFeedback, result.pk, at(4))
    f = figures(world)
    day = NOW.date() - timedelta(days=4)
    assert on(f.weights, "helped", day) == sum(1 for *_, c in cases if c == "helped")
    assert on(f.weights, "hurt", day) == sum(1 for *_, c in cases if c == "hurt")
    assert on(f.weights, "shown", day) == len(cases) - 1


def test_analyzer_fallbacks_and_failures_by_kind(world):
    FeedbackEventFactory(created_at=at(0), event_family="eval_failure", event_type="analyzer_fallback", signal="failed")
    FeedbackEventFactory(created_at=at(0), event_family="eval_failure", event_type="analysis_failed", signal="failed")
    FeedbackEventFactory(created_at=at(0), event_family="eval_failure", event_type="citation_check", signal="failed")
    FeedbackEventFactory(created_at=at(0), event_family="tool_action", event_type="analyzer_fallback", signal="failed")
    f = figures(world)
    assert {k: on(f.analyzer, k, NOW.date()) for k in dashboard.ANALYZER_KINDS} == {
        "analyzer_fallback": 1,
        "analysis_failed": 1,
        "other": 1,
    }


def test_the_figures_read_what_the_services_and_apis_write(world):
    """Written by the code paths themselves: learnings injected through POST /context and rated
    through POST /responses/feedback, an analysis given up after its attempts, promotions reviewed
    through the ledger's services. A rename of what they write fails this test."""
    PreferenceFactory(user=world.owner, description="Answer in Spanish.")
    owner = world.client("owner")
    for response_id, rating in (("r-good", "up"), ("r-bad", "down"), ("r-silent", None)):
        assert owner.post("/api/v1/context", {"response_id": response_id}, format="json").status_code == 200
        if rating:
            body = {"response_id": response_id, "rating": rating}
            assert owner.post("/api/v1/responses/feedback", body, format="json").status_code == 201

    message = ChatMessageFactory(user=world.owner)  # stored, waiting for its analysis
    for _ in range(learning_settings.ANALYSIS_MAX_ATTEMPTS):
        messages.messages_release(message_ids=[str(message.pk)], error=RuntimeError("model server down"))
    assert ChatMessage.objects.get(pk=message.pk).analyzed_at is not None

    admin = world.actor("admin")
    ids = []
    for _ in range(3):
        task = TaskFeedbackFactory(user=world.owner, rating="good")
        promotion, _ = promotion_propose(
            actor=admin, promotion_type="task_example", subject_type="task_feedback", subject_id=str(task.pk)
        )
        ids.append(str(promotion.pk))
    for action in ("approve", "apply"):
        promotion_transition(actor=admin, promotion_id=ids[0], action=action)
    promotion_transition(actor=admin, promotion_id=ids[1], action="reject")

    f = dashboard_figures(actor=admin, window=dashboard_window(value="7")[0])
    assert (f.usages.total("helped"), f.usages.total("hurt"), f.usages.total("pending")) == (1, 1, 1)
    assert f.analyzer.total("analysis_failed") == 1
    assert (f.funnel.proposed, f.funnel.approved, f.funnel.applied) == (3, 1, 1)
    assert (f.funnel.now["applied"], f.funnel.now["rejected"], f.funnel.now["candidate"]) == (1, 1, 1)
    # The ledger's own audit events are in the stream too: workflow_outcome, one per lifecycle action.
    assert (
        f.events_by_family.total("workflow_outcome") == FeedbackEvent.objects.filter(subject_type="promotion").count()
    )
    assert f.events_by_family.total("workflow_outcome") == 3 + 2 + 1


# --- the charts -----------------------------------------------------------------------------------


def test_nice_steps():
    assert [nice_step(n) for n in (1, 4, 5, 9, 10, 37, 100, 999, 12_345)] == [1, 1, 2, 5, 5, 10, 50, 500, 5000]


def test_a_chart_draws_one_stacked_bar_per_day_and_series_within_the_plot(world):
    FeedbackEventFactory(created_at=at(0), event_family="retrieval")
    FeedbackEventFactory(created_at=at(0), event_family="retrieval")
    FeedbackEventFactory(created_at=at(0), event_family="tool_action")
    FeedbackEventFactory(created_at=at(5), event_family="retrieval")
    charts = dashboard_charts(figures(world, days=7))
    chart = charts.events_by_family
    bars = {(b.day, b.key): b for b in chart.bars}
    today, five_ago = NOW.date().isoformat(), (NOW.date() - timedelta(days=5)).isoformat()
    assert set(bars) == {(today, "retrieval"), (today, "tool_action"), (five_ago, "retrieval")}
    top, bottom = chart.plot_top, chart.plot_bottom
    for bar in chart.bars:
        assert top - 0.1 <= float(bar.y)
        assert float(bar.y) + float(bar.height) <= bottom + 0.1
    # Stacked: today's two series share an x and touch; twice the events, twice the height.
    r, t = bars[(today, "retrieval")], bars[(today, "tool_action")]
    assert r.x == t.x
    assert abs(float(t.y) + float(t.height) - float(r.y)) < 0.2
    assert abs(float(r.height) - 2 * float(bars[(five_ago, "retrieval")].height)) < 0.2
    assert [e.key for e in chart.legend] == EventFamily.values
    assert chart.summary.startswith("Events over 7 days (2026-03-14 to 2026-03-20): retrieval 3, tool action 1.")
    assert chart.table_rows == [
        ("2026-03-15", [1 if k == "retrieval" else 0 for k in EventFamily.values]),
        ("2026-03-20", [2 if k == "retrieval" else 1 if k == "tool_action" else 0 for k in EventFamily.values]),
    ]
    assert chart.day_labels[-1].label == "Mar 20"


def test_a_diverging_chart_puts_hurt_below_the_axis(world):
    for outcome in ("helped", "helped", "hurt", "pending"):
        usage = LearningUsageFactory(user=world.owner, outcome=outcome)
        backdate(LearningUsage, usage.pk, at(0))
    chart = dashboard_charts(figures(world, days=7)).usages
    zero = float(chart.zero_y)
    helped = next(b for b in chart.bars if b.key == "helped")
    hurt = next(b for b in chart.bars if b.key == "hurt")
    assert abs(float(helped.y) + float(helped.height) - zero) < 0.1  # rises from the axis
    assert abs(float(hurt.y) - zero) < 0.1  # hangs from it
    assert abs(float(helped.height) - 2 * float(hurt.height)) < 0.2
    assert {b.key for b in chart.bars} == {"helped", "hurt"}  # pending is in the table, not drawn
    assert [e.key for e in chart.table_keys] == ["helped", "hurt", "pending"]
    assert any(t.label.startswith("−") for t in chart.ticks)


def test_injections_not_judged_yet_are_not_an_empty_chart(world):
    usage = LearningUsageFactory(user=world.owner, outcome="pending")
    backdate(LearningUsage, usage.pk, at(0))
    chart = dashboard_charts(figures(world, days=7)).usages
    assert not chart.empty
    assert chart.bars == []
    assert chart.totals == {"helped": 0, "hurt": 0, "pending": 1, "all": 0}
    assert [t.label for t in chart.ticks] == ["0", "1", "−1"]
    assert chart.summary.startswith("Injections over 7 days (2026-03-14 to 2026-03-20): not judged yet 1.")


def test_an_empty_window_says_so_for_every_chart(world):
    page = world.session_client("admin").get(URL, {"window": "7"}).content.decode()
    for text in (
        "No events in the last 7 days.",
        "No promotions proposed in the last 7 days.",
        "No learnings injected in the last 7 days.",
        "No command runs with taste patterns applied in the last 7 days.",
        "No search results shown with a learned weight in the last 7 days.",
        "No analyzer fallbacks or failures in the last 7 days.",
    ):
        assert text in page
    assert 'data-role="bar"' not in page


def test_the_page_draws_the_data_with_its_text_alternative(world):
    for days_ago in (0, 1, 3):
        FeedbackEventFactory(
            event_family="retrieval", signal="positive", created_at=timezone.now() - timedelta(days=days_ago)
        )
    page = world.session_client("admin").get(URL, {"window": "7"}).content.decode()
    family = page.split('data-chart="events-family"')[1].split("</figure>")[0]
    assert family.count('data-role="bar"') == 3
    assert "<title>" in family
    assert 'role="img"' in family
    assert "events per day" in family
    assert "<details" in family
    assert "The figures behind this chart" in family
    assert "Events over 7 days" in family
    assert "No events in the last 7 days." not in page
    # What helped and hurt count is stated on the page.
    for words in ("got a thumbs up (POST /responses/feedback", "re-ran the command", "a penalised one that was bad"):
        assert words in page


def test_a_single_series_chart_scales_to_its_peak():
    series = DailySeries(dates=[date(2026, 1, 1), date(2026, 1, 2)], keys=["a"], values={"a": [3, 7]})
    chart = daily_chart(series, key="x", title="t", description="d", y_label="events", x_label="day", empty_text="e")
    assert [t.label for t in chart.ticks] == ["0", "2", "4", "6", "8"]
    tallest = max(chart.bars, key=lambda b: float(b.height))
    assert tallest.day == "2026-01-02"
    assert tallest.title == "2026-01-02 · a: 7"
