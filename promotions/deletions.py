"""Deleting a project or an intelligence target: what describes it outlives it.

The feedback stream, the promotion ledger and retrieval's traces and marks keep their rows and lose
only the reference: events through the stream's audited detach (a ``project_deleted`` /
``target_deleted`` event first, then the one column; see ``feedback.services.detach``), promotions
and retrieval rows through ``SET NULL`` (and a cleared ``target_id`` text where retrieval keeps the
target as a plain value, below the intelligence app). Deleting a user is the erasure
(``promotions.erasure.user_erase``): their events lose the user (and what identifies them), the
promotions they reviewed keep no reviewer. It lives here, like the erasure, because it reaches
every app and ``promotions`` is the app above all others.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction

from accounts.actors import Actor
from accounts.models import Project
from config.exceptions import AccessDenied
from feedback.services.detach import feedback_detach_project, feedback_detach_target
from intelligence.models import IntelligenceTarget
from retrieval.detach import retrieval_detach_target


@dataclass
class DeletionReport:
    deleted: str  # "project 3", "intelligence_target 7"
    deletion_event_ids: list[str] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)


def _require_admin(actor: Actor) -> None:
    if not (actor.is_admin or actor.system):
        raise AccessDenied("Only staff admins delete projects and intelligence targets.")


def _target_detach(*, actor: Actor, target: IntelligenceTarget, report: DeletionReport) -> None:
    event = feedback_detach_target(actor=actor, target_id=target.pk, name=target.name, counts=report.rows)
    report.deletion_event_ids.append(str(event.pk))
    retrieval_detach_target(target_id=target.pk, counts=report.rows)


def target_delete(*, actor: Actor, target_id: int) -> DeletionReport:
    """Delete an intelligence target: its events, promotions and retrieval rows stay, without it."""
    _require_admin(actor)
    report = DeletionReport(deleted=f"intelligence_target {target_id}")
    with transaction.atomic():
        target = IntelligenceTarget.objects.select_for_update().get(pk=target_id)
        _target_detach(actor=actor, target=target, report=report)
        report.rows["intelligence_targets"] = target.delete()[0]
    return report


def project_delete(*, actor: Actor, project_id: int) -> DeletionReport:
    """Delete a project and its intelligence targets: the events, task ratings, promotions and
    retrieval rows that named them stay, without them."""
    _require_admin(actor)
    report = DeletionReport(deleted=f"project {project_id}")
    with transaction.atomic():
        project = Project.objects.select_for_update().get(pk=project_id)
        event = feedback_detach_project(actor=actor, project_id=project.pk, name=project.name, counts=report.rows)
        report.deletion_event_ids.append(str(event.pk))
        for target in IntelligenceTarget.objects.filter(project=project).order_by("pk"):
            _target_detach(actor=actor, target=target, report=report)
        report.rows["accounts_project (with what cascades)"] = project.delete()[0]
    return report
