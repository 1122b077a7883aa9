"""Project intelligence's reads, with the access rules: targets, cards, packets and reviews follow
project membership (admins and the unlimited service read everything; a limited service key reads
its projects only)."""

from __future__ import annotations

from django.db.models import QuerySet

from accounts.actors import Actor
from accounts.selectors import project_list
from feedback.models import EventFamily, FeedbackEvent
from intelligence.models import (
    AttributionStatus,
    DocumentAttributionCandidate,
    InsightCard,
    IntelligencePacket,
    IntelligenceTarget,
)


def targets_visible(*, actor: Actor) -> QuerySet[IntelligenceTarget]:
    """Targets of the projects the actor may read."""
    return IntelligenceTarget.objects.filter(project__in=project_list(actor=actor).values("pk"))


def cards_visible(*, actor: Actor) -> QuerySet[InsightCard]:
    """Cards of the projects the actor may read."""
    return InsightCard.objects.filter(project__in=project_list(actor=actor).values("pk"))


def packet_current(*, actor: Actor, target: IntelligenceTarget) -> IntelligencePacket | None:
    """The target's current packet, if the actor may read its project and it has one."""
    if not project_list(actor=actor).filter(pk=target.project_id).exists():
        return None
    return IntelligencePacket.objects.filter(target=target, current=True).first()


def target_get(*, actor: Actor, target_id: int) -> IntelligenceTarget | None:
    """One target, if the actor may read its project."""
    return targets_visible(actor=actor).select_related("project").filter(pk=target_id).first()


def attribution_candidates(*, actor: Actor, status: str = AttributionStatus.CANDIDATE) -> QuerySet:
    """The attribution review queue (staff admins only: it shows documents of every project),
    oldest first, with the document and target each row shows."""
    if not actor.is_admin:
        return DocumentAttributionCandidate.objects.none()
    return (
        DocumentAttributionCandidate.objects.filter(status=status)
        .select_related("document", "target__project", "decided_by")
        .order_by("created_at", "pk")
    )


def attribution_candidate_get(*, actor: Actor, candidate_id: int) -> DocumentAttributionCandidate | None:
    """One candidate of any status, for a staff admin."""
    if not actor.is_admin:
        return None
    return (
        DocumentAttributionCandidate.objects.select_related("document", "target__project", "decided_by")
        .filter(pk=candidate_id)
        .first()
    )


def attribution_queue_targets() -> QuerySet[IntelligenceTarget]:
    """The active targets a reviewer may correct a candidate to."""
    return IntelligenceTarget.objects.filter(active=True).select_related("project").order_by("project__slug", "slug")


def attribution_activity(*, limit: int = 20) -> QuerySet:
    """The newest attribution events (automatic decisions and reviews), for the console."""
    return (
        FeedbackEvent.objects.filter(event_family=EventFamily.ATTRIBUTION)
        .select_related("user", "project")
        .order_by("-created_at")[:limit]
    )
