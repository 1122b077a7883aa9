"""Project intelligence's reads, with the access rules: targets, cards, packets and reviews follow
project membership (admins and the unlimited service read everything; a limited service key reads
its projects only)."""

from __future__ import annotations

from django.db.models import F, Prefetch, QuerySet

from accounts.actors import Actor
from accounts.selectors import project_list
from intelligence.models import (
    CardStatus,
    InsightCard,
    InsightCardEvidence,
    IntelligencePacket,
    IntelligencePacketCard,
    IntelligenceTarget,
    TargetKind,
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


def packet_evidence(
    *, actor: Actor, project_id: int, target_id: int | None = None, limit: int = 5
) -> list[dict[str, object]]:
    """The top cards of a target's current packet (the project's own target when ``target_id`` is
    None), in packet order, each with one evidence excerpt (its latest): what task generation is
    shown of the project. Empty when the actor may not read the project, the target is not the
    project's, or it has no packet yet. Two queries."""
    if not project_list(actor=actor).filter(pk=project_id).exists():
        return []
    targets = IntelligenceTarget.objects.filter(project_id=project_id, active=True)
    targets = targets.filter(pk=target_id) if target_id is not None else targets.filter(kind=TargetKind.PROJECT)
    entries = list(
        IntelligencePacketCard.objects.filter(
            packet__target__in=targets, packet__current=True, card__status=CardStatus.ACTIVE
        )
        .select_related("card", "packet")
        .prefetch_related(
            Prefetch(
                "card__evidence",
                queryset=InsightCardEvidence.objects.order_by(F("observed_at").desc(nulls_last=True), "-pk"),
            )
        )
        .order_by("position")[:limit]
    )
    found: list[dict[str, object]] = []
    for entry in entries:
        card = entry.card
        evidence = next(iter(card.evidence.all()), None)
        if evidence is None:
            continue  # a card exists only with evidence; one whose evidence went is not shown
        found.append(
            {
                "id": str(card.pk),
                "card_type": card.card_type,
                "title": card.title,
                "section": entry.section,
                "origin": card.origin,
                "target": entry.packet.target_id,
                "excerpt": evidence.excerpt[:500],
                "document_ref": evidence.document_ref,
                "source_system": evidence.source_system,
            }
        )
    return found


def target_id_of(*, project_id: int, slug: str) -> int | None:
    """The id of the project's target with this slug, if there is one (the caller checked access)."""
    return IntelligenceTarget.objects.filter(project_id=project_id, slug=slug).values_list("pk", flat=True).first()
