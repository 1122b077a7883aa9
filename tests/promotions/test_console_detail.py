"""The console's promotion page: every type explained in words with its real content, evidence as
sentences linked to its events, only the actions the state allows, confirmed Apply / Reject /
Supersede, a validated replacement, grammatical messages, and a query count that does not grow
with the evidence."""

from __future__ import annotations

import html
import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from feedback.models import FeedbackEvent
from learning.context.build import Scope, context_build
from learning.context.render import context_render
from learning.models import AgentLearning
from promotions import explain, services
from promotions.models import LearningPromotion
from promotions.scanners.agent_learning import agent_learning_scan
from promotions.scanners.retrieval import retrieval_scan
from promotions.services import actions_from
from retrieval.models import Chunk
from retrieval.services import ResultFeedback, retrieval_feedback_record, search
from tests.promotions import cases
from tests.promotions.conftest import promote

# What each type's page must say (its real content, in words); names, never ids.
SAYS = {
    "retrieval_weight": ["Rank this passage higher", "Supporting searches", "Asked by", "other", "marked it helpful"],
    "agent_learning_thumbs_down": [
        "[Lessons From Reviewed Feedback]",
        "The client asked for a spring poem",
        "only when the tool poetry runs",
        "only contexts tagged poems",
        "the 2 members of project Apollo (member, owner)",
        "step: draft, model: poet-1",
    ],
    "agent_learning_tool_failure": ["invoices/send", "Error: recipient # has no address", "High: it touches financial"],
    "agent_learning_task_rating": ["Too vague: no date and no list of who attends", "Plan the site visit"],
    "agent_learning_eval_failure": ["Wrote 3/4/2026 on the invoice", "invoice_date_format"],
    "task_example": ["Draft the Q3 site report", "[Approved Task Examples]", "Rated good by owner"],
    "memory": ["The site office closes at 4 pm on Fridays.", "[Team Knowledge]", "owner owner", "project Apollo"],
    "workflow": ["[Known Workflow: Weekly site report]", "2. Summarise delays", "Learned from 4 requests of owner"],
    "packet_rule": ["The Risks section moves up to just after the active blockers.", "project Apollo"],
    "attribution_rule": ["the phrase “the dig”", "Apollo tower", "Reviewers attributed 2 documents"],
}


def page(client: Client, promotion: LearningPromotion) -> str:
    response = client.get(reverse("console-promotion", args=[promotion.pk]))
    assert response.status_code == 200
    return response.content.decode()


