"""The console's queue (/console/promotions/): rows in words, search and filters that persist, tab
counts, pages, bulk review, the activity feed in words, the empty state, and its access rules."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta
from html import unescape

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from accounts.actors import Actor
from feedback.models import FeedbackEvent
from promotions import services
from promotions.models import LearningPromotion
from promotions.summaries import promotion_summaries, promotion_summary
from tests.factories import (
    ChunkFactory,
    DocumentFactory,
    FeedbackEventFactory,
    LearningPromotionFactory,
    ProjectFactory,
    TaskFeedbackFactory,
)

LIST = "/console/promotions/"


def bulk_url() -> str:
    return reverse("console-bulk")


def weight(world, *, multiplier=1.3, text="Croup in children: a barking cough, worse at night.", **kwargs):
    chunk = ChunkFactory(document=DocumentFactory(title="Croup"), content=text)
    return LearningPromotionFactory(
        promotion_type="retrieval_weight",
        subject_type="chunk",
        subject_id=str(chunk.pk),
        proposed_learning={"chunk": chunk.pk, "multiplier": multiplier, "scope": "global", "reason": "helpful"},
        **kwargs,
    )


def of_every_type(world, i: int = 0) -> list[LearningPromotion]:
    """One promotion of each of the seven types (built as the scanners store them)."""
    riverside = ProjectFactory(slug=f"riverside-{i}-{uuid.uuid4().hex[:4]}", name="Riverside")
    return [
        weight(world, multiplier=0.7 if i % 2 else 1.3),
        LearningPromotionFactory(
            promotion_type="agent_learning",
            subject_type="response_feedback",
            project=world.project,
            risk_level="medium",
            promotion_path="repeated_failure",
            rule="repeated_thumbs_down: 3 similar thumbs-down within 14 days",
            proposed_learning={
                "title": "3 thumbs-down",
                "prevention_prompt": f"Always check the units of figure {i} before answering.",
                "tool_name": "search_docs",
            },
        ),
        LearningPromotionFactory(
            promotion_type="memory",
            subject_type="memory",
            project=riverside,
            risk_level="medium",
            proposed_learning={"visibility": "project", "project": riverside.slug, "content": "The gate code is 4411."},
        ),
        LearningPromotionFactory(
            promotion_type="workflow",
            subject_type="workflow",
            proposed_learning={"visibility": "team", "workflow_name": "Weekly status email", "project": None},
        ),
        LearningPromotionFactory(
            promotion_type="task_example",
            project=world.project,
            proposed_learning={"title": f"Draft the Q3 memo {i}", "description": "Spend per line."},
        ),
        LearningPromotionFactory(
            promotion_type="packet_rule",
            subject_type="packet_rule",
            proposed_learning={"rule_type": "card_type_rank", "description": "Raise blockers in the packet."},
        ),
        LearningPromotionFactory(
            promotion_type="attribution_rule",
            subject_type="attribution_pattern",
            proposed_learning={"match_kind": "alias", "pattern": "the dig", "target_id": 1, "target": "depot/depot"},
        ),
    ]


def rows(html: str) -> list[str]:
    """The summary line of each row of the page, in order."""
    return [unescape(s) for s in re.findall(r'data-role="row-link">([^<]*)</a>', html)]


def tab_counts(html: str) -> dict[str, int]:
    return {
        status: int(count)
        for status, count in re.findall(r'data-status="(\w+)".*?data-role="tab-count">(\d+)<', html, flags=re.S)
    }


# --- rows in words ------------------------------------------------------------------------------


def test_each_type_reads_as_what_it_would_do(world):
    promotions = of_every_type(world)
    with CaptureQueriesContext(connection) as queries:
        lines = promotion_summaries(promotions)
    assert len(queries) == 1  # the passages of the weights, all at once
    assert [lines[p.pk] for p in promotions] == [
        "Rank passage 'Croup in children: a barking cough, worse at night.' higher ×1.3",
        "Prevention prompt (search_docs): Always check the units of figure 0 before answering.",
        "Share memory with Riverside: The gate code is 4411.",
        "Share workflow 'Weekly status email' with the team",
        "Task example: Draft the Q3 memo 0",
        "Packet rule: Raise blockers in the packet.",
        "Attribute documents with alias 'the dig' to depot/depot",
    ]
    with CaptureQueriesContext(connection) as none:
        promotion_summaries(promotions[1:])
    assert len(none) == 0


def test_a_long_passage_is_cut_and_a_lost_one_says_so(world):
    long = weight(world, multiplier=0.65, text="Croup in children " + "word " * 50)
    gone = LearningPromotionFactory(
        promotion_type="retrieval_weight",
        subject_type="chunk",
        subject_id="999999",
        proposed_learning={"multiplier": 1.5},
    )
    lines = promotion_summaries([long, gone])
    assert lines[long.pk].startswith("Rank passage 'Croup in children word")
    assert lines[long.pk].endswith("…' lower ×0.65")
    assert lines[gone.pk] == "Rank passage 999999 (no longer stored) higher ×1.5"
    odd = LearningPromotionFactory(promotion_type="memory", subject_type="memory", proposed_learning={})
    assert promotion_summary(odd) == "Share memory with the team: "


def test_the_list_shows_rows_in_words_and_escapes_them(world):
    promotions = of_every_type(world)
    LearningPromotionFactory(proposed_learning={"title": "<script>alert(1)</script>", "description": "x"})
    html = world.session_client("admin").get(LIST).content.decode()
    assert "Share memory with Riverside: The gate code is 4411." in rows(html)
    assert len(rows(html)) == len(promotions) + 1
    assert "<script>alert(1)</script>" not in html
    assert "Task example: &lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "chunk " not in " ".join(rows(html))
    assert "None" not in " ".join(rows(html))


# --- the query count ----------------------------------------------------------------------------


def test_the_page_costs_the_same_queries_for_1_or_60_rows_of_mixed_types(world):
    client = world.session_client("admin")
    first = of_every_type(world)[0]
    services.promotions_review_bulk(actor=world.actor("admin"), promotion_ids=[str(first.pk)], action="approve")
    with CaptureQueriesContext(connection) as one:
        html = client.get(LIST, {"status": "approved", "per_page": 100}).content.decode()
    assert len(rows(html)) == 1
    made = [p for i in range(1, 10) for p in of_every_type(world, i)][:60]
    services.promotions_review_bulk(
        actor=world.actor("admin"), promotion_ids=[str(p.pk) for p in made], action="approve", notes="batch"
    )
    with CaptureQueriesContext(connection) as sixty:
        html = client.get(LIST, {"status": "approved", "per_page": 100}).content.decode()
    assert len(rows(html)) == 61
    assert html.count('data-role="activity-entry"') == 20  # the feed names 20 promotions, with weights among them
    assert len(sixty) == len(one), [q["sql"][:120] for q in sixty.captured_queries]
    assert len(sixty) <= 16


def test_filters_and_search_add_no_query_per_row(world):
    client = world.session_client("admin")
    of_every_type(world)
    params = {"q": "the", "risk_level": "medium", "created_after": "2000-01-01", "project": "apollo"}
    with CaptureQueriesContext(connection) as few:
        client.get(LIST, params)
    for i in range(1, 6):
        of_every_type(world, i)
    with CaptureQueriesContext(connection) as many:
        html = client.get(LIST, params).content.decode()
    assert rows(html)
    assert len(many) == len(few)


# --- search and filters -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"promotion_type": "memory"}, ["Share memory with Riverside: The gate code is 4411."]),
        ({"q": "barking cough"}, ["Rank passage 'Croup in children: a barking cough, worse at night.' higher ×1.3"]),
        ({"q": "GATE code"}, ["Share memory with Riverside: The gate code is 4411."]),
        ({"q": "riverside"}, ["Share memory with Riverside: The gate code is 4411."]),  # the project's name
        ({"q": "status email"}, ["Share workflow 'Weekly status email' with the team"]),
        (
            {"q": "units figure"},
            ["Prevention prompt (search_docs): Always check the units of figure 0 before answering."],
        ),
        ({"q": "the dig"}, ["Attribute documents with alias 'the dig' to depot/depot"]),
        ({"project": "apollo", "promotion_type": "task_example"}, ["Task example: Draft the Q3 memo 0"]),
        (
            {"risk_level": "medium", "promotion_path": "repeated_failure"},
            ["Prevention prompt (search_docs): Always check the units of figure 0 before answering."],
        ),
        ({"rule": "THUMBS"}, ["Prevention prompt (search_docs): Always check the units of figure 0 before answering."]),
        ({"q": "nothing like this"}, []),
    ],
)
def test_search_and_filters(world, params, expected):
    of_every_type(world)
    response = world.session_client("admin").get(LIST, params)
    assert response.status_code == 200
    assert rows(response.content.decode()) == expected


def test_a_subject_is_found_by_its_whole_id_only(world):
    rated = TaskFeedbackFactory()
    promotion = LearningPromotionFactory(subject_id=str(rated.pk), proposed_learning={"title": "Call Acme"})
    client = world.session_client("admin")
    assert rows(client.get(LIST, {"q": str(rated.pk).upper()}).content.decode()) == ["Task example: Call Acme"]
    # A word that happens to be hex is not a piece of every id.
    assert rows(client.get(LIST, {"q": str(promotion.subject_id)[:4]}).content.decode()) == []


def test_the_date_range_is_from_a_day_and_before_another(world):
    old, new = LearningPromotionFactory(), LearningPromotionFactory()
    LearningPromotion.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=30))
    today = timezone.now().date()
    client = world.session_client("admin")
    [new_line] = rows(client.get(LIST, {"created_after": today.isoformat()}).content.decode())
    assert new_line == f"Task example: {new.subject_id}"
    [old_line] = rows(client.get(LIST, {"created_before": today.isoformat()}).content.decode())
    assert old_line == f"Task example: {old.subject_id}"
    both = {"created_after": (today - timedelta(days=31)).isoformat(), "created_before": "2999-01-01T00:00:00Z"}
    html = client.get(LIST, both).content.decode()
    assert len(rows(html)) == 2
    assert f'name="created_after" value="{(today - timedelta(days=31)).isoformat()}"' in html  # the inputs keep them


def test_tab_counts_follow_the_filters_and_links_keep_them(world):
    for promotion in of_every_type(world)[:3]:
        promotion.status = "approved"
        promotion.save(update_fields=["status"])
    LearningPromotionFactory(promotion_type="memory", subject_type="memory", status="rejected")
    client = world.session_client("admin")
    html = client.get(LIST).content.decode()
    expected = {"candidate": 4, "approved": 3, "applied": 0, "paused": 0, "rejected": 1, "superseded": 0, "expired": 0}
    assert tab_counts(html) == expected
    html = client.get(LIST, {"promotion_type": "memory", "q": "gate code"}).content.decode()
    assert tab_counts(html) == dict.fromkeys(expected, 0) | {"approved": 1}
    # Every tab keeps the filters; "clear filters" keeps only the tab.
    assert 'href="?q=gate+code&amp;promotion_type=memory&amp;status=approved"' in html
    assert 'data-role="clear-filters"' in html
    assert re.search(r'href="\?status=candidate" data-role="clear-filters"', html)
    assert 'data-role="clear-filters"' not in client.get(LIST).content.decode()


def test_api_list_takes_the_same_filters(world):
    of_every_type(world)
    admin = world.client("admin")
    url = reverse("promotions")
    found = admin.get(url, {"q": "gate code"}).json()["results"]
    assert [p["promotion_type"] for p in found] == ["memory"]
    assert len(admin.get(url, {"risk_level": "medium"}).json()["results"]) == 2
    refused = admin.get(url, {"promotion_type": "sideways"})
    assert refused.status_code == 400
    assert "promotion_type" in refused.json()["error"]["fields"]
    assert admin.get(url, {"created_after": "yesterday"}).status_code == 400
    assert len(admin.get(url, {"created_before": "2000-01-01"}).json()["results"]) == 0


# --- bad filters: a message, never a 500 --------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"promotion_type": "sideways"}, "Ignored the type filter: 'sideways' is not one of agent_learning,"),
        ({"status": "limbo"}, "There is no 'limbo' tab; showing the candidates."),
        ({"risk_level": "extreme"}, "Ignored the risk filter: 'extreme' is not one of low, medium, high."),
        ({"promotion_path": "sideways-path"}, "Ignored the path filter: 'sideways-path' is not one of human_review,"),
        (
            {"created_after": "2026-02-30"},
            "Ignored the created from filter: '2026-02-30' is not a date (YYYY-MM-DD) or an ISO 8601 date and time.",
        ),
        ({"created_before": "yesterday"}, "Ignored the created before filter: 'yesterday' is not a date (YYYY-MM-DD)"),
        ({"project": "atlantis"}, "Ignored the project filter: there is no project 'atlantis'."),
        ({"per_page": "1000000"}, "Ignored the page size '1000000': choose 20, 50, 100."),
        (
            {"created_after": "2026-03-02", "created_before": "2026-03-02"},
            "The created-from date is not before the created-before date",
        ),
    ],
)
def test_bad_filters_say_what_was_ignored(world, params, message):
    LearningPromotionFactory(proposed_learning={"title": "Still listed", "description": "x"})
    response = world.session_client("admin").get(LIST, {**params, "q": "listed"})
    assert response.status_code == 200
    html = unescape(response.content.decode())
    assert message in html
    if "created-from date is not before" not in message:
        assert rows(response.content.decode()) == ["Task example: Still listed"]  # the other filters still apply
        assert f"={next(iter(params.values()))}" not in re.sub(r'<li class="warning".*?</li>', "", html)  # not kept


def test_a_nul_in_a_filter_or_the_notes_is_dropped(world):
    promotion = LearningPromotionFactory(proposed_learning={"title": "Call Acme"})
    client = world.session_client("admin")
    response = client.get(LIST, {"q": "Acme\x00", "rule": "\x00", "promotion_type": "task_example\x00"})
    assert response.status_code == 200
    assert rows(response.content.decode()) == ["Task example: Call Acme"]
    client.post(bulk_url(), {"ids": [str(promotion.pk)], "action": "approve", "notes": "fine\x00 by me"})
    assert LearningPromotion.objects.get().review_notes == "fine by me"


def test_a_page_past_the_end_or_not_a_number_shows_a_real_page(world):
    for _ in range(25):
        LearningPromotionFactory()
    client = world.session_client("admin")
    assert "Showing 21–25 of 25" in client.get(LIST, {"page": "99"}).content.decode()
    assert "Showing 1–20 of 25" in client.get(LIST, {"page": "abc"}).content.decode()


# --- pages --------------------------------------------------------------------------------------


def test_pages_say_what_they_show_and_keep_the_filters(world):
    for _ in range(45):
        LearningPromotionFactory(project=world.project)
    LearningPromotionFactory()  # no project: filtered out
    client = world.session_client("admin")
    html = client.get(LIST, {"project": "apollo"}).content.decode()
    assert "Showing 1–20 of 45" in html
    assert len(rows(html)) == 20
    assert 'href="?status=candidate&amp;project=apollo&amp;page=2" rel="next"' in html
    page3 = client.get(LIST, {"project": "apollo", "page": 3}).content.decode()
    assert "Showing 41–45 of 45" in page3
    assert len(rows(page3)) == 5
    fifty = client.get(LIST, {"project": "apollo", "per_page": 50}).content.decode()
    assert "Showing 1–45 of 45" in fifty
    assert 'data-role="pages"' not in fifty
    first_page = set(rows(html))
    second = set(rows(client.get(LIST, {"project": "apollo", "page": 2}).content.decode()))
    assert not first_page & second  # newest first, without overlap


# --- bulk review --------------------------------------------------------------------------------


def test_bulk_approve_with_notes_audits_each_and_returns_to_the_list(world):
    chosen = of_every_type(world)[:3]
    untouched = LearningPromotionFactory()
    client = world.session_client("admin")
    back = "status=candidate&promotion_type=memory&page=1&evil=1"
    response = client.post(
        bulk_url(), {"ids": [str(p.pk) for p in chosen], "action": "approve", "notes": "<b>all good</b>", "back": back}
    )
    assert response.status_code == 302
    assert response["Location"] == f"{LIST}?promotion_type=memory&status=candidate&page=1"
    for promotion in LearningPromotion.objects.filter(pk__in=[p.pk for p in chosen]):
        assert (promotion.status, promotion.reviewed_by, promotion.review_notes) == (
            "approved",
            world.admin,
            "<b>all good</b>",
        )
    assert LearningPromotion.objects.get(pk=untouched.pk).status == "candidate"
    events = FeedbackEvent.objects.filter(event_type="promotion_approve")
    assert sorted(e.subject_id for e in events) == sorted(str(p.pk) for p in chosen)
    assert {(e.user, e.free_text, e.before_snapshot["status"]) for e in events} == {
        (world.admin, "<b>all good</b>", "candidate")
    }
    html = client.get(response["Location"]).content.decode()
    assert "3 promotions approved." in html
    feed = html.split('data-role="activity"', 1)[1]
    assert "admin approved" in feed
    assert "&lt;b&gt;all good&lt;/b&gt;" in feed


def test_bulk_reject_of_one_names_it(world):
    promotion = LearningPromotionFactory(proposed_learning={"title": "Call Acme", "description": "x"})
    client = world.session_client("admin")
    response = client.post(bulk_url(), {"ids": [str(promotion.pk)], "action": "reject", "notes": "no"}, follow=True)
    assert "1 promotion rejected: “Task example: Call Acme”." in response.content.decode()
    assert LearningPromotion.objects.get().status == "rejected"


def test_a_batch_with_one_decided_row_changes_nothing_and_names_it(world):
    a, b, c = (LearningPromotionFactory(proposed_learning={"title": f"T{i}", "description": "x"}) for i in range(3))
    services.promotion_transition(actor=world.actor("admin"), promotion_id=str(b.pk), action="approve")
    before = FeedbackEvent.objects.count()
    client = world.session_client("admin")
    response = client.post(bulk_url(), {"ids": [str(a.pk), str(b.pk), str(c.pk)], "action": "reject"}, follow=True)
    html = unescape(response.content.decode())
    assert (
        "Nothing was rejected: 1 of the 3 selected promotions is no longer a candidate "
        "(“Task example: T1” is approved). Reload the list and select again."
    ) in html
    assert [LearningPromotion.objects.get(pk=p.pk).status for p in (a, b, c)] == ["candidate", "approved", "candidate"]
    assert FeedbackEvent.objects.count() == before


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"action": "approve"}, "Select at least one promotion; nothing was approved."),
        ({"action": "approve", "ids": ["not-an-id"]}, "Not promotion ids: 'not-an-id'; nothing was approved."),
        (
            {"action": "reject", "ids": [str(uuid.UUID(int=7))]},
            f"No such promotion: {uuid.UUID(int=7)}; nothing was rejected.",
        ),
        ({"action": "apply", "ids": ["{pk}"]}, "A bulk review can approve or reject; not 'apply'."),
        ({"ids": ["{pk}"]}, "A bulk review can approve or reject; not ''."),
        ({"action": "approve", "ids": [str(uuid.uuid4()) for _ in range(101)]}, "At most 100 promotions at a time"),
    ],
)
def test_bulk_bad_input_is_a_message_and_writes_nothing(world, data, message):
    promotion = LearningPromotionFactory()
    data = {k: [v.format(pk=promotion.pk) for v in vs] if isinstance(vs, list) else vs for k, vs in data.items()}
    before = FeedbackEvent.objects.count()
    response = world.session_client("admin").post(bulk_url(), data, follow=True)
    assert response.status_code == 200
    assert message in unescape(response.content.decode())
    assert LearningPromotion.objects.get().status == "candidate"
    assert FeedbackEvent.objects.count() == before


def test_bulk_needs_csrf_and_post(world):
    promotion = LearningPromotionFactory()
    client = Client(enforce_csrf_checks=True)
    client.force_login(world.admin)
    assert client.post(bulk_url(), {"ids": [str(promotion.pk)], "action": "approve"}).status_code == 403
    assert world.session_client("admin").get(bulk_url()).status_code == 405
    assert LearningPromotion.objects.get().status == "candidate"


# --- access -------------------------------------------------------------------------------------

# Who may see the queue and review from it: staff admins only; anyone else is sent to sign in as
# staff (the admin login), as on every console page. (role, GET list, POST bulk)
ACCESS = [("anonymous", 302, 302), ("owner", 302, 302), ("member", 302, 302), ("other", 302, 302), ("admin", 200, 302)]


@pytest.mark.parametrize(("role", "list_status", "bulk_status"), ACCESS)
def test_access(world, role, list_status, bulk_status):
    promotion = LearningPromotionFactory()
    client = Client() if role == "anonymous" else world.session_client(role)
    listed = client.get(LIST)
    assert listed.status_code == list_status
    posted = client.post(bulk_url(), {"ids": [str(promotion.pk)], "action": "approve"})
    assert posted.status_code == bulk_status
    if role != "admin":
        assert "/admin/login/" in listed["Location"]
        assert "/admin/login/" in posted["Location"]
        assert LearningPromotion.objects.get().status == "candidate"
    else:
        assert LearningPromotion.objects.get().status == "approved"


def test_a_service_key_is_not_the_console(world):
    client = world.client("service")
    assert client.get(LIST).status_code == 302
    assert (
        client.post(bulk_url(), {"ids": [str(LearningPromotionFactory().pk)], "action": "approve"}).status_code == 302
    )
    assert LearningPromotion.objects.get().status == "candidate"


# --- the activity feed and the empty state --------------------------------------------------------


def test_the_feed_names_who_did_what_to_which_promotion(world):
    rated = TaskFeedbackFactory(user=world.owner)
    task = LearningPromotionFactory(
        subject_id=str(rated.pk), proposed_learning={"title": "Call Acme", "description": "x"}
    )
    services.promotion_transition(actor=world.actor("admin"), promotion_id=str(task.pk), action="approve")
    services.promotion_transition(actor=world.actor("admin"), promotion_id=str(task.pk), action="apply")
    expiring = LearningPromotionFactory(proposed_learning={"title": "Old one", "description": "x"})
    LearningPromotion.objects.filter(pk=expiring.pk).update(expires_at=timezone.now() - timedelta(days=1))
    services.promotions_expire()
    html = world.session_client("admin").get(LIST).content.decode()
    feed = feed_of(html)
    assert feed[0].endswith("“Task example: Old one” expired: nobody reviewed it in time")
    assert feed[1].endswith("admin applied “Task example: Call Acme”")
    assert feed[2].endswith("admin approved “Task example: Call Acme”")
    assert f'href="/console/promotions/{task.pk}/">“Task example: Call Acme”</a>' in html
    assert "promotion_approve" not in html.split('data-role="activity"', 1)[1]


def feed_of(html: str) -> list[str]:
    return [
        re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", "", item))).strip()
        for item in re.findall(r'data-role="activity-entry"[^>]*>(.*?)</li>', html, flags=re.S)
    ]


def test_the_feed_tells_scans_the_system_and_failures_apart(world):
    by_schedule, by_admin = (
        services.promotions_propose_bulk(
            actor=actor,
            promotion_type="memory",
            subject_type="memory",
            proposals=[services.Proposal(subject_id=name, proposed_learning={"content": name}, confidence=0.5)],
        )[0]
        for name, actor in (("Fact one", Actor.for_system()), ("Fact two", world.actor("admin")))
    )
    services.promotion_transition(actor=world.actor("admin"), promotion_id=str(by_admin.pk), action="approve")
    common = {"event_family": "workflow_outcome", "subject_type": "promotion", "user": None, "writer": "system"}
    FeedbackEventFactory(**common, subject_id=str(by_schedule.pk), event_type="promotion_approve", signal="accepted")
    FeedbackEventFactory(
        **common,
        subject_id=str(by_admin.pk),
        event_type="promotion_apply",
        signal="failed",
        after_snapshot={"status": "approved", "error": "The memory was deleted by its owner."},
    )
    FeedbackEventFactory(**common, subject_id=str(by_schedule.pk), event_type="promotion_surprise", signal="stale")
    feed = feed_of(world.session_client("admin").get(LIST).content.decode())
    assert [line.split(" ", 2)[2] for line in feed] == [  # after the date and time
        "“Share memory with the team: Fact one” — promotion surprise",
        "the system could not apply “Share memory with the team: Fact two”: The memory was deleted by its owner.",
        "the system automatically approved “Share memory with the team: Fact one”",
        "admin approved “Share memory with the team: Fact two”",
        "a scan by admin proposed “Share memory with the team: Fact two”",
        "a scheduled scan proposed “Share memory with the team: Fact one”",
    ]


def test_the_empty_queue_says_how_candidates_arise(world):
    html = world.session_client("admin").get(LIST).content.decode()
    empty = re.sub(r"\s+", " ", html.split('data-role="empty"', 1)[1].split("</td>", 1)[0])
    assert "Candidates come from scans of the feedback" in empty
    assert "Generate</b> runs every scanner now." in empty
    assert "search traces (retrieval weights) every hour" in empty
    assert "rated tasks (task examples) every 6 hours" in empty
    assert "Nothing candidate" not in html
    LearningPromotionFactory(status="applied")
    assert (
        "No promotions are paused (1 in the other tabs)."
        in world.session_client("admin").get(LIST, {"status": "paused"}).content.decode()
    )
    filtered = world.session_client("admin").get(LIST, {"q": "zebra"}).content.decode()
    assert "No candidate promotions match these filters." in filtered


def test_a_query_scoped_weight_names_the_words_of_its_first_supporting_query(world):
    scoped = weight(world, multiplier=1.2, text="Deploy checklist")
    scoped.proposed_learning = {**scoped.proposed_learning, "scope": "query", "anchor_terms": [["check", "deploy"]]}
    old = weight(world, multiplier=1.2, text="Deploy checklist")
    old.proposed_learning = {**old.proposed_learning, "scope": "query", "anchor_terms": ["check deploy"]}
    lines = promotion_summaries([scoped, old])
    assert lines[scoped.pk] == "Rank passage 'Deploy checklist' higher ×1.2 for queries about 'check deploy'"
    assert lines[old.pk] == lines[scoped.pk]  # terms stored as one string before they were lists
