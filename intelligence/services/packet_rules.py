"""Packet rules (``intelligence_packet_rules``): created only by applying a ``packet_rule`` promotion,
paused, resumed and superseded with it. Each change queues one packet refresh per affected target,
so the next packet shows it."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction

from accounts.models import Project
from config.exceptions import ApplicationError, Conflict
from intelligence.models import CardType, IntelligencePacket, IntelligenceTarget, PacketRule, RuleStatus
from intelligence.services.packets import RULE_TYPES, SECTIONS
from intelligence.services.refresh import packet_refresh_request

SECTION_KEYS = [key for key, _, _ in SECTIONS]


def packet_rule_check(*, learning: dict[str, Any]) -> dict[str, Any]:
    """The proposed rule, checked: a known rule type with parameters of the right shape (400 otherwise)."""
    rule_type = learning.get("rule_type")
    parameters = learning.get("parameters")
    if rule_type not in RULE_TYPES:
        raise ApplicationError(f"rule_type must be one of {', '.join(RULE_TYPES)}.", field="proposed_learning")
    if not isinstance(parameters, dict):
        raise ApplicationError("parameters must be an object.", field="proposed_learning")
    if not isinstance(learning.get("description"), str) or not learning["description"].strip():
        raise ApplicationError("A packet rule needs a description (text).", field="proposed_learning")
    card_type = parameters.get("card_type")
    if rule_type == "section_order":
        order = parameters.get("order")
        if not isinstance(order, list) or len(order) < 2 or any(key not in SECTION_KEYS for key in order):
            raise ApplicationError(
                f"order must list two or more of {', '.join(SECTION_KEYS)}.", field="proposed_learning"
            )
    elif rule_type in ("card_type_rank", "stale_after_days", "confirming_source") and card_type not in CardType.values:
        raise ApplicationError(f"card_type must be one of {', '.join(CardType.values)}.", field="proposed_learning")
    if rule_type == "card_type_rank" and parameters.get("direction") not in ("up", "down"):
        raise ApplicationError("direction must be up or down.", field="proposed_learning")
    if rule_type == "stale_after_days":
        days = parameters.get("days")
        if not isinstance(days, int) or isinstance(days, bool) or not 1 <= days <= 3650:
            raise ApplicationError("days must be a whole number from 1 to 3650.", field="proposed_learning")
    if rule_type == "confirming_source":
        systems = parameters.get("source_systems")
        cap = parameters.get("confidence_cap", 0.5)
        if not isinstance(systems, list) or not systems or not all(isinstance(s, str) and s for s in systems):
            raise ApplicationError("source_systems must list source systems.", field="proposed_learning")
        if not isinstance(cap, int | float) or isinstance(cap, bool) or not 0 <= cap <= 1:
            raise ApplicationError("confidence_cap must be between 0 and 1.", field="proposed_learning")
    if rule_type == "coverage_watch" and not (
        isinstance(parameters.get("source_system"), str) and parameters["source_system"]
    ):
        raise ApplicationError("source_system must name a source system.", field="proposed_learning")
    return learning


def _refresh(*, project_id: int | None, reason: str) -> None:
    targets = IntelligenceTarget.objects.filter(active=True)
    if project_id is not None:
        targets = targets.filter(project_id=project_id)
    else:  # a global rule: every target that has a packet
        targets = targets.filter(pk__in=IntelligencePacket.objects.filter(current=True).values("target_id"))
    packet_refresh_request(target_ids=list(targets.values_list("pk", flat=True)), reason=reason)


def packet_rule_create(*, promotion_id: uuid.UUID, project: Project | None, learning: dict[str, Any]) -> PacketRule:
    """Create the rule an applied promotion describes (once per promotion), and refresh the packets."""
    existing = PacketRule.objects.filter(promotion_id=promotion_id).first()
    if existing is not None:
        return existing  # an apply delivered twice
    packet_rule_check(learning=learning)
    with transaction.atomic():
        rule = PacketRule.objects.create(
            project=project,
            rule_type=learning["rule_type"],
            parameters=learning["parameters"],
            description=str(learning["description"])[:2000],
            promotion_id=promotion_id,
        )
        _refresh(project_id=rule.project_id, reason=f"packet rule {rule.pk} applied")
    return rule


def packet_rule_set_status(*, promotion_id: uuid.UUID, status: str, missing_ok: bool = False) -> PacketRule | None:
    """Pause, resume or supersede the rule of a promotion, and refresh the packets it changes."""
    with transaction.atomic():
        rule = PacketRule.objects.select_for_update().filter(promotion_id=promotion_id).first()
        if rule is None:
            if missing_ok:
                return None
            raise Conflict("This promotion has no packet rule.", field="id")
        if rule.status != status and rule.status != RuleStatus.SUPERSEDED:
            rule.status = status
            rule.save(update_fields=["status", "updated_at"])
            _refresh(project_id=rule.project_id, reason=f"packet rule {rule.pk} {status}")
    return rule
