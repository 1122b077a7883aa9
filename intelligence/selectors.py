"""Project intelligence's reads, with the access rules: targets, cards, packets and reviews follow
project membership (admins and the unlimited service read everything; a limited service key reads
its projects only)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Exists, F, OuterRef, Prefetch, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from accounts.actors import Actor
from accounts.models import Project
from accounts.selectors import project_list
from feedback.models import EventFamily, FeedbackEvent
from intelligence.models import (
    AttributionStatus,
    CardStatus,
    DocumentAttributionCandidate,
    InsightCard,
    InsightCardEvidence,
    IntelligencePacket,
    IntelligencePacketCard,
    IntelligenceReview,
    IntelligenceTarget,
    ReviewStatus,
    TargetKind,
)
from retrieval.models import Document


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


# --- the packet/card loop: packets by section, cards with evidence, the review queue -----------


@dataclass(frozen=True)
class PacketEntryView:
    card: InsightCard
    why: str
    evidence_total: int


@dataclass(frozen=True)
class PacketSectionView:
    key: str
    title: str
    entries: list[PacketEntryView]


@dataclass(frozen=True)
class PacketView:
    """A target's current packet as readers see it (``packet`` None: never built yet)."""

    target: IntelligenceTarget
    packet: IntelligencePacket | None
    sections: list[PacketSectionView]
    coverage: dict[str, list[Any]]


COVERAGE_KEYS = ("fed", "stale", "missing")


def project_readable(*, actor: Actor, slug: str) -> Project | None:
    """The project named ``slug`` if the actor may read it (None otherwise: no leak of existence)."""
    return project_list(actor=actor).filter(slug=slug).first()


def target_readable(*, actor: Actor, project_slug: str, target_slug: str | None = None) -> IntelligenceTarget | None:
    """A target of a project the actor may read: ``target_slug``, or the project's root target."""
    project = project_readable(actor=actor, slug=project_slug)
    return target_of_project(project=project, target_slug=target_slug) if project is not None else None


def target_of_project(*, project: Project, target_slug: str | None = None) -> IntelligenceTarget | None:
    """A project's target named ``target_slug``, or its root target (the caller checked access)."""
    targets = IntelligenceTarget.objects.filter(project=project).select_related("project")
    if target_slug:
        return targets.filter(slug=target_slug).first()
    return targets.filter(kind=TargetKind.PROJECT).first()


def targets_of_project(*, project: Project) -> QuerySet[IntelligenceTarget]:
    """A project's targets (the page's target picker)."""
    return IntelligenceTarget.objects.filter(project=project, active=True).order_by("kind", "slug")


def packet_view(*, target: IntelligenceTarget) -> PacketView:
    """The target's current packet, its cards in section order with why each is there (two queries:
    the packet, and its entries with their cards and evidence counts). The caller checked access."""
    packet = IntelligencePacket.objects.filter(target=target, current=True).first()
    if packet is None:
        return PacketView(target=target, packet=None, sections=[], coverage={key: [] for key in COVERAGE_KEYS})
    entries = (
        IntelligencePacketCard.objects.filter(packet=packet)
        .select_related("card", "card__target")
        .annotate(
            evidence_total=Coalesce(
                Subquery(
                    InsightCardEvidence.objects.filter(card=OuterRef("card"))
                    .values("card")
                    .annotate(n=Count("pk"))
                    .values("n")[:1]
                ),
                0,
            )
        )
        .order_by("position")
    )
    by_section: dict[str, list[PacketEntryView]] = {}
    for entry in entries:
        by_section.setdefault(entry.section, []).append(
            PacketEntryView(card=entry.card, why=entry.why, evidence_total=entry.evidence_total)
        )
    sections = [
        PacketSectionView(
            key=section["key"], title=section.get("title", section["key"]), entries=by_section[section["key"]]
        )
        for section in packet.sections
        if section.get("key") in by_section
    ]
    coverage = packet.source_coverage if isinstance(packet.source_coverage, dict) else {}
    return PacketView(
        target=target,
        packet=packet,
        sections=sections,
        coverage={key: list(coverage.get(key) or []) for key in COVERAGE_KEYS},
    )


def card_readable(*, actor: Actor, card_id: str) -> InsightCard | None:
    """A card of a project the actor may read, with its project (what a mark on it needs)."""
    return cards_visible(actor=actor).select_related("project").filter(pk=card_id).first()


def card_get(*, actor: Actor, card_id: str) -> InsightCard | None:
    """A card of a project the actor may read, with its evidence and their documents."""
    return (
        cards_visible(actor=actor)
        .select_related("project", "target")
        .prefetch_related(
            Prefetch(
                "evidence",
                queryset=InsightCardEvidence.objects.select_related("document").order_by("-observed_at", "pk"),
            )
        )
        .filter(pk=card_id)
        .first()
    )


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


def document_of_project(*, project: Project, document_id: str) -> Document | None:
    """A document that backs evidence of a card in ``project`` (what a packet's source link opens)."""
    backing = InsightCardEvidence.objects.filter(card__project=project, document_id=document_id)
    return Document.objects.filter(pk=document_id).filter(Exists(backing)).first()


def reviews_list(*, actor: Actor) -> QuerySet[IntelligenceReview]:
    """Card reviews (staff admins only: anyone else sees none), with their cards and evidence, so a
    page of them costs a fixed number of queries."""
    if not actor.is_admin:
        return IntelligenceReview.objects.none()
    return IntelligenceReview.objects.select_related(
        "card", "card__target", "project", "requested_by", "reviewer"
    ).prefetch_related(
        Prefetch("card__evidence", queryset=InsightCardEvidence.objects.select_related("document").order_by("pk"))
    )


def reviews_counts(*, actor: Actor) -> dict[str, int]:
    """How many card reviews each status tab holds (staff admins; zeros for anyone else). One query."""
    if not actor.is_admin:
        return dict.fromkeys(ReviewStatus.values, 0)
    return IntelligenceReview.objects.aggregate(
        **{status: Count("pk", filter=Q(status=status)) for status in ReviewStatus.values}
    )


def attribution_counts(*, actor: Actor) -> dict[str, int]:
    """How many attribution candidates each status tab holds (staff admins; zeros for anyone else). One query."""
    if not actor.is_admin:
        return dict.fromkeys(AttributionStatus.values, 0)
    return DocumentAttributionCandidate.objects.aggregate(
        **{status: Count("pk", filter=Q(status=status)) for status in AttributionStatus.values}
    )


def review_get(*, actor: Actor, review_id: str) -> IntelligenceReview | None:
    """One card review, for staff admins."""
    return reviews_list(actor=actor).filter(pk=review_id).first()


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
