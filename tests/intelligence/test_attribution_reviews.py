"""Reviewers' decisions on attribution candidates, through the services, the API and the console."""

from __future__ import annotations

import pytest

from accounts.actors import Actor
from config.exceptions import AccessDenied, ApplicationError, Conflict
from feedback.models import FeedbackEvent
from intelligence.models import AttributionStatus, DocumentAttributionCandidate, SourceIntelligenceJob
from intelligence.services.attribution_reviews import attribution_candidate_decide
from retrieval.models import Chunk, Document
from tests import factories
from tests.access.test_matrix import database_state

pytestmark = pytest.mark.django_db
API = "/api/v1/intelligence/attribution/candidates"


@pytest.fixture
def queue(world):
    """An unattributed document with two open candidates (harbour, oak) and a third target (depot)."""
    targets = {
        slug: factories.IntelligenceTargetFactory(project=factories.ProjectFactory(slug=slug), name=slug.title())
        for slug in ("harbour", "oak", "depot")
    }
    document = factories.DocumentFactory(id="mail-7", title="The dig: pumping")
    factories.ChunkFactory(document=document)
    first = factories.DocumentAttributionCandidateFactory(document=document, target=targets["harbour"], score=0.6)
    second = factories.DocumentAttributionCandidateFactory(document=document, target=targets["oak"], score=0.4)
    return {"targets": targets, "document": document, "first": first, "second": second}


def test_approval_sets_the_project_closes_the_others_and_queues_extraction(world, queue):
    decided = attribution_candidate_decide(
        actor=world.actor("admin"), candidate_id=queue["first"].pk, decision="approve", notes="right"
    )
    assert decided.status == AttributionStatus.APPROVED
    assert Document.objects.get(pk="mail-7").project == queue["targets"]["harbour"].project
    assert list(Chunk.objects.values_list("project", flat=True)) == [queue["targets"]["harbour"].project_id]
    queue["second"].refresh_from_db()
    assert queue["second"].status == AttributionStatus.REJECTED
    event = FeedbackEvent.objects.get(event_family="attribution")
    assert (event.signal, event.user, event.free_text) == ("accepted", world.admin, "right")
    assert event.before_snapshot["status"] == "candidate"
    assert event.after_snapshot["document_project"] == "harbour"
    job = SourceIntelligenceJob.objects.get(kind="signal_extraction")
    assert (job.document_ref, job.target_id) == ("mail-7", queue["targets"]["harbour"].pk)


def test_a_correction_moves_the_document_to_the_right_target_with_a_corrected_event(world, queue):
    depot = queue["targets"]["depot"]
    decided = attribution_candidate_decide(
        actor=world.actor("admin"), candidate_id=queue["first"].pk, decision="correct", target_id=depot.pk
    )
    assert (decided.target, decided.status) == (depot, AttributionStatus.APPROVED)
    queue["first"].refresh_from_db()
    assert queue["first"].status == AttributionStatus.REJECTED
    assert Document.objects.get(pk="mail-7").project == depot.project
    assert list(Chunk.objects.values_list("project", flat=True)) == [depot.project_id]
    assert not DocumentAttributionCandidate.objects.filter(status=AttributionStatus.CANDIDATE).exists()
    event = FeedbackEvent.objects.get(event_family="attribution")
    assert event.signal == "corrected"
    assert (event.before_snapshot["target_project"], event.after_snapshot["target_project"]) == ("harbour", "depot")
    assert event.target_id == str(depot.pk)


def test_a_rejection_leaves_the_document_and_the_other_candidates(world, queue):
    attribution_candidate_decide(actor=world.actor("admin"), candidate_id=queue["first"].pk, decision="reject")
    assert Document.objects.get(pk="mail-7").project is None
    assert list(Chunk.objects.values_list("project", flat=True)) == [None]
    queue["second"].refresh_from_db()
    assert queue["second"].status == AttributionStatus.CANDIDATE
    assert FeedbackEvent.objects.get(event_family="attribution").signal == "negative"
    assert not SourceIntelligenceJob.objects.exists()


