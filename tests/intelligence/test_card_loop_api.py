"""The packet/card loop through HTTP: what the packet and a card say, bad input (a 400 naming the
field, nothing written), the query counts of the packet and the review list, and the pages."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from feedback.models import FeedbackEvent
from intelligence.models import CardType, IntelligenceReview, ReviewKind
from intelligence.services.packets import packet_build
from tests.factories import (
    DocumentFactory,
    InsightCardEvidenceFactory,
    InsightCardFactory,
    MembershipFactory,
    ProjectFactory,
    UserFactory,
)
from tests.intelligence.loop_world import Loop, loop_build

pytestmark = pytest.mark.django_db
API = "/api/v1/intelligence/"


@pytest.fixture
def loop(world) -> Loop:
    return loop_build(world.project)


def test_the_packet_by_section_with_why_evidence_and_coverage(world, loop):
    body = world.client("member").get(API + "projects/apollo/packet").json()
    assert (body["project"], body["target"]["slug"], body["packet"]["version"]) == ("apollo", "apollo", 1)
    assert [s["key"] for s in body["sections"]] == ["blockers", "risks"]
    card = body["sections"][0]["cards"][0]
    assert card["id"] == str(loop.blocker.pk)
    assert (card["card_type"], card["status"], card["origin"], card["evidence_count"]) == (
        "blocker",
        "active",
        "source",
        2,
    )
    assert "2 evidence" in card["why"]
    assert set(card) >= {"title", "summary", "owner", "due_at", "confidence", "target"}
    assert body["source_coverage"] == {"fed": ["email", "meetings"], "stale": [], "missing": []}
    wing = world.client("member").get(API + "projects/apollo/packet", {"target": "north-wing"}).json()
    assert (wing["target"]["slug"], wing["packet"], wing["sections"]) == ("north-wing", None, [])


def test_a_card_with_its_evidence_and_source_links(world, loop):
    body = world.client("owner").get(API + f"cards/{loop.blocker.pk}").json()
    assert (body["title"], body["target"], body["project"]) == (loop.blocker.title, "apollo", "apollo")
    links = {e["document_id"]: e for e in body["evidence"]}
    mail, minutes = links["apollo-mail-1"], links["apollo-minutes/2025-03-04"]
    assert (mail["source_url"], mail["document_title"], mail["source_system"]) == (
        "https://mail.example/1",
        "Re: crane permit",
        "email",
    )
    assert minutes["source_url"] == "/projects/apollo/intelligence/documents/apollo-minutes/2025-03-04"
    assert minutes["excerpt"] == "Crane permit still pending; steel erection on hold."
    assert minutes["observed_at"] is not None


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("feedback", {}, "signal"),
        ("feedback", {"signal": "great"}, "signal"),
        ("feedback", {"signal": "wrong_target"}, "target"),
        ("feedback", {"signal": "wrong_target", "target": "nowhere"}, "target"),
        ("feedback", {"signal": "wrong_target", "target": 7}, "target"),
        ("feedback", {"signal": "useful", "evidence_id": "x"}, "evidence_id"),
        ("feedback", {"signal": "useful", "evidence_id": 999999}, "evidence_id"),
        ("feedback", {"signal": "useful", "note": 5}, "note"),
        ("feedback", {"signal": "useful", "extra": 1}, "extra"),
        ("edit", {}, "title"),
        ("edit", {"title": ""}, "title"),
        ("merge", {}, "into"),
        ("merge", {"into": "not-a-uuid"}, "into"),
        ("merge", {"into": "00000000-0000-0000-0000-000000000000"}, "into"),
    ],
)
def test_bad_card_input_is_a_400_naming_the_field_and_writes_nothing(world, loop, path, body, field):
    response = world.client("member").post(API + f"cards/{loop.blocker.pk}/{path}", body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["error"]["fields"]
    assert not FeedbackEvent.objects.exists()
    assert not IntelligenceReview.objects.exists()


def test_a_replayed_idempotency_key_answers_200_with_the_same_event(world, loop):
    client = world.client("member")
    body = {"signal": "stale", "idempotency_key": "tap-9"}
    first = client.post(API + f"cards/{loop.blocker.pk}/feedback", body, format="json")
    second = client.post(API + f"cards/{loop.blocker.pk}/feedback", body, format="json")
    assert (first.status_code, second.status_code) == (201, 200)
    assert first.json()["event_id"] == second.json()["event_id"]
    assert first.json()["review_id"] == second.json()["review_id"]
    assert (FeedbackEvent.objects.count(), IntelligenceReview.objects.get().reports) == (1, 1)


def test_the_idempotency_key_header_stands_for_the_body_field(world, loop):
    client = world.client("member")
    url = API + f"cards/{loop.blocker.pk}/feedback"
    first = client.post(url, {"signal": "stale"}, format="json", HTTP_IDEMPOTENCY_KEY="tap-10")
    second = client.post(url, {"signal": "stale", "idempotency_key": "tap-10"}, format="json")
    assert (first.status_code, second.status_code) == (201, 200)
    assert first.json()["event_id"] == second.json()["event_id"]
    assert second["Idempotent-Replayed"] == "true"
    assert not first.has_header("Idempotent-Replayed")
    assert FeedbackEvent.objects.get().idempotency_key == "tap-10"


def test_bad_review_decisions(world, loop):
    review = IntelligenceReview.objects.create(card=loop.blocker, project=world.project, kind=ReviewKind.WRONG)
    admin = world.client("admin")
    assert admin.post(API + f"reviews/{review.pk}/approve", {"notes": 3}, format="json").json()["error"]["fields"] == {
        "notes": ["Not a valid string."]
    }
    assert admin.post(API + f"reviews/{review.pk}/approve", {"note": "x"}, format="json").status_code == 400
    assert admin.post(API + "reviews/00000000-0000-0000-0000-000000000000/approve").status_code == 404
    assert admin.post(API + f"reviews/{review.pk}/reject", {"notes": "fine as is"}, format="json").status_code == 200
    again = admin.post(API + f"reviews/{review.pk}/approve", format="json")
    assert again.status_code == 409
    assert FeedbackEvent.objects.filter(event_type="card_review_rejected").count() == 1
    assert admin.get(API + "reviews", {"status": "closed"}).status_code == 400
    assert admin.get(API + "reviews").json()["results"] == []  # the queue: open ones by default
    assert [r["id"] for r in admin.get(API + "reviews", {"status": "rejected"}).json()["results"]] == [str(review.pk)]


def _more_cards(loop, n: int) -> None:
    for i in range(n):
        card = InsightCardFactory(target=loop.root, card_type=CardType.DECISION, title=f"Decision {i}")
        InsightCardEvidenceFactory(card=card)
        InsightCardEvidenceFactory(card=card)


def _queries(client, path, params=None) -> int:
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(path, params or {}).status_code == 200
    return len(ctx.captured_queries)


def test_the_packet_costs_the_same_queries_for_2_or_12_cards(world, loop):
    client = world.client("member")
    client.get(API + "projects/apollo/packet")  # the key's first use is stamped once
    few = _queries(client, API + "projects/apollo/packet")
    _more_cards(loop, 10)
    packet_build(target=loop.root)
    assert len(client.get(API + "projects/apollo/packet").json()["sections"]) == 3
    assert _queries(client, API + "projects/apollo/packet") == few
    page = world.session_client("member")
    few_page = _queries(page, "/projects/apollo/intelligence/")
    _more_cards(loop, 5)
    packet_build(target=loop.root)
    assert _queries(page, "/projects/apollo/intelligence/") == few_page


def _reviews(loop, n: int) -> None:
    for card in InsightCardFactory.create_batch(n, target=loop.root):
        InsightCardEvidenceFactory(card=card)
        IntelligenceReview.objects.create(
            card=card, project=card.project, kind=ReviewKind.STALE, requested_by=UserFactory()
        )


def test_the_review_list_costs_the_same_queries_for_2_or_12_reviews(world, loop):
    _reviews(loop, 2)
    client, console = world.client("admin"), world.session_client("admin")
    client.get(API + "reviews")  # the key's first use is stamped once
    few, few_console = _queries(client, API + "reviews"), _queries(console, "/console/intelligence/reviews/")
    _reviews(loop, 10)
    body = client.get(API + "reviews").json()
    assert len(body["results"]) == 12
    assert len(body["results"][0]["card"]["evidence"]) == 1
    assert _queries(client, API + "reviews") == few
    assert _queries(console, "/console/intelligence/reviews/") == few_console


# --- the pages --------------------------------------------------------------------------------


@pytest.mark.parametrize(("role", "status"), [("owner", 200), ("member", 200), ("admin", 200), ("other", 404)])
def test_the_intelligence_page_is_for_members_and_staff(world, loop, role, status):
    response = world.session_client(role).get("/projects/apollo/intelligence/")
    assert response.status_code == status
    if status == 200:
        assert loop.blocker.title in response.content.decode()
    document = world.session_client(role).get("/projects/apollo/intelligence/documents/apollo-minutes/2025-03-04")
    assert document.status_code == status
    if status == 200:
        assert "steel erection on hold" in document.content.decode()


def test_the_pages_ask_anonymous_visitors_to_sign_in_and_hide_the_unknown(world, loop):
    assert Client().get("/projects/apollo/intelligence/").status_code == 302
    member = world.session_client("member")
    assert member.get("/projects/nowhere/intelligence/").status_code == 404
    fresh = ProjectFactory(slug="gemini", name="Gemini")
    MembershipFactory(project=fresh, user=world.member)
    assert "Nothing has been compiled for Gemini yet." in member.get("/projects/gemini/intelligence/").content.decode()
    assert member.get("/projects/apollo/intelligence/", {"target": "nowhere"}).status_code == 404
    # A document of the project that backs no card is not served by the source-link page.
    DocumentFactory(id="apollo-loose", project=world.project, raw_text="Lunch menu.")
    assert member.get("/projects/apollo/intelligence/documents/apollo-loose").status_code == 404
    assert member.get("/projects/apollo/intelligence/documents/unknown").status_code == 404


def test_the_console_queue_is_for_staff_and_audits_each_decision(world, loop):
    review = IntelligenceReview.objects.create(
        card=loop.blocker, project=world.project, kind=ReviewKind.STALE, reason="moved on"
    )
    assert world.session_client("member").get("/console/intelligence/reviews/").status_code == 302
    console = world.session_client("admin")
    page = console.get("/console/intelligence/reviews/").content.decode()
    assert "The city has not issued the crane permit" in page
    assert "moved on" in page
    assert "Card reviews" in console.get("/console/promotions/").content.decode()
    response = console.post(f"/console/intelligence/reviews/{review.pk}/approve", {"notes": "agreed"})
    assert response.status_code == 302
    review.refresh_from_db()
    assert (review.status, review.decision_notes) == ("approved", "agreed")
    event = FeedbackEvent.objects.get(event_type="card_review_approved")
    assert (event.user, event.free_text, event.after_snapshot["status"]) == (world.admin, "agreed", "stale")
    assert "approved by admin" in console.get("/console/intelligence/reviews/", {"status": "approved"}).content.decode()
    assert world.session_client("member").post(f"/console/intelligence/reviews/{review.pk}/reject").status_code == 302
    assert FeedbackEvent.objects.count() == 1


def test_a_card_costs_the_same_queries_for_2_or_12_pieces_of_evidence(world, loop):
    client = world.client("member")
    path = API + f"cards/{loop.blocker.pk}"
    client.get(path)  # the key's first use is stamped once
    few = _queries(client, path)
    for _ in range(10):
        InsightCardEvidenceFactory(card=loop.blocker)
    assert len(client.get(path).json()["evidence"]) == 12
    assert _queries(client, path) == few
