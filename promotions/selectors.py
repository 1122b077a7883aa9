"""Reads of the promotion ledger (staff admins only)."""

from __future__ import annotations

from django.db.models import QuerySet

from accounts.actors import Actor
from config.exceptions import AccessDenied
from promotions.models import LearningPromotion


def promotion_list(*, actor: Actor) -> QuerySet[LearningPromotion]:
    """Every promotion, newest first, with what the list shows joined in (no N+1)."""
    if not actor.is_admin:
        raise AccessDenied("Only staff admins review promotions.")
    return LearningPromotion.objects.select_related("project", "reviewed_by").order_by("-created_at", "-id")


def promotion_get(*, actor: Actor, promotion_id: str) -> LearningPromotion | None:
    return promotion_list(actor=actor).filter(pk=promotion_id).first()