def test_only_staff_decide_and_a_decided_candidate_stays_decided(world, queue):
    with pytest.raises(AccessDenied):
        attribution_candidate_decide(actor=world.actor("member"), candidate_id=queue["first"].pk, decision="approve")
    with pytest.raises(AccessDenied):
        attribution_candidate_decide(actor=Actor.for_system(), candidate_id=queue["first"].pk, decision="approve")
    attribution_candidate_decide(actor=world.actor("admin"), candidate_id=queue["first"].pk, decision="reject")
    with pytest.raises(Conflict):
        attribution_candidate_decide(actor=world.actor("admin"), candidate_id=queue["first"].pk, decision="approve")


@pytest.mark.parametrize(
    ("decision", "body", "field"),
    [
        ("correct", {}, "target"),
        ("correct", {"target": 999_999}, "target"),
        ("correct", {"target": "abc"}, "target"),
        ("correct", {"target": "{own}"}, "target"),
        ("approve", {"target": "{own}"}, "target"),
        ("approve", {"notes": 5}, "notes"),
        ("reject", {"colour": "red"}, "colour"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_writes_nothing(world, queue, decision, body, field):
    body = {k: (queue["first"].target_id if v == "{own}" else v) for k, v in body.items()}
    before = database_state()
    response = world.client("admin").post(f"{API}/{queue['first'].pk}/{decision}", body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["error"]["fields"]
    assert database_state() == before


def test_deciding_twice_through_the_api_is_a_409(world, queue):
    client = world.client("admin")
    assert client.post(f"{API}/{queue['first'].pk}/approve", {}, format="json").status_code == 200
    assert client.post(f"{API}/{queue['first'].pk}/reject", {}, format="json").status_code == 409
    assert client.post(f"{API}/999999/approve", {}, format="json").status_code == 404


def test_the_list_shows_the_open_queue_with_its_evidence_and_filters_by_status(world, queue):
    client = world.client("admin")
    body = client.get(API).json()
    assert {row["id"] for row in body["results"]} == {queue["first"].pk, queue["second"].pk}
    assert body["results"][0]["evidence"][0]["kind"] == "alias"
    assert client.get(API, {"status": "approved"}).json()["results"] == []
    assert client.get(API, {"status": "maybe"}).status_code == 400


def test_the_console_queue_shows_evidence_and_every_action_is_audited(world, queue):
    client = world.session_client("admin")
    page = client.get("/console/intelligence/attribution/").content.decode()
    assert "alias: harbour tower (weight 0.6)" in page
    assert "mail-7" in page
    depot = queue["targets"]["depot"]
    response = client.post(
        f"/console/intelligence/attribution/{queue['first'].pk}/correct",
        {"target": depot.pk, "notes": "the dig is the depot"},
        follow=True,
    )
    assert f"Candidate {queue['first'].pk} corrected." in response.content.decode()
    event = FeedbackEvent.objects.get(event_family="attribution")
    assert (event.signal, event.free_text, event.user) == ("corrected", "the dig is the depot", world.admin)
    again = client.post(f"/console/intelligence/attribution/{queue['first'].pk}/approve", follow=True)
    assert "already rejected" in again.content.decode()
    assert FeedbackEvent.objects.filter(event_family="attribution").count() == 1
    assert client.get("/console/promotions/").content.decode().count('data-role="nav-attribution"') == 1


def test_the_console_is_staff_only(world, queue):
    response = world.session_client("member").get("/console/intelligence/attribution/")
    assert response.status_code == 302
    assert "/login" in response["Location"] or "admin/login" in response["Location"]
    refused = world.session_client("member").post(f"/console/intelligence/attribution/{queue['first'].pk}/approve")
    assert refused.status_code == 302
    assert DocumentAttributionCandidate.objects.get(pk=queue["first"].pk).status == AttributionStatus.CANDIDATE


def test_a_correction_to_an_inactive_target_is_refused(world, queue):
    depot = queue["targets"]["depot"]
    depot.active = False
    depot.save(update_fields=["active"])
    with pytest.raises(ApplicationError) as caught:
        attribution_candidate_decide(
            actor=world.actor("admin"), candidate_id=queue["first"].pk, decision="correct", target_id=depot.pk
        )
    assert "target" in caught.value.fields
