"""Promotions' shared helpers: moving a promotion through review as the staff admin."""

from __future__ import annotations

from promotions.models import LearningPromotion
from promotions.services import promotion_transition
from tests.conftest import World


def promote(world: World, promotion: LearningPromotion | str, *actions: str) -> LearningPromotion:
    """Apply ``actions`` (e.g. "approve", "apply") in order as the admin; the promotion as it is then."""
    promotion_id = str(promotion.pk if isinstance(promotion, LearningPromotion) else promotion)
    for action in actions:
        promotion_transition(actor=world.actor("admin"), promotion_id=promotion_id, action=action)
    return LearningPromotion.objects.get(pk=promotion_id)