def text_of(body: str) -> str:
    """The page's visible text (tags and the script dropped), unescaped, on one line."""
    body = re.sub(r"<script.*?</script>|<style.*?</style>", "", body, flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", body)).split())


def injected(body: str) -> str:
    """The block the page says will be injected."""
    found = re.search(
        r'data-role="injected-text">\s*<div class="label">Injected as</div>\s*<pre[^>]*>(.*?)</pre>', body, re.S
    )
    assert found, "no injected text on the page"
    return html.unescape(found.group(1))


@pytest.mark.parametrize("case", list(cases.CASES))
def test_each_type_is_explained_in_words_with_its_content(world, embedder, case):
    promotion = cases.CASES[case](world)
    body = page(world.session_client("admin"), promotion)
    text = " ".join(text_of(body).split())
    for phrase in SAYS[case]:
        assert phrase in text, phrase
    # Readable facts, never a raw structure, an id for a name, or an empty value printed.
    assert not re.search(r"\{'|'\}|\[\{|\bNone\b|owner \d|project \d", text)
    assert "What Apply will change" in text or "Once approved, Apply will change this" in text


def test_a_retrieval_weight_shows_its_passage_document_queries_and_the_preview_inline(world, embedder):
    promotion = cases.weight_boost(world)
    chunk = Chunk.objects.select_related("document").get(pk=promotion.proposed_learning["chunk"])
    body = page(world.session_client("admin"), promotion)
    text = " ".join(text_of(body).split())
    assert chunk.content in text
    assert chunk.document.title in text
    multiplier = explain.multiplier_text(promotion.proposed_learning["multiplier"])
    assert re.search(rf"Rank this passage higher \({multiplier}\) for queries like “[^”]+”, “[^”]+”, “[^”]+”", text)
    assert f"“{cases.QUERY}”" in text
    assert "1 of 1 user shown it in these searches used it; shown at rank 2.0 on average." in text
    assert "Searches with the words “experiment flutter tunnel wind”: shown 3 times" in text
    # Each supporting search links to its feedback event in the admin, the fact to all three.
    marks = list(FeedbackEvent.objects.filter(event_type="retrieval_result_feedback"))
    assert len(marks) == 3
    for event in marks:
        assert reverse("admin:feedback_feedbackevent_change", args=[event.pk]) in body
    changelist = html.unescape(re.search(r'<a href="([^"]+)">\(the feedback events\)</a>', body).group(1))
    listed = world.session_client("admin").get(changelist)
    assert listed.status_code == 200
    assert all(reverse("admin:feedback_feedbackevent_change", args=[e.pk]) in listed.content.decode() for e in marks)
    # The preview, on the page without asking: the three searches replayed, the passage moving up.
    assert 'data-role="preview-summary"' in body
    preview = text[text.index("Impact preview") :][:600]
    assert re.search(
        r"Replayed the \d+ recent searches this weight would reach: the passage moves up in [1-9]\d*, down in 0",
        preview,
    ), preview
    assert f"Apply creates a ranking weight {multiplier} on this passage for 3 queries like" in text


def test_the_prevention_prompt_shown_is_exactly_what_the_context_injects(
    world, embedder, django_capture_on_commit_callbacks
):
    promotion = cases.thumbs_down(world)
    client = world.session_client("admin")
    shown = injected(page(client, promotion))
    assert shown == context_render_of(promotion.proposed_learning["prevention_prompt"])
    with django_capture_on_commit_callbacks(execute=True):
        promote(world, promotion, "approve", "apply")
    assert AgentLearning.objects.filter(promotion_id=promotion.pk, status="active").exists()
    context = context_build(
        user=world.member,
        message="a poem",
        scope=Scope(project_id=world.project.pk, tool_name="poetry", tags=("poems",)),
    )
    assert shown in context.text
    # ... and nowhere outside its scope: another tool, or outside the project.
    elsewhere = context_build(
        user=world.member, message="a poem", scope=Scope(project_id=world.project.pk, tool_name="mail")
    )
    assert shown not in elsewhere.text


def context_render_of(prompt: str) -> str:
    from learning.context.build import Context  # noqa: PLC0415  only this helper needs it

    return "\n\n".join(context_render(Context(agent_learnings=[{"prevention_prompt": prompt}])))


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ((), "candidate"),
        (("approve",), "approved"),
        (("approve", "apply"), "applied"),
        (("approve", "apply", "pause"), "paused"),
        (("reject",), "rejected"),
        (("supersede",), "superseded"),
    ],
)
def test_only_the_actions_the_state_allows_are_offered(world, path, status):
    promotion = promote(world, cases.task_example(world), *path)
    assert promotion.status == status
    body = page(world.session_client("admin"), promotion)
    offered = set(re.findall(r'data-role="action-(\w+)"', body))
    assert offered == set(actions_from(status))
    assert set(re.findall(r'<dialog id="confirm-(\w+)"', body)) == offered & {"apply", "reject", "supersede"}


