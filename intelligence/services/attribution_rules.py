"""Attribution rules: created only by applying an ``attribution_rule`` promotion, paused, resumed
and retired with it. An active rule is evidence for its target in every later attribution."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction

from config.exceptions import ApplicationError, Conflict
from intelligence.matching import fold, norm, participant_keys, path_prefixes
from intelligence.models import AttributionRule, IntelligenceTarget, RuleStatus

RULE_KINDS = ("alias", "title", "path", "participant", "domain", "source")


def rule_pattern_normalise(*, match_kind: str, pattern: str) -> str:
    """A rule's pattern in the form the matcher compares (see intelligence.matching)."""
    if match_kind not in RULE_KINDS:
        raise ApplicationError(f"match_kind must be one of {', '.join(RULE_KINDS)}.", field="match_kind")
    if not isinstance(pattern, str) or not pattern.strip() or len(pattern) > 300:
        raise ApplicationError("pattern is text of 1 to 300 characters.", field="pattern")
    if match_kind == "path":
        folders = path_prefixes(pattern.rstrip("/") + "/x")
        value = folders[-1] if folders else ""
    elif match_kind == "participant":
        keys = sorted(participant_keys(pattern), key=lambda key: ("@" not in key, key))
        value = keys[0] if keys else ""
    elif match_kind == "domain":
        value = fold(pattern).strip().lstrip("@")
        value = value if "." in value and " " not in value else ""
    else:
        value = norm(pattern)
    if not value:
        raise ApplicationError(f"{pattern!r} is not a usable {match_kind} pattern.", field="pattern")
    return value


def attribution_rule_create(*, promotion_id: Any, learning: dict[str, Any]) -> AttributionRule:
    """Create the active rule an applied promotion describes ({match_kind, pattern, target_id})."""
    target_id = learning.get("target_id")
    target = (
        IntelligenceTarget.objects.filter(pk=target_id, active=True).first() if isinstance(target_id, int) else None
    )
    if target is None:
        raise ApplicationError(f"No active target {learning.get('target_id')}.", field="target_id")
    match_kind = str(learning.get("match_kind", ""))
    pattern = rule_pattern_normalise(match_kind=match_kind, pattern=str(learning.get("pattern", "")))
    try:
        with transaction.atomic():
            return AttributionRule.objects.create(
                target=target, match_kind=match_kind, pattern=pattern, promotion_id=promotion_id
            )
    except IntegrityError as exc:
        raise Conflict(f"An active {match_kind} rule for {pattern!r} exists already.", field="pattern") from exc


def attribution_rule_set_status(*, promotion_id: Any, status: str, missing_ok: bool = False) -> AttributionRule | None:
    """Pause, resume or retire (supersede) the rule a promotion created."""
    with transaction.atomic():
        rule = AttributionRule.objects.select_for_update().filter(promotion_id=promotion_id).first()
        if rule is None:
            if missing_ok:
                return None
            raise ApplicationError("This promotion has no attribution rule.", field="promotion")
        if rule.status == RuleStatus.SUPERSEDED:
            return rule  # retired for good
        rule.status = status
        try:
            with transaction.atomic():
                rule.save(update_fields=["status", "updated_at"])
        except IntegrityError as exc:
            raise Conflict(f"Another active rule for {rule.pattern!r} exists now.", field="pattern") from exc
    return rule
