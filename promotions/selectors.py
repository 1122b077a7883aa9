"""Reads of the promotion ledger and its scan runs (staff admins only)."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from accounts.actors import Actor
from config.exceptions import AccessDenied
from core.ids import parse_uuid
from feedback.models import FeedbackEvent
from promotions.models import LearningPromotion, ScanRun
from retrieval.models import RetrievalWeight


def _require_admin(actor: Actor) -> None:
    if not actor.is_admin:
        raise AccessDenied("Only staff admins review promotions.")


def promotion_list(*, actor: Actor) -> QuerySet[LearningPromotion]:
    """Every promotion, newest first, with what the list shows joined in (no N+1)."""
    _require_admin(actor)
    return LearningPromotion.objects.select_related("project", "reviewed_by").order_by("-created_at", "-id")


def promotion_get(*, actor: Actor, promotion_id: str) -> LearningPromotion | None:
    """One promotion, with its project, reviewer, target and replacement joined in."""
    return promotion_list(actor=actor).select_related("target", "superseded_by").filter(pk=promotion_id).first()


def scan_run_list(*, actor: Actor) -> QuerySet[ScanRun]:
    """Every scan run, latest first, with who asked for it joined in."""
    _require_admin(actor)
    return ScanRun.objects.select_related("requested_by").order_by("-created_at", "-id")


def scan_run_get(*, actor: Actor, scan_run_id: str) -> ScanRun | None:
    """One scan run (None for an id that is not one)."""
    parsed = parse_uuid(scan_run_id)
    return scan_run_list(actor=actor).filter(pk=parsed).first() if parsed else None


def scan_run_latest(*, actor: Actor) -> ScanRun | None:
    """The latest scan run, whatever its scanner (the console shows it). One query."""
    return scan_run_list(actor=actor).first()


def console_metrics() -> dict[str, int]:
    """The console's counters: two aggregate queries, whatever the number of rows."""
    promotions = LearningPromotion.objects.aggregate(
        candidates=Count("id", filter=Q(status="candidate")),
        approvals=Count("id", filter=Q(status="approved")),
        applied=Count("id", filter=Q(status="applied")),
        superseded=Count("id", filter=Q(status="superseded")),
    )
    weights = RetrievalWeight.objects.aggregate(
        active_weights=Count("id", filter=Q(status="active")),
        paused_weights=Count("id", filter=Q(status="paused")),
        orphaned_weights=Count("id", filter=Q(status="orphaned")),
    )
    activity = FeedbackEvent.objects.filter(
        subject_type="promotion", created_at__gte=timezone.now() - timedelta(days=7)
    ).count()
    return {**promotions, **weights, "audit_activity_7d": activity}


def retrieval_weight_of(*, promotion: LearningPromotion) -> RetrievalWeight | None:
    """The weight a retrieval_weight promotion made, if any (the console shows its status: an orphaned
    one can only be superseded)."""
    if promotion.promotion_type != "retrieval_weight":
        return None
    return RetrievalWeight.objects.filter(promotion_id=promotion.pk).only("pk", "status", "document_id").first()


def promotion_activity(*, promotion_id: str | None = None, limit: int = 20) -> QuerySet:
    """The audit trail: promotion lifecycle events, newest first (one query)."""
    qs = FeedbackEvent.objects.filter(subject_type="promotion").select_related("user").order_by("-created_at")
    if promotion_id:
        qs = qs.filter(subject_id=promotion_id)
    return qs[:limit]