def test_apply_reject_and_supersede_need_confirmation(world):
    promotion = promote(world, cases.task_example(world), "approve")
    client = world.session_client("admin")
    url = reverse("console-action", args=[promotion.pk, "apply"])
    events = FeedbackEvent.objects.count()
    unconfirmed = client.post(url)
    assert unconfirmed.status_code == 200  # a confirmation page: nothing written
    body = " ".join(text_of(unconfirmed.content.decode()).split())
    assert "Apply this promotion?" in body
    assert "Apply makes this task an approved example" in body
    assert (LearningPromotion.objects.get(pk=promotion.pk).status, FeedbackEvent.objects.count()) == (
        "approved",
        events,
    )
    done = client.post(url, {"confirm": "yes"}, follow=True)
    assert "Promotion applied." in done.content.decode()
    assert LearningPromotion.objects.get(pk=promotion.pk).status == "applied"
    assert "Applied by admin" in text_of(done.content.decode())

    other = cases.memory_share(world)
    reject = reverse("console-action", args=[other.pk, "reject"])
    asked = client.post(reject, {"notes": "Not for the <team>"})
    assert "Reject this candidate?" in asked.content.decode()
    assert "Not for the &lt;team&gt;" in asked.content.decode()  # the notes carried, escaped
    assert LearningPromotion.objects.get(pk=other.pk).status == "candidate"
    done = client.post(reject, {"notes": "Not for the <team>", "confirm": "yes"}, follow=True)
    assert "Promotion rejected." in done.content.decode()
    assert LearningPromotion.objects.get(pk=other.pk).review_notes == "Not for the <team>"


def test_messages_are_grammatical(world):
    promotion = cases.task_example(world)
    client = world.session_client("admin")
    for action, message in (
        ("approve", "Promotion approved."),
        ("apply", "Promotion applied."),
        ("pause", "Promotion paused."),
        ("resume", "Promotion resumed."),
    ):
        response = client.post(reverse("console-action", args=[promotion.pk, action]), {"confirm": "yes"}, follow=True)
        assert message in response.content.decode()
    wrong = client.post(reverse("console-action", args=[promotion.pk, "approve"]), follow=True)
    assert "Cannot approve a promotion that is applied; approve is allowed from candidate." in wrong.content.decode()


def supersede(client, promotion, **data):
    return client.post(
        reverse("console-action", args=[promotion.pk, "supersede"]), {"confirm": "yes", **data}, follow=True
    )


def test_supersede_picks_a_live_replacement_of_the_same_type(world):
    old = promote(world, cases.task_example(world), "approve", "apply")
    client = world.session_client("admin")
    rejected = promote(world, cases.memory_share(world, "The gate code changes monthly."), "reject")
    memory = cases.memory_share(world)
    # The choices: live promotions of the same type only.
    body = page(client, old)
    assert "No replacement: retire it only" in body
    assert str(memory.pk) not in body
    events = FeedbackEvent.objects.count()
    for data, error in (
        ({}, "Choose the promotion that replaces this one"),
        ({"superseded_by": "not-an-id"}, "superseded_by must name another promotion."),
        ({"superseded_by": str(old.pk)}, "superseded_by must name another promotion."),
        ({"superseded_by": str(memory.pk)}, "superseded_by must be another task_example promotion, not a memory."),
    ):
        response = supersede(client, old, **data)
        assert error in html.unescape(response.content.decode()), data
        assert LearningPromotion.objects.get(pk=old.pk).status == "applied"
    assert FeedbackEvent.objects.count() == events  # nothing half-written
    # A dead promotion replaces nothing (the memory one, superseded by a dead memory candidate).
    response = supersede(client, memory, superseded_by=str(rejected.pk))
    assert "superseded_by must be a live promotion" in html.unescape(response.content.decode())
    assert LearningPromotion.objects.get(pk=memory.pk).status == "candidate"

    new = promote(world, cases.task_example(world, "Draft the Q4 site report"), "approve")
    assert str(new.pk) in page(client, old)  # offered as the replacement
    response = supersede(client, old, superseded_by=str(new.pk))
    assert "Promotion superseded by “Task example: Draft the Q4 site report”." in html.unescape(
        response.content.decode()
    )
    old.refresh_from_db()
    assert (old.status, old.superseded_by_id) == ("superseded", new.pk)
    assert "Superseded by admin" in text_of(response.content.decode())
    # Without a replacement: retired only.
    response = supersede(client, memory, superseded_by="none")
    assert "Promotion superseded." in response.content.decode()
    assert LearningPromotion.objects.get(pk=memory.pk).superseded_by is None


