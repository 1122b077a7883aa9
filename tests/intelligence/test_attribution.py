"""Attribution on import: scoring (cases written by hand, not the tuning corpus), the decision it
leads to, its events and jobs, and the rules applied promotions add."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.test import override_settings

from accounts.actors import Actor
from bench.intelligence_corpus import generate
from feedback.models import FeedbackEvent
from intelligence.models import (
    DocumentAttributionCandidate,
    JobStatus,
    RuleStatus,
    SourceIntelligenceJob,
    TargetKind,
)
from intelligence.services import jobs
from intelligence.services.attribution import attribution_score, document_attribute
from intelligence.services.attribution_rules import rule_pattern_normalise
from retrieval.models import Document
from retrieval.services import DocumentInput, documents_import
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def projects():
    """Three projects as an admin profiled them; one consultant and one client on two of them."""
    harbour = factories.IntelligenceTargetFactory(
        project=factories.ProjectFactory(slug="harbour", name="Harbour Tower"),
        name="Harbour Tower",
        aliases=["Harbour Tower", "HBT"],
        client_names=["Northwind Estates"],
        addresses=["12 Quay Street"],
        participants=["dana@buildco.example", "sam.consult@struct.example"],
        external_ids=["P-1042"],
    )
    oak = factories.IntelligenceTargetFactory(
        project=factories.ProjectFactory(slug="oak", name="Oak Street Lofts"),
        name="Oak Street Lofts",
        aliases=["Oak"],
        client_names=["Northwind Estates"],
        addresses=["3 Mill Lane"],
        participants=["lee@buildco.example", "sam.consult@struct.example"],
        external_ids=["J-77"],
    )
    depot = factories.IntelligenceTargetFactory(
        project=factories.ProjectFactory(slug="depot", name="Granite Depot"),
        name="Granite Depot",
        aliases=["Granite Depot"],
        client_names=["Orbis Logistics"],
        participants=["ines@buildco.example"],
        external_ids=["P-2210"],
    )
    return {"harbour": harbour, "oak": oak, "depot": depot}


def doc(id="d1", *, title="", text="Weekly update.", participants=(), metadata=None, url="", project=None):
    return factories.DocumentFactory(
        id=id,
        title=title,
        raw_text=text,
        participants=list(participants),
        metadata=metadata or {},
        url=url,
        project=project,
    )


def test_an_explicit_id_in_the_metadata_is_decisive(projects):
    result = attribution_score(document=doc(metadata={"job_number": "p1042"}, text="Pour on Monday."))
    assert result.project_id == projects["harbour"].project_id
    assert result.score >= 0.85
    assert result.evidence[0] == {"kind": "explicit_id", "value": "p1042", "weight": 4.5}


def test_matching_ignores_case_and_punctuation_but_respects_word_boundaries(projects):
    written = attribution_score(document=doc(title="HARBOUR-tower: crane booking", text="See the attached plan."))
    assert written.project_id == projects["harbour"].project_id
    assert any(e["kind"] == "alias" and e["value"].startswith("harbour tower") for e in written.evidence)
    inside = attribution_score(document=doc("d2", title="Conference in Oakland", text="Oaky wine tasting after."))
    assert inside.project_id is None  # "Oak" is not inside "Oakland" or "Oaky"


def test_two_projects_matching_equally_is_not_high_confidence(projects):
    result = attribution_score(
        document=doc(text="Northwind Estates asked for the cost report.", participants=["sam.consult@struct.example"])
    )
    assert result.score < 0.5  # the client and the consultant work on harbour and on oak alike


def test_people_shared_by_projects_weigh_less_than_a_project_own_people(projects):
    shared = attribution_score(document=doc(participants=["sam.consult@struct.example"]))
    own = attribution_score(document=doc("d2", participants=["Ines <ines@buildco.example>"]))
    shared_weight = shared.evidence[0]["weight"] if shared.evidence else 0
    assert own.project_id == projects["depot"].project_id
    assert own.evidence[0]["weight"] > shared_weight


def test_an_import_queues_one_attribution_job_that_attributes_and_queues_extraction(
    projects, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        documents_import(
            actor=Actor.for_system(),
            items=[DocumentInput(id="mail-1", title="Job P-2210: payment application 4", raw_text="Invoice attached.")],
        )
    job = SourceIntelligenceJob.objects.get(kind="attribution")
    assert jobs.source_job_run(job_id=str(job.pk)) is True
    assert jobs.source_job_run(job_id=str(job.pk)) is False  # a second delivery does nothing
    job.refresh_from_db()
    assert (job.status, job.result["outcome"]) == (JobStatus.SUCCEEDED, "attributed")
    document = Document.objects.get(pk="mail-1")
    assert document.project_id == projects["depot"].project_id
    assert set(document.chunks.values_list("project_id", flat=True)) == {document.project_id}  # search follows
    event = FeedbackEvent.objects.get(event_family="attribution")
    assert (event.signal, event.subject_id, event.project_id) == ("accepted", "mail-1", document.project_id)
    assert event.after_snapshot["evidence"][0]["kind"] == "explicit_id"
    extraction = SourceIntelligenceJob.objects.get(kind="signal_extraction")
    assert (extraction.document_ref, extraction.target_id) == ("mail-1", projects["depot"].pk)


def test_medium_confidence_opens_one_candidate_and_a_needs_review_event(projects):
    document = doc(title="Harbour Tower: crane booking")
    first = document_attribute(document_id=document.pk)
    again = document_attribute(document_id=document.pk)
    assert first["outcome"] == again["outcome"] == "candidate"
    assert (first["created"], again["created"]) == (True, False)
    candidate = DocumentAttributionCandidate.objects.get()
    assert candidate.target == projects["harbour"]
    assert 0.3 <= candidate.score < 0.85
    assert candidate.evidence[0]["kind"] == "alias"
    event = FeedbackEvent.objects.get(event_family="attribution")
    assert (event.signal, event.subject_type) == ("needs_review", "attribution_candidate")
    document.refresh_from_db()
    assert document.project_id is None
    assert not SourceIntelligenceJob.objects.filter(kind="signal_extraction").exists()


def test_a_document_with_a_project_is_not_attributed_again(projects):
    document = doc(metadata={"job_number": "P-1042"}, project=projects["depot"].project)
    assert document_attribute(document_id=document.pk)["outcome"] == "has_project"
    document.refresh_from_db()
    assert document.project_id == projects["depot"].project_id
    assert not FeedbackEvent.objects.exists()


def test_a_low_score_changes_nothing(projects):
    assert document_attribute(document_id=doc(text="Team lunch on Friday.").pk)["outcome"] == "unattributed"
    assert not DocumentAttributionCandidate.objects.exists()
    assert not FeedbackEvent.objects.exists()


def test_earlier_attributions_of_a_thread_are_context(projects):
    doc("first", text="Kick-off.", metadata={"thread_id": "T-9"}, project=projects["oak"].project)
    doc("second", text="Agreed, see below.", metadata={"thread_id": "T-9"}, project=projects["oak"].project)
    reply = attribution_score(document=doc("reply", title="Re: kick-off", metadata={"thread_id": "T-9"}))
    assert reply.project_id == projects["oak"].project_id
    assert reply.evidence[0]["kind"] == "thread"


def test_a_scope_inside_a_project_is_the_candidate_target_when_it_matches(projects):
    scope = factories.IntelligenceTargetFactory(
        project=projects["harbour"].project, kind=TargetKind.BUILDING, slug="block-b", aliases=["Block B"]
    )
    result = attribution_score(document=doc(title="Harbour Tower Block B: glazing", text="12 Quay Street."))
    assert (result.project_id, result.target_id) == (projects["harbour"].project_id, scope.pk)


def test_an_active_rule_raises_a_document_to_auto_and_stops_when_paused_or_superseded(projects):
    rule = factories.AttributionRuleFactory(target=projects["depot"], match_kind="alias", pattern="the dig")
    text = "The dig needs pumping again after the rain."
    assert attribution_score(document=doc(text=text)).score >= 0.85
    for status in (RuleStatus.PAUSED, RuleStatus.SUPERSEDED):
        rule.status = status
        rule.save(update_fields=["status"])
        assert attribution_score(document=doc(f"d-{status}", text=text)).project_id is None


def test_a_rule_never_overrides_an_explicit_id_of_another_project(projects):
    factories.AttributionRuleFactory(target=projects["depot"], match_kind="alias", pattern="the dig")
    result = attribution_score(document=doc(text="The dig, job P-1042, needs pumping."))
    assert result.project_id == projects["harbour"].project_id
    assert not any(e["kind"] == "rule" for e in result.evidence)


def test_a_rule_on_a_folder_matches_the_files_below_it(projects):
    pattern = rule_pattern_normalise(match_kind="path", pattern="/shares/jobs/311-dig/")
    factories.AttributionRuleFactory(target=projects["oak"], match_kind="path", pattern=pattern)
    below = attribution_score(document=doc(metadata={"path": "/Shares/Jobs/311-Dig/RFI/rfi-12.pdf"}))
    beside = attribution_score(document=doc("d2", metadata={"path": "/shares/jobs/311-digger/rfi-12.pdf"}))
    assert below.project_id == projects["oak"].project_id
    assert below.score >= 0.85
    assert beside.project_id is None


@override_settings(INTELLIGENCE_ATTRIBUTION_AUTO=0.99)
def test_the_auto_threshold_is_a_setting(projects):
    document = doc(metadata={"job_number": "P-1042"})
    assert document_attribute(document_id=document.pk)["outcome"] == "candidate"


def test_the_command_scores_again_the_documents_without_a_project(projects, capsys):
    doc(text="The dig needs pumping again.")
    doc("d2", text="Team lunch on Friday.")
    call_command("intelligence_attribute")
    assert "2 documents scored: 2 unattributed." in capsys.readouterr().out
    factories.AttributionRuleFactory(target=projects["depot"], match_kind="alias", pattern="the dig")
    call_command("intelligence_attribute")
    assert "1 attributed, 1 unattributed" in capsys.readouterr().out
    assert Document.objects.get(pk="d1").project_id == projects["depot"].project_id


def test_an_unchanged_reimport_queues_no_attribution_job(projects, django_capture_on_commit_callbacks):
    items = [DocumentInput(id="a", raw_text="Pour the slab."), DocumentInput(id="b", raw_text="Strip the forms.")]
    with django_capture_on_commit_callbacks(execute=False):
        documents_import(actor=Actor.for_system(), items=items)
        documents_import(actor=Actor.for_system(), items=items)
    assert sorted(SourceIntelligenceJob.objects.filter(kind="attribution").values_list("document_ref", flat=True)) == [
        "a",
        "b",
    ]


@pytest.mark.parametrize("seed", [11, 12])
def test_on_corpora_not_used_for_tuning_automatic_attributions_are_precise(seed):
    """Seeds of bench/intelligence_corpus.py other than the tuning seed (1): precision of the
    automatic attributions, and no document of no project attributed."""
    corpus = generate(seed=seed, projects=5, documents=120)
    for spec in corpus.projects:
        factories.IntelligenceTargetFactory(
            project=factories.ProjectFactory(slug=spec.slug, name=spec.name),
            name=spec.name,
            **spec.profile(corpus.shared_people[spec.slug]),
        )
    for item in corpus.documents:
        if item.imported_project:
            continue
        factories.DocumentFactory(
            id=item.id,
            title=item.title,
            raw_text=item.raw_text,
            url=item.url,
            participants=item.participants,
            metadata=item.metadata,
            source_system=item.source_system,
        )
        document_attribute(document_id=item.id)
    truth = {item.id: item.truth for item in corpus.documents if not item.imported_project}
    attributed = dict(Document.objects.filter(project__isnull=False).values_list("pk", "project__slug"))
    correct = sum(truth[pk] == slug for pk, slug in attributed.items())
    assert correct / len(attributed) >= 0.97
    assert correct / sum(1 for t in truth.values() if t) >= 0.25
    assert not any(truth[pk] is None for pk in attributed)
