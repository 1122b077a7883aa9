"""A project's packet/card loop, ready to use: the root target and a building, cards with evidence
(one source with its own url, one without), a current packet, and an open review."""

from __future__ import annotations

from dataclasses import dataclass

from accounts.models import Project
from intelligence.models import (
    CardType,
    InsightCard,
    InsightCardEvidence,
    IntelligencePacket,
    IntelligenceReview,
    IntelligenceTarget,
    ReviewKind,
    TargetKind,
)
from intelligence.services.packets import packet_build
from intelligence.services.targets import target_for_project
from tests import factories


@dataclass
class Loop:
    root: IntelligenceTarget
    wing: IntelligenceTarget
    blocker: InsightCard  # two pieces of evidence: a mail with a url, a meeting note without
    risk: InsightCard
    evidence_with_url: InsightCardEvidence
    evidence_without_url: InsightCardEvidence
    packet: IntelligencePacket


def loop_build(project: Project) -> Loop:
    root = target_for_project(project=project)
    wing = factories.IntelligenceTargetFactory(project=project, kind=TargetKind.BUILDING, slug="north-wing")
    blocker = factories.InsightCardFactory(
        target=root, card_type=CardType.BLOCKER, title="Crane permit blocks the steel erection", evidence_count=2
    )
    with_url = factories.InsightCardEvidenceFactory(
        card=blocker,
        document=factories.DocumentFactory(
            id=f"{project.slug}-mail-1", project=project, title="Re: crane permit", url="https://mail.example/1"
        ),
        excerpt="The city has not issued the crane permit; steel cannot start.",
    )
    without_url = factories.InsightCardEvidenceFactory(
        card=blocker,
        document=factories.DocumentFactory(
            id=f"{project.slug}-minutes/2025-03-04",
            project=project,
            title="Site meeting minutes",
            source_system="meetings",
            raw_text="Minutes. Crane permit still pending; steel erection on hold.",
        ),
        source_system="meetings",
        excerpt="Crane permit still pending; steel erection on hold.",
    )
    risk = factories.InsightCardFactory(
        target=root, card_type=CardType.RISK, title="North wing glazing may arrive late"
    )
    factories.InsightCardEvidenceFactory(card=risk, excerpt="Glazing for the north wing ships two weeks late.")
    packet = packet_build(target=root, reason="seed")
    return Loop(root, wing, blocker, risk, with_url, without_url, packet)


def loop_access_ids(project: Project) -> dict[str, object]:
    """The ids the access matrix fills the intelligence routes with."""
    loop = loop_build(project)
    review = IntelligenceReview.objects.create(
        card=loop.risk, project=project, kind=ReviewKind.STALE, reason="shipped already"
    )
    return {"card": loop.blocker.pk, "merge_card": loop.risk.pk, "card_review": review.pk}
