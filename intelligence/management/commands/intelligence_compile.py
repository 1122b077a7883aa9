"""manage.py intelligence_compile [--project SLUG ...] [--document ID ...] [--refresh] [--now]"""

from __future__ import annotations

import json
import time

from django.core.management.base import BaseCommand, CommandError

from accounts.models import Project
from intelligence.models import JobStatus, PacketRefreshJob
from intelligence.services.compile import documents_compile_queue, packets_refresh_queue
from intelligence.services.jobs import source_job_run
from intelligence.services.refresh import packet_refresh_run
from retrieval.models import Document


class Command(BaseCommand):
    help = (
        "Queue the signal extraction of documents that have a project (all of them, or of the projects or "
        "documents named), and with --refresh the packets of their projects' targets. With --now, run the "
        "queued jobs and refreshes in this process instead of leaving them to the workers."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--project", action="append", default=[], help="A project's slug (repeatable).")
        parser.add_argument("--document", action="append", default=[], help="A document's id (repeatable).")
        parser.add_argument("--refresh", action="store_true", help="Also refresh the packets of these projects.")
        parser.add_argument("--refresh-only", action="store_true", help="Refresh packets; queue no extraction.")
        parser.add_argument("--now", action="store_true", help="Run the jobs and refreshes here, now.")

    def handle(self, *args, **options) -> None:
        projects = list(Project.objects.filter(slug__in=options["project"]))
        if len(projects) != len(set(options["project"])):
            missing = sorted(set(options["project"]) - {p.slug for p in projects})
            raise CommandError(f"No project {missing[0]!r}.")
        documents = Document.objects.filter(project__isnull=False)
        if projects:
            documents = documents.filter(project__in=projects)
        if options["document"]:
            documents = documents.filter(pk__in=options["document"])
        started = time.perf_counter()
        summary: dict[str, object] = {}
        if not options["refresh_only"]:
            jobs = documents_compile_queue(document_ids=documents.values_list("pk", flat=True))
            summary["queued_jobs"] = len(jobs)
            if options["now"]:
                ran = [source_job_run(job_id=str(job.pk)) for job in jobs]
                summary["ran_jobs"] = sum(ran)
        if options["refresh"] or options["refresh_only"]:
            project_ids = [p.pk for p in projects] or None
            summary["refresh_targets"] = len(
                packets_refresh_queue(project_ids=project_ids, reason="intelligence_compile")
            )
        if options["now"]:
            queued = PacketRefreshJob.objects.filter(status=JobStatus.QUEUED).values_list("pk", flat=True)
            summary["packets_built"] = sum(packet_refresh_run(job_id=pk) is not None for pk in list(queued))
        summary["seconds"] = round(time.perf_counter() - started, 3)
        self.stdout.write(json.dumps(summary, sort_keys=True))
