"""Compilation: a document's signals staged once, carded only with evidence, deduplicated into
existing cards, and one packet refresh per affected target."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.test import override_settings

from accounts.actors import Actor
from intelligence.models import (
    CardStatus,
    CardType,
    InsightCard,
    InsightCardEvidence,
    JobStatus,
    PacketRefreshJob,
    SignalStatus,
    SourceIntelligenceJob,
    SourceSignalCandidate,
    TargetKind,
)
from intelligence.services import jobs
from intelligence.services.compile import card_match, document_compile, signal_extraction_queue, text_similarity
from intelligence.services.targets import target_for_project
from retrieval.services import DocumentInput, documents_import
from tests import factories

pytestmark = pytest.mark.django_db

MEETING = (
    "Site meeting notes\n"
    "- Roofing cannot proceed until the parapet drawings are issued.\n"
    "- Action: Ben to send the updated door hardware schedule to the supplier by Friday.\n"
    "- The electrician has invoiced an additional $12k for after-hours work.\n"
    "- Thanks all."
)
MONDAY = datetime(2026, 3, 2, 9, tzinfo=UTC)


def document(project, text=MEETING, *, source_system="meetings", when=MONDAY, **kwargs):
    return factories.DocumentFactory(
        project=project, raw_text=text, source_system=source_system, source_created_at=when, **kwargs
    )


def run_job(document, capture):
    with capture(execute=False):
        job = signal_extraction_queue(document=document)
    with capture(execute=False):  # the packet refresh it queues is run by the tests that need it
        assert jobs.source_job_run(job_id=str(job.pk)) is True
    job.refresh_from_db()
    return job


def test_a_job_stages_signals_cards_them_with_evidence_and_asks_one_refresh(django_capture_on_commit_callbacks):
    project = factories.ProjectFactory()
    doc = document(project)
    job = run_job(doc, django_capture_on_commit_callbacks)
    assert job.status == JobStatus.SUCCEEDED, job.last_error
    signals = SourceSignalCandidate.objects.filter(document=doc)
    assert sorted(signals.values_list("signal_type", flat=True)) == ["blocker", "financial", "task"]
    assert set(signals.values_list("status", flat=True)) == {SignalStatus.CARDED}
    root = target_for_project(project=project)
    cards = {card.card_type: card for card in InsightCard.objects.filter(target=root)}
    assert cards["task"].owner == "Ben"
    assert cards["task"].due_at.date().isoformat() == "2026-03-06"
    assert cards["financial"].details["amounts"] == [12000.0]
    for card in cards.values():
        evidence = card.evidence.get()
        assert evidence.excerpt in MEETING
        assert (evidence.document_id, evidence.source_system, evidence.observed_at) == (doc.pk, "meetings", MONDAY)
        assert (card.evidence_count, card.first_evidence_at, card.last_evidence_at) == (1, MONDAY, MONDAY)
    refresh = PacketRefreshJob.objects.get()
    assert (refresh.target_id, refresh.reasons) == (root.pk, [f"compiled {doc.pk}"])
    assert job.result["cards_created"] == 3


def test_running_the_job_again_for_the_same_version_writes_nothing_new(django_capture_on_commit_callbacks):
    doc = document(factories.ProjectFactory())
    first = run_job(doc, django_capture_on_commit_callbacks)
    assert jobs.source_job_run(job_id=str(first.pk)) is False  # a second delivery of the same task
    counts = (SourceSignalCandidate.objects.count(), InsightCard.objects.count(), InsightCardEvidence.objects.count())
    PacketRefreshJob.objects.update(status=JobStatus.SUCCEEDED)  # the refresh ran
    again = run_job(doc, django_capture_on_commit_callbacks)  # queued again by hand: a new job row
    assert again.pk != first.pk
    assert (again.result["signals"], again.result["carded"]) == (0, 0)
    assert counts == (
        SourceSignalCandidate.objects.count(),
        InsightCard.objects.count(),
        InsightCardEvidence.objects.count(),
    )
    assert not PacketRefreshJob.objects.filter(status=JobStatus.QUEUED).exists()


def test_a_job_for_an_older_version_or_an_unattributed_document_does_nothing(django_capture_on_commit_callbacks):
    unattributed = factories.DocumentFactory(raw_text=MEETING)
    assert run_job(unattributed, django_capture_on_commit_callbacks).result["skipped"].startswith("the document has")
    doc = document(factories.ProjectFactory())
    with django_capture_on_commit_callbacks(execute=False):
        job = signal_extraction_queue(document=doc)
    type(doc).objects.filter(pk=doc.pk).update(content_hash="changed")
    jobs.source_job_run(job_id=str(job.pk))
    job.refresh_from_db()
    assert "newer version" in job.result["skipped"]
    assert not SourceSignalCandidate.objects.exists()


def test_a_similar_statement_adds_evidence_to_the_card_instead_of_a_new_one(django_capture_on_commit_callbacks):
    project = factories.ProjectFactory()
    first = document(
        project, "The delivery of the curtain wall panels has slipped by three weeks.", source_system="email"
    )
    later = MONDAY + timedelta(days=3)
    second = document(
        project,
        "[10:02] Tom: delivery of the curtain wall panels has slipped by 3 weeks",
        source_system="chat",
        when=later,
    )
    other = document(project, "Topping out has been postponed to late November.", when=later)
    for doc in (first, second, other):
        run_job(doc, django_capture_on_commit_callbacks)
    schedule = InsightCard.objects.filter(card_type=CardType.SCHEDULE).order_by("created_at")
    assert schedule.count() == 2
    card = schedule.first()
    assert card.evidence_count == 2
    assert sorted(card.evidence.values_list("source_system", flat=True)) == ["chat", "email"]
    assert (card.first_evidence_at, card.last_evidence_at) == (MONDAY, later)
    signal_confidences = SourceSignalCandidate.objects.filter(card=card).values_list("confidence", flat=True)
    assert card.confidence > max(signal_confidences)  # two independent sources say it
    assert set(SourceSignalCandidate.objects.filter(card=card).values_list("status", flat=True)) == {"carded"}


def test_card_match_uses_the_fingerprint_then_similarity_above_the_tunable():
    card = factories.InsightCardFactory(title="Curtain wall panel delivery has slipped three weeks", fingerprint="x")
    assert card_match(statement="anything", fingerprint="x", cards=[card]) == card
    statement = "Curtain wall delivery slipped by 3 weeks"
    assert 0.7 < text_similarity(statement, card.title) < 0.8
    assert card_match(statement=statement, fingerprint="y", cards=[card]) is None
    with override_settings(INTELLIGENCE_CARD_SIMILARITY=0.7):
        assert card_match(statement=statement, fingerprint="y", cards=[card]) == card
    assert card_match(statement="Roof membrane delivery slipped", fingerprint="y", cards=[card]) is None


def test_a_signal_goes_to_the_scope_a_sentence_names_and_each_target_gets_one_refresh(
    django_capture_on_commit_callbacks,
):
    project = factories.ProjectFactory()
    root = target_for_project(project=project)
    east = factories.IntelligenceTargetFactory(
        project=project, kind=TargetKind.BUILDING, slug="east", name="East Wing", aliases=["Block E"]
    )
    text = (
        "Roofing on block E cannot proceed until the parapet drawings are issued.\n"
        "The electrician has invoiced an additional $12k for after-hours work.\n"
        "The block E crew is stuck because the screed is still wet."
    )
    other = document(project, "Topping out has been postponed to late November.")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        document_compile(document=document(project, text))
        document_compile(document=other)
    by_target = dict(InsightCard.objects.values_list("card_type", "target_id").order_by("card_type"))
    assert InsightCard.objects.filter(card_type="blocker", target=east).count() == 2
    # The blockers name block E; the invoice does not, but its document does; the other document does not.
    assert by_target == {"blocker": east.pk, "financial": east.pk, "schedule": root.pk}
    assert sorted(PacketRefreshJob.objects.values_list("target_id", flat=True)) == sorted([root.pk, east.pk])
    assert len(callbacks) == 2  # one refresh task per target, however many documents asked


def test_a_decision_or_update_resolves_a_question_only_with_clear_evidence(django_capture_on_commit_callbacks):
    project = factories.ProjectFactory()
    run_job(document(project, "Has the crane permit been issued by the city?"), django_capture_on_commit_callbacks)
    question = InsightCard.objects.get(card_type=CardType.OPEN_QUESTION)
    run_job(document(project, "The scaffold permit was issued this morning."), django_capture_on_commit_callbacks)
    question.refresh_from_db()
    assert question.status == CardStatus.ACTIVE  # another permit: not an answer
    run_job(document(project, "The crane permit was issued by the city today."), django_capture_on_commit_callbacks)
    question.refresh_from_db()
    assert question.status == CardStatus.RESOLVED
    assert "crane permit was issued" in question.details["resolved_by"]["excerpt"]


def test_a_job_of_the_extraction_kind_is_recorded_in_the_ledger(django_capture_on_commit_callbacks):
    doc = document(factories.ProjectFactory())
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        job = signal_extraction_queue(document=doc)
        assert signal_extraction_queue(document=doc).pk == job.pk
    assert len(callbacks) == 1
    assert SourceIntelligenceJob.objects.get().kind == "signal_extraction"


def test_an_import_queues_the_extraction_of_documents_with_a_project(django_capture_on_commit_callbacks):
    project = factories.ProjectFactory()
    with django_capture_on_commit_callbacks(execute=False):
        documents_import(
            actor=Actor.for_system(),
            items=[
                DocumentInput(id="mail-1", raw_text=MEETING, project_slug=project.slug, source_system="email"),
                DocumentInput(id="mail-2", raw_text=MEETING),  # no project yet: attribution comes first
            ],
        )
    # The document with a project is compiled at once; the other is attributed first.
    jobs_by_document = {j.document_ref: j for j in SourceIntelligenceJob.objects.all()}
    assert {ref: j.kind for ref, j in jobs_by_document.items()} == {
        "mail-1": "signal_extraction",
        "mail-2": "attribution",
    }
    job = jobs_by_document["mail-1"]
    with django_capture_on_commit_callbacks(execute=False):
        jobs.source_job_run(job_id=str(job.pk))
    assert InsightCard.objects.filter(project=project).count() == 3


def test_with_embeddings_a_paraphrase_updates_the_card_and_another_item_does_not(embedder, settings):
    settings.INTELLIGENCE_CARD_EMBEDDINGS = True
    card = factories.InsightCardFactory(title="The curtain wall delivery has slipped by three weeks.", fingerprint="x")
    paraphrase = "Curtain wall panels are now arriving three weeks late."
    assert text_similarity(paraphrase, card.title) < 0.8  # words alone would miss it
    assert card_match(statement=paraphrase, fingerprint="y", cards=[card]) == card
    other = "The roof membrane delivery has slipped by three weeks."
    assert card_match(statement=other, fingerprint="z", cards=[card]) is None
