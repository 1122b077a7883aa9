"""The Django admin in a real browser: from the console into the admin and back, a changelist
action that goes through the service, the ledger's links. Screenshots land in /tmp/admin-*.png."""

from __future__ import annotations

import pytest

from learning.models import Preference
from promotions.models import LearningPromotion
from tests.factories import (
    FeedbackEventFactory,
    LearningPromotionFactory,
    PreferenceFactory,
    ProjectFactory,
    TaskFeedbackFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db(transaction=True)


def test_console_to_admin_and_back(logged_in_page):
    admin = UserFactory(username="reviewer", is_staff=True, is_superuser=True)
    alice = UserFactory(username="alice")
    project = ProjectFactory(slug="riverside", name="Riverside")
    for description in ("Answer in Spanish.", "Keep answers under 150 words.", "Use bullet points for steps."):
        PreferenceFactory(user=alice, description=description)
    evidence = [
        FeedbackEventFactory(user=alice, project=project, event_type="task_rated", event_family="task_generation")
        for _ in range(3)
    ]
    rating = TaskFeedbackFactory(user=alice, project=project)
    promotion = LearningPromotionFactory(
        subject_id=str(rating.pk), project=project, source_event_ids=[str(e.pk) for e in evidence]
    )

    page = logged_in_page(admin, "/console/promotions/")
    page.locator('[data-role="nav-admin"]').click()
    page.get_by_role("heading", name="Every table, by app").wait_for()
    page.screenshot(path="/tmp/admin-index.png", full_page=True)

    page.get_by_role("link", name="Preferences").click()
    page.get_by_role("checkbox", name="Select this object for an action - Answer in Spanish.").check()
    page.get_by_label("Action:").select_option(label="Stop applying the selected preferences")
    page.get_by_role("button", name="Go").click()
    page.get_by_text("1 preference(s) switched off.").wait_for()
    page.screenshot(path="/tmp/admin-preferences.png", full_page=True)
    assert list(Preference.objects.filter(active=False).values_list("description", "inactive_reason")) == [
        ("Answer in Spanish.", "user")
    ]

    page.goto(page.url.split("/admin/")[0] + f"/admin/promotions/learningpromotion/{promotion.pk}/change/")
    page.locator(".field-source_events a").click()
    page.locator("#result_list").wait_for()
    assert page.locator("#result_list tbody tr").count() == 3  # the evidence, not every event
    page.screenshot(path="/tmp/admin-events.png", full_page=True)
    page.go_back()
    page.screenshot(path="/tmp/admin-promotion.png", full_page=True)
    page.locator('[data-role="object-link"]', has_text="View in console").click()
    page.wait_for_url(f"**/console/promotions/{promotion.pk}/")
    assert LearningPromotion.objects.get().status == "candidate"  # the admin only read it

    page.goto(page.url.split("/console/")[0] + "/admin/")
    page.locator('[data-role="admin-nav-attribution"]').click()
    page.wait_for_url("**/console/intelligence/attribution/")
