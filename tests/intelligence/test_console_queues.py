"""The console's card-review and attribution queues follow the promotion queue's conventions: tabs
with their counts, pages ("Showing 21–25 of 25"), a notice for an unknown tab or page size, an empty
state that says how items arrive, and a query count that does not grow with the rows."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from intelligence.models import AttributionStatus, IntelligenceReview, ReviewKind, ReviewStatus
from tests.factories import (
    DocumentAttributionCandidateFactory,
    InsightCardEvidenceFactory,
    InsightCardFactory,
    IntelligenceTargetFactory,
    UserFactory,
)


def reviews(n: int, *, status: str = ReviewStatus.OPEN) -> None:
    for card in InsightCardFactory.create_batch(n):
        InsightCardEvidenceFactory(card=card)
        IntelligenceReview.objects.create(
            card=card, project=card.project, kind=ReviewKind.STALE, requested_by=UserFactory(), status=status
        )


def candidates(n: int, *, status: str = AttributionStatus.CANDIDATE) -> None:
    target = IntelligenceTargetFactory()
    DocumentAttributionCandidateFactory.create_batch(n, target=target, status=status)


QUEUES = [
    pytest.param("console-intelligence-reviews", reviews, "open", 'data-role="review"', id="card reviews"),
    pytest.param("console-attribution", candidates, "candidate", 'data-role="candidate"', id="attribution"),
]


def counts(html: str) -> dict[str, int]:
    found = re.findall(r'data-status="(\w+)".*?data-role="tab-count">(\d+)<', html, flags=re.S)
    return {status: int(count) for status, count in found}


@pytest.mark.parametrize(("url", "make", "waiting", "row"), QUEUES)
def test_tabs_count_and_pages_show_twenty_at_a_time(world, url, make, waiting, row):
    make(25)
    make(2, status="rejected")
    client = world.session_client("admin")
    html = client.get(reverse(url)).content.decode()
    assert counts(html) == {waiting: 25, "approved": 0, "rejected": 2}
    assert "Showing 1–20 of 25" in html
    assert html.count(row) == 20
    second = client.get(reverse(url), {"page": 2}).content.decode()
    assert "Showing 21–25 of 25" in second
    assert second.count(row) == 5
    assert f'href="?status={waiting}&amp;page=1" rel="prev"' in second
    fifty = client.get(reverse(url), {"per_page": 50}).content.decode()
    assert fifty.count(row) == 25
    assert 'href="?status=rejected&amp;per_page=50"' in fifty  # the tabs keep the page size
    rejected = client.get(reverse(url), {"status": "rejected"}).content.decode()
    assert "Showing 1–2 of 2" in rejected


@pytest.mark.parametrize(("url", "make", "waiting", "row"), QUEUES)
def test_an_unknown_tab_or_page_size_is_a_notice(world, url, make, waiting, row):
    make(1)
    client = world.session_client("admin")
    response = client.get(reverse(url), {"status": "limbo", "per_page": "7"})
    assert response.status_code == 200
    html = response.content.decode()
    assert f"There is no &#x27;limbo&#x27; tab; showing {waiting}." in html
    assert "Ignored the page size &#x27;7&#x27;: choose 20, 50, 100." in html
    assert html.count(row) == 1


@pytest.mark.parametrize(("url", "make", "waiting", "row"), QUEUES)
def test_the_empty_queue_says_how_items_arrive(world, url, make, waiting, row):
    html = world.session_client("admin").get(reverse(url)).content.decode()
    empty = html.split('data-role="empty"', 1)[1].split("</p>", 1)[0]
    assert "waiting" in empty
    assert " waits here " in empty
    assert "Nothing" not in html


@pytest.mark.parametrize(("url", "make", "waiting", "row"), QUEUES)
def test_a_page_costs_the_same_queries_for_1_or_20_rows(world, url, make, waiting, row):
    client = world.session_client("admin")
    make(1)
    with CaptureQueriesContext(connection) as one:
        assert client.get(reverse(url)).content.decode().count(row) == 1
    make(30)
    with CaptureQueriesContext(connection) as twenty:
        assert client.get(reverse(url)).content.decode().count(row) == 20
    assert len(twenty) == len(one)


@pytest.mark.parametrize(("url", "make", "waiting", "row"), QUEUES)
@pytest.mark.parametrize("role", ["owner", "member", "other"])
def test_the_queues_are_staff_only(world, url, make, waiting, row, role):
    make(1)
    response = world.session_client(role).get(reverse(url))
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]
