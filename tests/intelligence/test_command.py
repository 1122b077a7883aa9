"""manage.py intelligence_compile: queue (and with --now run) extraction and packet refreshes."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from intelligence.models import InsightCard, IntelligencePacket, JobStatus, SourceIntelligenceJob
from intelligence.services.targets import target_for_project
from tests import factories

pytestmark = pytest.mark.django_db


def run(*args):
    out = io.StringIO()
    call_command("intelligence_compile", *args, stdout=out)
    return json.loads(out.getvalue())


def test_compiles_a_projects_documents_and_builds_its_packets_now():
    project = factories.ProjectFactory()
    factories.DocumentFactory(project=project, raw_text="Roofing cannot proceed until the parapet drawings are issued.")
    factories.DocumentFactory(project=project, raw_text="Topping out has been postponed to late November.")
    elsewhere = factories.DocumentFactory(
        project=factories.ProjectFactory(), raw_text="The tiling crew is stuck because the screed is still wet."
    )
    factories.DocumentFactory(raw_text="No project: never compiled.")
    summary = run("--project", project.slug, "--refresh", "--now")
    assert (summary["queued_jobs"], summary["ran_jobs"], summary["packets_built"]) == (2, 2, 1)
    assert sorted(InsightCard.objects.values_list("card_type", flat=True)) == ["blocker", "schedule"]
    packet = IntelligencePacket.objects.get(target=target_for_project(project=project), current=True)
    assert [s["key"] for s in packet.sections] == ["blockers", "schedule"]
    assert not SourceIntelligenceJob.objects.filter(document_ref=elsewhere.pk).exists()
    assert set(SourceIntelligenceJob.objects.values_list("status", flat=True)) == {JobStatus.SUCCEEDED}
    assert run("--project", project.slug, "--now")["ran_jobs"] == 2  # again: new jobs, nothing new written
    assert InsightCard.objects.count() == 2


def test_an_unknown_project_is_an_error():
    with pytest.raises(CommandError, match="No project 'atlantis'"):
        run("--project", "atlantis")
