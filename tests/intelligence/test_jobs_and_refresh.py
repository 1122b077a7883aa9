"""The compiler's durable job ledger and packet refreshes: deduplicated, idempotent, recoverable."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from accounts.actors import Actor
from intelligence.models import (
    CardStatus,
    CardType,
    IntelligencePacket,
    JobStatus,
    PacketRefreshJob,
    SourceIntelligenceJob,
)
from intelligence.services import jobs
from intelligence.services.packets import packet_build
from intelligence.services.refresh import packet_refresh_request, packet_refresh_run
from retrieval import hooks
from retrieval.services import DocumentInput, documents_import
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def handler(monkeypatch):
    """A handler for the attribution kind that records the jobs it ran."""
    ran: list[str] = []

    def run(job):
        ran.append(job.document_ref)
        return {"ok": True}

    monkeypatch.setitem(jobs.HANDLERS, "attribution", f"{__name__}._handler")
    monkeypatch.setattr(f"{__name__}._handler", run, raising=False)
    return ran


def _handler(job):  # replaced by the fixture
    raise AssertionError


def test_a_job_is_queued_once_per_document_version_and_runs_once(django_capture_on_commit_callbacks, handler):
    document = factories.DocumentFactory()
    with django_capture_on_commit_callbacks(execute=False):
        first = jobs.source_job_queue(kind="attribution", document=document)
        second = jobs.source_job_queue(kind="attribution", document=document)
    assert first.pk == second.pk
    assert jobs.source_job_run(job_id=str(first.pk)) is True
    assert jobs.source_job_run(job_id=str(first.pk)) is False  # a second delivery does nothing
    first.refresh_from_db()
    assert (first.status, first.attempts, first.result) == (JobStatus.SUCCEEDED, 1, {"ok": True})
    assert handler == [document.pk]


def test_a_failing_handler_fails_its_job_with_the_error(monkeypatch, django_capture_on_commit_callbacks):
    def boom(job):
        raise ValueError("no text")

    monkeypatch.setitem(jobs.HANDLERS, "attribution", f"{__name__}._boom")
    monkeypatch.setattr(f"{__name__}._boom", boom, raising=False)
    with django_capture_on_commit_callbacks(execute=False):
        job = jobs.source_job_queue(kind="attribution", document=factories.DocumentFactory())
    jobs.source_job_run(job_id=str(job.pk))
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert "ValueError: no text" in job.last_error


def test_the_sweep_queues_again_what_was_left_queued(monkeypatch, django_capture_on_commit_callbacks):
    published: list[str] = []
    monkeypatch.setattr(jobs, "_publish", published.append)
    with django_capture_on_commit_callbacks(execute=True):
        job = jobs.source_job_queue(kind="attribution", document=factories.DocumentFactory())
    assert published == [str(job.pk)]
    SourceIntelligenceJob.objects.filter(pk=job.pk).update(created_at=timezone.now() - timedelta(hours=1))
    assert jobs.source_jobs_sweep(older_than_seconds=60) == 1
    assert published == [str(job.pk), str(job.pk)]


def test_refresh_requests_for_one_target_merge_into_one_job(django_capture_on_commit_callbacks):
    target = factories.IntelligenceTargetFactory()
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        packet_refresh_request(target_ids=[target.pk], reason="import")
        packet_refresh_request(target_ids=[target.pk, target.pk], reason="review approved")
    assert len(callbacks) == 1
    job = PacketRefreshJob.objects.get(target=target)
    assert job.reasons == ["import", "review approved"]
    assert packet_refresh_run(job_id=job.pk) is not None
    assert packet_refresh_run(job_id=job.pk) is None
    packet = IntelligencePacket.objects.get(target=target, current=True)
    assert packet.reason == "import; review approved"


@override_settings(INTELLIGENCE_STALE_DAYS=10)
def test_a_packet_puts_blockers_first_and_stale_cards_last():
    target = factories.IntelligenceTargetFactory()
    now = timezone.now()
    old_blocker = factories.InsightCardFactory(
        target=target, card_type=CardType.BLOCKER, last_evidence_at=now - timedelta(days=30)
    )
    update = factories.InsightCardFactory(target=target, card_type=CardType.UPDATE)
    blocker = factories.InsightCardFactory(target=target, card_type=CardType.BLOCKER)
    factories.InsightCardFactory(target=target, card_type=CardType.RISK, status=CardStatus.DISMISSED)
    first = packet_build(target=target)
    second = packet_build(target=target)
    assert [s["key"] for s in second.sections] == ["blockers", "updates", "stale"]
    assert [e.card_id for e in second.entries.all()] == [blocker.pk, update.pk, old_blocker.pk]
    first.refresh_from_db()
    assert (first.current, second.current, second.version) == (False, True, first.version + 1)


def test_an_import_tells_the_listeners_which_documents_changed(monkeypatch):
    seen: list[list[str]] = []
    monkeypatch.setattr(hooks, "_listeners", {"test": lambda *, document_ids: seen.append(sorted(document_ids))})
    documents_import(actor=Actor.for_system(), items=[DocumentInput(id="a", raw_text="Pour the slab on Monday.")])
    documents_import(actor=Actor.for_system(), items=[DocumentInput(id="a", raw_text="Pour the slab on Monday.")])
    assert seen == [["a"]]  # the unchanged re-import changed nothing
