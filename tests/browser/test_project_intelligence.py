"""The packet/card loop in a real browser: a member opens a card of the packet, expands its evidence,
follows a source link and marks the card as belonging to another target; an admin approves the
review in the console; the refreshed packets show the card under its new target."""

from __future__ import annotations

import pytest

from feedback.models import FeedbackEvent
from intelligence.models import IntelligenceReview, JobStatus, PacketRefreshJob
from tests.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.intelligence.loop_world import loop_build

pytestmark = pytest.mark.django_db(transaction=True)


def test_mark_wrong_target_approve_and_see_the_card_move(logged_in_page):
    project = ProjectFactory(slug="apollo", name="Apollo")
    member = UserFactory(username="member")
    MembershipFactory(project=project, user=member)
    admin = UserFactory(username="reviewer", is_staff=True, is_superuser=True)
    loop = loop_build(project)

    page = logged_in_page(member, "/projects/apollo/intelligence/")
    blockers = page.locator('[data-section="blockers"]')
    blockers.get_by_text("Crane permit blocks the steel erection").wait_for()
    assert "Sources fed: email, meetings" in page.locator('[data-role="coverage"]').inner_text()
    card = page.locator(f'[data-card-id="{loop.blocker.pk}"]')
    card.get_by_role("button", name="Open card").click()
    minutes = card.locator(f'[data-evidence-id="{loop.evidence_without_url.pk}"]')
    excerpt = minutes.locator('[data-role="excerpt"]')
    assert not excerpt.is_visible()
    minutes.get_by_role("button", name="Show excerpt").click()
    assert excerpt.inner_text() == "Crane permit still pending; steel erection on hold."
    mail = card.locator(f'[data-evidence-id="{loop.evidence_with_url.pk}"] [data-role="source-link"]')
    assert mail.get_attribute("href") == "https://mail.example/1"

    # The minutes have no url of their own: the link opens their text here, for members.
    minutes.locator('[data-role="source-link"]').click()
    page.wait_for_url("**/intelligence/documents/apollo-minutes/2025-03-04")
    assert "steel erection on hold" in page.locator('[data-role="document-text"]').inner_text()
    page.go_back()

    card = page.locator(f'[data-card-id="{loop.blocker.pk}"]')
    card.get_by_role("button", name="Open card").click()
    card.get_by_label("Right target").select_option("north-wing")
    card.get_by_role("button", name="Wrong target").click()
    page.get_by_text("Marked for another target. A reviewer will look at it.").wait_for()
    review = IntelligenceReview.objects.get()
    assert (review.kind, review.requested_by, review.proposed["target"]) == ("wrong_target", member, "north-wing")
    assert FeedbackEvent.objects.get(event_type="card_feedback").signal == "corrected"

    console = logged_in_page(admin, "/console/promotions/")
    console.get_by_role("link", name="Card reviews").click()
    queued = console.locator(f'[data-review-id="{review.pk}"]')
    assert "The city has not issued the crane permit" in queued.inner_text()
    assert "Move to target north-wing" in queued.inner_text()
    queued.get_by_label("Notes for approve").fill("the crane serves the north wing")
    queued.get_by_role("button", name="Approve").click()
    console.get_by_text("Review approved.").wait_for()

    # No broker here: each refresh ran when the decision committed, one job per target.
    jobs = PacketRefreshJob.objects.all()
    assert sorted(job.target_id for job in jobs) == sorted([loop.root.pk, loop.wing.pk])
    assert {(job.status, job.attempts) for job in jobs} == {(JobStatus.SUCCEEDED, 1)}
    # (Signing the admin in ended the member's first session: the member signs in again.)
    page = logged_in_page(member, "/projects/apollo/intelligence/?target=north-wing")
    moved = page.locator(f'[data-section="blockers"] [data-card-id="{loop.blocker.pk}"]')
    moved.wait_for()
    assert "Crane permit blocks the steel erection" in moved.inner_text()
    page.goto("/projects/apollo/intelligence/")
    page.locator('[data-section="risks"]').wait_for()
    assert page.locator(f'[data-card-id="{loop.blocker.pk}"]').count() == 0