def test_the_api_validates_the_replacement_too(world):
    old = cases.task_example(world)
    memory = cases.memory_share(world)
    response = world.client("admin").post(
        reverse("promotion-supersede", args=[old.pk]), {"superseded_by": str(memory.pk)}, format="json"
    )
    assert response.status_code == 400
    assert "superseded_by" in response.json()["error"]["fields"]
    assert LearningPromotion.objects.get(pk=old.pk).status == "candidate"


@pytest.mark.parametrize("who", ["anonymous", "owner", "member"])
def test_the_page_and_its_actions_are_staff_only(world, who):
    promotion = cases.task_example(world)
    client = Client()
    if who != "anonymous":
        client.force_login(getattr(world, who))
    for response in (
        client.get(reverse("console-promotion", args=[promotion.pk])),
        client.post(reverse("console-action", args=[promotion.pk, "approve"])),
        client.post(reverse("console-action", args=[promotion.pk, "apply"]), {"confirm": "yes"}),
    ):
        assert response.status_code == 302
        assert "/admin/login/" in response["Location"]
    assert LearningPromotion.objects.get(pk=promotion.pk).status == "candidate"


def test_user_text_is_escaped(world):
    promotion = cases.memory_share(world, "The <script>alert(1)</script> door sticks.")
    body = page(world.session_client("admin"), promotion)
    assert "<script>alert(1)</script>" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body


def count_queries(client, promotion) -> int:
    page(client, promotion)  # warm: the index, the session
    with CaptureQueriesContext(connection) as queries:
        page(client, promotion)
    return len(queries)


def test_a_weight_page_costs_the_same_queries_with_3_or_30_supporting_searches(world, embedder):
    client = world.session_client("admin")
    few = cases.weight_boost(world)
    small = count_queries(client, few)
    promote(world, few, "reject")
    actor = world.actor("other")
    second = Chunk.objects.get(pk=few.proposed_learning["chunk"]).chunk_id
    for i in range(27):
        result = search(actor=actor, query=f"{cases.QUERY} {'?' * (i + 1)}", k=4)
        retrieval_feedback_record(
            actor=actor,
            trace_id=result.trace_id,
            items=[ResultFeedback(chunk_id=second, cited=True, outcome="helpful")],
        )
    retrieval_scan()
    many = LearningPromotion.objects.get(status="candidate", proposed_learning__reason="helpful")
    assert len(many.proposed_learning["anchor_traces"]) == 20  # the most the scan keeps
    body = page(client, many)
    assert body.count("marked it helpful") == 20
    assert count_queries(client, many) == small


def test_an_agent_learning_page_costs_the_same_queries_with_1_or_30_thumbs_down(world, embedder):
    client = world.session_client("admin")
    promotion = cases.thumbs_down(world)
    small = count_queries(client, promotion)
    cases.thumbs_down(world, times=30)
    agent_learning_scan()
    promotion.refresh_from_db()
    assert len(promotion.source_event_ids) >= 30
    assert f"{len(promotion.source_event_ids)} thumbs-down from 2 users (member, owner)" in text_of(
        page(client, promotion)
    )
    assert count_queries(client, promotion) == small


def test_a_hand_proposed_weight_of_any_shape_is_still_explained(world, embedder):
    cases.corpus(world)
    chunk = Chunk.objects.first()
    promotion, _ = services.promotion_propose(
        actor=world.actor("admin"),
        promotion_type="retrieval_weight",
        subject_type="chunk",
        subject_id=str(chunk.pk),
        proposed_learning={"multiplier": "lots", "scope": "global"},
    )
    body = page(world.session_client("admin"), promotion)
    text = text_of(body)
    assert chunk.content in text  # the subject's passage all the same
    assert "names no chunk and multiplier: nothing to preview" in text
