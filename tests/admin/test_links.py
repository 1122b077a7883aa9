"""Console and admin link to each other; a promotion's admin page links to its evidence, its audit
trail, its subject and its destination; rows made by a promotion link back to it."""

from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import urlsplit

from django.contrib.admin.utils import quote
from django.urls import reverse

from feedback.models import FeedbackEvent, TaskFeedback
from intelligence.models import DocumentAttributionCandidate, IntelligenceReview
from learning.models import AgentLearning
from promotions.models import LearningPromotion
from tests.factories import (
    AgentLearningFactory,
    DocumentAttributionCandidateFactory,
    FeedbackEventFactory,
    IntelligenceReviewFactory,
    LearningPromotionFactory,
    TaskFeedbackFactory,
)


def url(model, view, *args):
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


class _Links(HTMLParser):
    """Each <a>: its href, its text, and the data-role and classes of it and its ancestors."""

    VOID = {"br", "hr", "img", "input", "link", "meta", "source", "wbr"}

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[set[str]] = []
        self.found: list[tuple[set[str], str, list[str]]] = []
        self.inside = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        marks = {f"role:{attrs['data-role']}"} if attrs.get("data-role") else set()
        marks |= {f"class:{c}" for c in (attrs.get("class") or "").split()}
        if tag == "a":
            self.found.append((set().union(marks, *self.stack), attrs.get("href") or "", []))
            self.inside = True
        if tag not in self.VOID:
            self.stack.append(marks)

    def handle_endtag(self, tag):
        self.inside = self.inside and tag != "a"
        if tag not in self.VOID and self.stack:
            self.stack.pop()

    def handle_data(self, data):
        if self.inside:
            self.found[-1][2].append(data)


def links(response, mark):
    """{text: href} of the links marked ``mark`` ("role:nav-admin", "class:field-destination"),
    on themselves or an ancestor."""
    parser = _Links()
    parser.feed(response.content.decode())
    return {" ".join("".join(text).split()): href for marks, href, text in parser.found if mark in marks}


def field(response, name):
    """The links in one read-only field of a change page."""
    return links(response, f"class:field-{name}")


def test_the_console_links_to_the_admin_and_the_admin_to_the_console(world):
    client = world.session_client("admin")
    console = client.get(reverse("console-promotions"))
    assert links(console, "role:nav-admin") == {"Admin": reverse("admin:index")}

    for page in (reverse("admin:index"), url(FeedbackEvent, "changelist")):
        nav = links(client.get(page), "role:admin-console-nav")
        assert nav == {
            "Review console": reverse("console-promotions"),
            "Card reviews": reverse("console-intelligence-reviews"),
            "Attribution queue": reverse("console-attribution"),
        }
        for href in nav.values():
            assert client.get(href).status_code == 200


def test_a_promotion_links_to_its_console_page_evidence_audit_subject_and_destination(world):
    client = world.session_client("admin")
    rating = TaskFeedbackFactory(user=world.owner)
    evidence = [FeedbackEventFactory(user=world.owner) for _ in range(3)]
    FeedbackEventFactory(user=world.owner)  # not evidence of it
    promotion = LearningPromotionFactory(
        subject_id=str(rating.pk),
        source_event_ids=[str(e.pk) for e in evidence],
        status="applied",
        destination_table=TaskFeedback._meta.db_table,
        destination_record_id=str(rating.pk),
    )
    FeedbackEventFactory(subject_type="promotion", subject_id=str(promotion.pk), event_type="promotion_applied")
    page = client.get(url(LearningPromotion, "change", promotion.pk))
    assert page.status_code == 200

    assert links(page, "role:object-link") == {"View in console": reverse("console-promotion", args=[promotion.pk])}
    assert field(page, "subject_row") == {f"task_feedback {rating.pk}": url(TaskFeedback, "change", rating.pk)}
    assert field(page, "destination") == {f"ai_task_feedback {rating.pk}": url(TaskFeedback, "change", rating.pk)}

    (events_href,) = field(page, "source_events").values()
    listed = client.get(events_href).context["cl"].result_list
    assert {e.pk for e in listed} == {e.pk for e in evidence}
    (audit_href,) = field(page, "audit_trail").values()
    assert [e.event_type for e in client.get(audit_href).context["cl"].result_list] == ["promotion_applied"]


def test_an_event_links_to_the_row_it_is_about(world):
    promotion = LearningPromotionFactory()
    event = FeedbackEventFactory(source_table=LearningPromotion._meta.db_table, source_record_id=str(promotion.pk))
    page = world.session_client("admin").get(url(FeedbackEvent, "change", event.pk))
    assert field(page, "source_record") == {
        f"ai_learning_promotions {promotion.pk}": url(LearningPromotion, "change", promotion.pk)
    }


def test_rows_made_by_a_promotion_link_back_to_it(world):
    learning = AgentLearningFactory()
    page = world.session_client("admin").get(url(AgentLearning, "change", learning.pk))
    assert links(page, "role:object-link") == {
        "Promotion in console": reverse("console-promotion", args=[learning.promotion_id]),
        "Promotion in admin": url(LearningPromotion, "change", quote(learning.promotion_id)),
    }
    listing = world.session_client("admin").get(url(AgentLearning, "changelist"))
    assert url(LearningPromotion, "change", quote(learning.promotion_id)) in listing.content.decode()


def test_reviews_and_attribution_candidates_link_to_their_console_queue(world):
    client = world.session_client("admin")
    review = IntelligenceReviewFactory(status="open")
    candidate = DocumentAttributionCandidateFactory()
    for model, row, queue in (
        (IntelligenceReview, review, "console-intelligence-reviews"),
        (DocumentAttributionCandidate, candidate, "console-attribution"),
    ):
        (href,) = links(client.get(url(model, "change", quote(row.pk))), "role:object-link").values()
        assert urlsplit(href).path == reverse(queue)
        queue_page = client.get(href)
        assert queue_page.status_code == 200
        assert str(row.pk) in queue_page.content.decode()  # the row is on the queue's tab the link opens
