"""Learned and stated preferences: learn, add by hand, switch on or off, forget, decay."""

from __future__ import annotations

from datetime import timedelta

from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone
from django.utils.text import slugify

from accounts.models import User
from config.exceptions import ApplicationError
from feedback.models import EventFamily, Signal
from learning.analyzer import catalog
from learning.analyzer.base import (
    PreferenceFinding,
)
from learning.conf import learning_settings
from learning.context.cache import context_invalidate_all
from learning.models import PREFERENCE_CATEGORIES, ChatMessage, Preference
from learning.safety import steering_reasons
from learning.services.common import changed_after_commit, message_event_record, reinforced, steering_flag


def preference_learn(*, user: User, finding: PreferenceFinding, source_message: ChatMessage | None) -> Preference:
    """Create or reinforce a learned preference; a contradicting older one is deactivated."""
    if finding.category not in PREFERENCE_CATEGORIES:
        raise ApplicationError(f"Unknown preference category {finding.category!r}.", field="category")
    slug = slugify(finding.preference).replace("-", "_")[:100] or "custom"
    now = timezone.now()
    with transaction.atomic():
        preference = (
            Preference.objects.select_for_update().filter(user=user, category=finding.category, preference=slug).first()
        )
        if preference is None:
            try:
                with transaction.atomic():
                    preference = Preference.objects.create(
                        user=user,
                        category=finding.category,
                        preference=slug,
                        description=finding.description[:500],
                        source_message=source_message,
                        confidence=round(min(0.9, max(0.3, finding.confidence)), 4),
                        last_reinforced_at=now,
                        needs_review=bool(steering_reasons(finding.description)),
                    )
                created = True
                if preference.needs_review:
                    steering_flag(
                        user=user, text=preference.description, subject_type="preference", subject_id=str(preference.pk)
                    )
            except IntegrityError:
                preference = Preference.objects.select_for_update().get(
                    user=user, category=finding.category, preference=slug
                )
                created = False
        else:
            created = False
        if not created:
            preference.confidence = round(reinforced(preference.confidence, finding.confidence), 4)
            preference.times_reinforced = F("times_reinforced") + 1
            preference.last_reinforced_at = now
            fields = ["confidence", "times_reinforced", "last_reinforced_at", "updated_at"]
            # Said again: back on, unless the user switched it off themself.
            if not preference.active and preference.inactive_reason != "user":
                preference.active, preference.inactive_reason, preference.superseded_by = True, "", None
                fields += ["active", "inactive_reason", "superseded_by"]
            preference.save(update_fields=fields)
            preference.refresh_from_db(fields=["times_reinforced"])
        changed_after_commit(user.pk)
        opposite = catalog.opposite_of(slug)
        if opposite and preference.active:
            Preference.objects.filter(user=user, category=finding.category, preference=opposite, active=True).update(
                active=False, inactive_reason="contradicted", superseded_by=preference, updated_at=now
            )
        if source_message is not None:
            message_event_record(
                source_message,
                "preference",
                event_type="preference_learned" if created else "preference_reinforced",
                event_family=EventFamily.USER_PREFERENCE,
                signal=Signal.POSITIVE,
                subject_type="preference",
                subject_id=str(preference.pk),
                after_snapshot={
                    "category": preference.category,
                    "preference": preference.preference,
                    "confidence": preference.confidence,
                    "times_reinforced": preference.times_reinforced,
                },
            )
    return preference


def preference_add_manual(*, user: User, category: str, preference: str, description: str) -> tuple[Preference, bool]:
    """A preference the user wrote themself; (row, created). An existing one is updated and switched on."""
    if category not in PREFERENCE_CATEGORIES:
        raise ApplicationError(
            f"Unknown category {category!r}; expected one of {', '.join(PREFERENCE_CATEGORIES)}.", field="category"
        )
    slug = slugify(preference).replace("-", "_")[:100]
    if not slug:
        raise ApplicationError("preference must contain letters or digits.", field="preference")
    description = (description or "").strip() or preference.strip()
    if len(description) > 500:
        raise ApplicationError("description is at most 500 characters.", field="description")
    now = timezone.now()
    with transaction.atomic():
        row, created = Preference.objects.select_for_update().get_or_create(
            user=user,
            category=category,
            preference=slug,
            defaults={
                "description": description,
                "source": Preference.Source.MANUAL,
                "confidence": 0.9,
                "last_reinforced_at": now,
            },
        )
        if not created:
            row.description, row.active, row.inactive_reason, row.last_reinforced_at = description, True, "", now
        row.needs_review = steering_flag(
            user=user, text=f"{preference} {description}", subject_type="preference", subject_id=str(row.pk)
        )
        row.save(
            update_fields=[
                "description",
                "active",
                "inactive_reason",
                "last_reinforced_at",
                "needs_review",
                "updated_at",
            ]
        )
        changed_after_commit(user.pk)
        opposite = catalog.opposite_of(slug)
        if opposite:
            Preference.objects.filter(user=user, category=category, preference=opposite, active=True).update(
                active=False, inactive_reason="contradicted", superseded_by=row, updated_at=now
            )
    return row, created


def preference_set_active(*, preference: Preference, active: bool) -> Preference:
    """Switch a preference on or off at the user's request."""
    with transaction.atomic():
        row = Preference.objects.select_for_update().get(pk=preference.pk)
        row.active = active
        row.inactive_reason = "" if active else "user"
        if active:
            row.last_reinforced_at = timezone.now()  # a check-in confirmation counts as a sighting
        row.save(update_fields=["active", "inactive_reason", "last_reinforced_at", "updated_at"])
        changed_after_commit(row.user_id)
    return row


def preference_delete(*, preference: Preference) -> None:
    """Forget a preference (the feedback stream keeps the history of how it was learned)."""
    with transaction.atomic():
        Preference.objects.filter(pk=preference.pk).delete()
        changed_after_commit(preference.user_id)


def preferences_decay(*, now: object = None) -> tuple[int, int]:
    """Lower the confidence of learned preferences not reinforced lately; those that fall under
    the floor go inactive (kept, and listed for a check-in). Two set-based updates."""
    now = now or timezone.now()
    stale = Preference.objects.filter(
        active=True,
        source=Preference.Source.LEARNED,
        last_reinforced_at__lt=now - timedelta(days=learning_settings.PREFERENCE_DECAY_AFTER_DAYS),  # type: ignore[operator]
    )
    decayed = stale.update(confidence=F("confidence") * learning_settings.PREFERENCE_DECAY_FACTOR, updated_at=now)
    deactivated = Preference.objects.filter(
        Q(active=True, source=Preference.Source.LEARNED, confidence__lt=learning_settings.PREFERENCE_DECAY_FLOOR)
    ).update(active=False, inactive_reason="decayed", updated_at=now)
    if decayed or deactivated:
        context_invalidate_all()
    return decayed, deactivated
