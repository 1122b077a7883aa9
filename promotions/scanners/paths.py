"""What the scanners of the automatic paths share: which evidence is already spent, proposing a
candidate or reinforcing the open one built from the same evidence, and the automatic approval of
those that are low risk (``promotions.services.promotion_auto_promote``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from accounts.actors import Actor
from promotions.models import AUTOMATIC_PATHS, LearningPromotion, PromotionStatus
from promotions.services import Proposal, promotion_auto_promote, promotion_reinforce, promotions_propose_bulk


@dataclass
class PathCounts:
    proposed: int = 0
    reinforced: int = 0
    applied: int = 0
    waiting: int = 0  # automatic-path candidates left for a person (their risk is not low)


def evidence_spent(*, promotion_type: str, subject_types: Sequence[str], since: datetime) -> set[str]:
    """Evidence ids behind promotions of this type that are no longer open candidates (decided,
    applied, expired…): a scan never counts them again. Evidence behind an open candidate stays in
    play, so new similar evidence reinforces that candidate. A promotion is younger than its evidence,
    so only those opened since ``since`` can cite evidence the scan reads."""
    rows = (
        LearningPromotion.objects.filter(
            promotion_type=promotion_type, subject_type__in=subject_types, created_at__gte=since
        )
        .exclude(status=PromotionStatus.CANDIDATE)
        .values_list("source_event_ids", flat=True)
    )
    return {str(event_id) for ids in rows for event_id in ids or []}


def open_candidates(*, promotion_type: str, subject_types: Sequence[str]) -> dict[str, LearningPromotion]:
    """Open candidates of this type by each evidence id they cite."""
    found: dict[str, LearningPromotion] = {}
    for promotion in LearningPromotion.objects.filter(
        promotion_type=promotion_type, subject_type__in=subject_types, status=PromotionStatus.CANDIDATE
    ):
        for event_id in promotion.source_event_ids or []:
            found.setdefault(str(event_id), promotion)
    return found


def proposals_submit(
    *, actor: Actor, promotion_type: str, subject_type: str, proposals: Sequence[Proposal]
) -> PathCounts:
    """Each proposal reinforces the open candidate that cites any of its evidence (or is about its
    subject), or opens a new
    one (never a duplicate open candidate: the ledger's partial unique index decides). Then every
    candidate of an automatic path is approved and applied if it is low risk, else left waiting."""
    counts = PathCounts()
    by_evidence = open_candidates(promotion_type=promotion_type, subject_types=[subject_type])
    by_subject = {p.subject_id: p for p in by_evidence.values()}
    by_subject.update(
        (p.subject_id, p)
        for p in LearningPromotion.objects.filter(
            promotion_type=promotion_type,
            subject_type=subject_type,
            subject_id__in=[proposal.subject_id for proposal in proposals],
            status=PromotionStatus.CANDIDATE,
        )
    )
    fresh: list[Proposal] = []
    touched: list[LearningPromotion] = []
    for proposal in proposals:
        existing = next((by_evidence[e] for e in proposal.source_event_ids if e in by_evidence), None)
        existing = existing or by_subject.get(proposal.subject_id)
        if existing is None:
            fresh.append(proposal)
            continue
        before = (sorted(map(str, existing.source_event_ids or [])), existing.promotion_path, existing.risk_level)
        reinforced = promotion_reinforce(
            actor=actor,
            promotion_id=str(existing.pk),
            proposed_learning=proposal.proposed_learning,
            source_event_ids=proposal.source_event_ids,
            confidence=proposal.confidence,
            risk_level=proposal.risk_level,
            promotion_path=proposal.promotion_path,
            rule=proposal.rule,
        )
        if reinforced is not None:
            after = (sorted(map(str, reinforced.source_event_ids)), reinforced.promotion_path, reinforced.risk_level)
            counts.reinforced += before != after
            touched.append(reinforced)
    opened = promotions_propose_bulk(
        actor=actor, promotion_type=promotion_type, subject_type=subject_type, proposals=fresh
    )
    counts.proposed = len(opened)
    for promotion in [*touched, *opened]:
        if promotion.promotion_path not in AUTOMATIC_PATHS:
            continue
        if promotion_auto_promote(promotion_id=str(promotion.pk)).status == PromotionStatus.APPLIED:
            counts.applied += 1
        else:
            counts.waiting += 1
    return counts
