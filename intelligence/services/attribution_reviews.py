"""Reviewers' decisions on attribution candidates: approve, reject, or correct to another target.

Each decision is one ``attribution`` feedback event (accepted, negative or corrected) with the
before and after snapshots, in the same transaction as the change. Approving or correcting sets
the document's project, closes the document's other open candidates and queues its extraction.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from accounts.actors import Actor
from config.exceptions import AccessDenied, ApplicationError, Conflict, NotFoundError
from feedback.models import Signal
from intelligence.models import AttributionStatus, DocumentAttributionCandidate, IntelligenceTarget
from intelligence.services.attribution import attribution_event, candidates_close
from intelligence.services.jobs import source_job_queue
from retrieval.models import Document
from retrieval.services import document_set_project

DECISIONS = ("approve", "reject", "correct")


def _snapshot(candidate: DocumentAttributionCandidate, document: Document) -> dict[str, Any]:
    return {
        "status": candidate.status,
        "target": candidate.target_id,
        "target_project": candidate.target.project.slug,
        "document_project": document.project.slug if document.project_id and document.project else None,
        "score": round(candidate.score, 4),
    }


def attribution_candidate_decide(
    *, actor: Actor, candidate_id: int, decision: str, target_id: int | None = None, notes: str = ""
) -> DocumentAttributionCandidate:
    """A staff reviewer approves, rejects or corrects (to ``target_id``) an open candidate; returns
    the candidate as decided (for a correction, the approved candidate of the corrected target)."""
    if not actor.is_admin or actor.user is None:
        raise AccessDenied("Only staff admins review attribution candidates.")
    if decision not in DECISIONS:
        raise ApplicationError(f"decision must be one of {', '.join(DECISIONS)}.", field="decision")
    if not isinstance(notes, str) or len(notes) > 10_000:
        raise ApplicationError("notes is text of at most 10000 characters.", field="notes")
    corrected: IntelligenceTarget | None = None
    if decision == "correct":
        if target_id is None:
            raise ApplicationError("A correction names the right target.", field="target")
        corrected = IntelligenceTarget.objects.select_related("project").filter(pk=target_id, active=True).first()
        if corrected is None:
            raise ApplicationError(f"No active target {target_id}.", field="target")
    with transaction.atomic():
        candidate = (
            DocumentAttributionCandidate.objects.select_for_update(of=("self",))
            .select_related("target__project")
            .filter(pk=candidate_id)
            .first()
        )
        if candidate is None:
            raise NotFoundError("No such attribution candidate.")
        if candidate.status != AttributionStatus.CANDIDATE:
            raise Conflict(f"This candidate was already {candidate.status}.", field="status")
        document = (
            Document.objects.select_for_update(of=("self",)).select_related("project").get(pk=candidate.document_id)
        )
        if corrected is not None and corrected.pk == candidate.target_id:
            raise ApplicationError("The correction names the candidate's own target: approve it.", field="target")
        before = _snapshot(candidate, document)
        now = timezone.now()
        candidate.decided_by, candidate.decided_at, candidate.notes = actor.user, now, notes
        if decision == "reject":
            candidate.status = AttributionStatus.REJECTED
            candidate.save(update_fields=["status", "decided_by", "decided_at", "notes"])
            decided = candidate
            signal = Signal.NEGATIVE
        else:
            candidate.status = AttributionStatus.APPROVED if decision == "approve" else AttributionStatus.REJECTED
            candidate.save(update_fields=["status", "decided_by", "decided_at", "notes"])
            decided = candidate
            if corrected is not None:
                decided = DocumentAttributionCandidate.objects.create(
                    document=document,
                    target=corrected,
                    score=1.0,
                    evidence=[{"kind": "reviewer", "value": actor.user.username, "weight": 1.0}],
                    status=AttributionStatus.APPROVED,
                    decided_by=actor.user,
                    decided_at=now,
                    notes=notes,
                )
            document_set_project(document=document, project_id=decided.target.project_id)
            document.project = decided.target.project
            candidates_close(document=document, keep_id=decided.pk, notes=f"closed: candidate {decided.pk} decided")
            signal = Signal.ACCEPTED if decision == "approve" else Signal.CORRECTED
        attribution_event(
            event_type="attribution_review",
            signal=signal,
            project_slug=decided.target.project.slug,
            target_id=decided.target_id,
            subject_type="attribution_candidate",
            subject_id=str(candidate.pk),
            document=document,
            before=before,
            after={**_snapshot(decided, document), "decision": decision, "candidate": decided.pk},
            actor=actor,
            notes=notes,
            metadata={"decision": decision, "evidence": candidate.evidence[:20]},
        )
        if decision != "reject":
            source_job_queue(kind="signal_extraction", document=document, target=decided.target)
    return decided
