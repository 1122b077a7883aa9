"""The learning dashboard in a real browser: the charts draw the seeded days, the window switches.

Set ``BROWSER_SCREENSHOTS`` to a directory to keep screenshots of each window (the page, and each chart).
"""

from __future__ import annotations

import os
from datetime import datetime, time, timedelta

import pytest
from django.utils import timezone

from accounts.actors import Actor
from feedback.models import FeedbackEvent
from learning.models import LearningUsage
from promotions.models import LearningPromotion
from promotions.services import promotion_propose, promotion_transition
from retrieval.models import RetrievalFeedback
from tests.factories import (
    CommandDecisionFactory,
    CommandRunFactory,
    FeedbackEventFactory,
    LearningUsageFactory,
    RetrievalFeedbackFactory,
    TaskFeedbackFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db(transaction=True)

FAMILIES = ["retrieval", "assistant_response", "tool_action", "user_preference"]
SIGNALS = ["positive", "negative", "corrected", "accepted"]
# Days ago with data, and how many events each: a week, a month and one day beyond it.
SEEDED = {0: 9, 1: 6, 2: 12, 5: 4, 12: 8, 25: 5, 45: 7}


def _seed(admin) -> None:
    user = UserFactory(username="alice")
    now = timezone.now()
    for days_ago, n in SEEDED.items():
        when = now - timedelta(days=days_ago)
        for i in range(n):
            FeedbackEventFactory(
                user=user, created_at=when, event_family=FAMILIES[i % 4], signal=SIGNALS[(i + days_ago) % 4]
            )
        for outcome in ("helped", "helped", "hurt", "pending")[: 1 + days_ago % 4]:
            usage = LearningUsageFactory(user=user, outcome=outcome)
            LearningUsage.objects.filter(pk=usage.pk).update(created_at=when)
        result = RetrievalFeedbackFactory(weight=1.3, used_in_answer=days_ago % 2 == 0, outcome="unknown")
        RetrievalFeedback.objects.filter(pk=result.pk).update(created_at=when)
        run = CommandRunFactory(user=user, applied_patterns=[1], created_at=when)
        CommandDecisionFactory(run=run, decision="accepted" if days_ago % 3 else "rejected")
        if days_ago % 2:
            FeedbackEventFactory(
                user=user, created_at=when, event_family="eval_failure", event_type="analyzer_fallback", signal="failed"
            )
    actor = Actor(user=admin)
    for i, actions in enumerate([("approve", "apply"), ("approve",), ("reject",), (), ()]):
        task = TaskFeedbackFactory(
            user=user, rating="good", task_snapshot={"id": f"t{i}", "title": f"Task {i}", "description": "Do it"}
        )
        promotion, _ = promotion_propose(
            actor=actor, promotion_type="task_example", subject_type="task_feedback", subject_id=str(task.pk)
        )
        for action in actions:
            promotion_transition(actor=actor, promotion_id=str(promotion.pk), action=action)
        LearningPromotion.objects.filter(pk=promotion.pk).update(created_at=now - timedelta(days=i * 3))


def _days_with_bars(page, chart: str) -> set[str]:
    bars = page.locator(f'[data-chart="{chart}"] [data-role="bar"]')
    return {bars.nth(i).get_attribute("data-day") for i in range(bars.count())}


def _shoot(page, name: str) -> None:
    directory = os.environ.get("BROWSER_SCREENSHOTS")
    if directory:
        page.screenshot(path=os.path.join(directory, f"dashboard-{name}.png"), full_page=True)
        page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(path=os.path.join(directory, f"dashboard-{name}-top.png"))  # what one sees first
        charts = page.locator('[data-role="chart"]')
        for i in range(charts.count()):
            chart = charts.nth(i)
            chart.screenshot(path=os.path.join(directory, f"dashboard-{name}-{chart.get_attribute('data-chart')}.png"))


def test_the_dashboard_draws_the_seeded_days_and_switches_windows(logged_in_page):
    admin = UserFactory(username="reviewer", is_staff=True, is_superuser=True)
    _seed(admin)
    today = timezone.localdate()
    day = {d: (today - timedelta(days=d)).isoformat() for d in SEEDED}

    page = logged_in_page(admin, "/console/promotions/")
    page.locator('[data-role="nav-dashboard"]').click()
    page.wait_for_url("**/console/dashboard/")
    assert page.locator('[data-role="window"][aria-current="page"]').inner_text() == "30 days"
    in_30 = {day[d] for d in SEEDED if d < 30}
    assert _days_with_bars(page, "events-family") == in_30
    assert _days_with_bars(page, "events-signal") == in_30
    assert _days_with_bars(page, "usages") == in_30
    assert _days_with_bars(page, "weights") == {day[d] for d in SEEDED if d < 30 and d % 2 == 0}
    assert _days_with_bars(page, "analyzer") == {day[d] for d in SEEDED if d < 30 and d % 2}
    since = timezone.make_aware(datetime.combine(today - timedelta(days=29), time.min))
    in_window = FeedbackEvent.objects.filter(created_at__gte=since).count()
    assert in_window > sum(n for d, n in SEEDED.items() if d < 30)  # and the audit trail, runs, decisions
    assert page.locator('[data-role="tile-events"]').inner_text() == str(in_window)
    stages = page.locator('[data-role="funnel-stage"]')
    assert [stages.nth(i).locator("b").inner_text() for i in range(3)] == ["5", "2", "1"]
    # Hurt hangs below the axis: a hurt bar starts at the axis line, a helped one ends there.
    usages = page.locator('[data-chart="usages"]')
    zero = float(usages.locator("line.axis").get_attribute("y1"))
    hurt = usages.locator('[data-series="hurt"]').first
    assert abs(float(hurt.get_attribute("y")) - zero) < 0.2
    # The figures behind a chart open from the keyboard.
    table = page.locator('[data-chart="events-family"] [data-role="chart-table"]')
    table.locator("summary").focus()
    page.keyboard.press("Enter")
    assert table.locator("tbody tr").count() == len(in_30)
    _shoot(page, "30")

    page.get_by_role("link", name="7 days").click()
    page.wait_for_url("**/console/dashboard/?window=7")
    assert page.locator('[data-role="window"][aria-current="page"]').inner_text() == "7 days"
    assert _days_with_bars(page, "events-family") == {day[d] for d in SEEDED if d < 7}
    _shoot(page, "7")

    page.get_by_role("link", name="90 days").click()
    page.wait_for_url("**/console/dashboard/?window=90")
    assert _days_with_bars(page, "events-family") == set(day.values())
    _shoot(page, "90")

    page.goto(page.url.replace("window=90", "window=abc"))
    assert "showing the last 30 days" in page.locator('[data-role="notice"]').inner_text()
    assert _days_with_bars(page, "events-family") == in_30
