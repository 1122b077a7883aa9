"""Project intelligence's reads, with the access rules: targets, cards, packets and reviews follow
project membership (admins and the unlimited service read everything; a limited service key reads
its projects only)."""

from __future__ import annotations

from django.db.models import QuerySet

from accounts.actors import Actor
from accounts.selectors import project_list
from intelligence.models import InsightCard, IntelligencePacket, IntelligenceTarget


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
