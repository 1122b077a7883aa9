"""Learned and stated preferences: learn, add by hand, switch on or off, forget, decay, undo.

Preferences are open-ended: a row keeps what the user asked for in their words. A new one is
compared with the user's existing ones by embedding similarity: a paraphrase reinforces the row
it matches instead of making another. Canonical axes ("length:short" / "length:long") only serve
to find contradictions: the newer preference supersedes the older, which is kept inactive.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone
from django.utils.text import slugify

from accounts.models import User
from config.exceptions import ApplicationError, NotFoundError
from core.embeddings import get_embedder
from core.text import content_words, digest, stem
from feedback.models import EventFamily, Signal
from learning.analyzer import get_analyzer
from learning.analyzer.base import AnalyzerInput, PreferenceFinding
from learning.conf import learning_settings
from learning.context.cache import context_invalidate_all
from learning.models import PREFERENCE_CATEGORIES, ChatMessage, Preference
from learning.services.common import (
    changed_after_commit,
    message_event_record,
    reinforced,
    steering_flag,
    user_writer_lock,
)
from learning.services.undo import fields_snapshot, row_restore, row_snapshot, undo_record, undo_take

AXIS_PATTERN = re.compile(r"^[a-z_]{1,30}:[a-z_]{1,30}$")
# An instruction that opens by forbidding ("Don't use emojis") and one that asks ("Use emoji
# freely") embed close together (0.79 on the labelled set): opposite polarity is never one preference.
NEGATED = re.compile(r"^\W*(don'?t|do not|never|no|avoid|stop|skip|quit|without|less)\b", re.IGNORECASE)
DEFAULT_CATEGORY = "behavior"
# What a contradiction, a switch and a reinforcement change on a row: what an undo puts back.
STATE_FIELDS = ["active", "inactive_reason", "superseded_by_id", "superseded_at"]
SWITCH_FIELDS = [*STATE_FIELDS, "last_reinforced_at"]
REINFORCE_FIELDS = [*SWITCH_FIELDS, "confidence", "times_reinforced", "candidate", "axis"]
# Keys an analyzer may still send from the old catalogue, and the canonical axis each lies on
# (the same table the 0007 migration applied to stored rows).
AXIS_OF_KEY = {
    "concise": "length:short",
    "detailed": "length:long",
    "formal": "tone:formal",
    "casual": "tone:casual",
    "expert": "expertise:expert",
    "beginner": "expertise:basic",
    "basic": "expertise:basic",
    "bullet_points": "format:bullets",
    "bullets": "format:bullets",
    "prose": "format:prose",
    "tables": "format:table",
    "ask_clarifying": "followups:ask",
    "no_clarifying": "followups:none",
}


@dataclass(frozen=True)
class Stated:
    """A preference as said, before it is stored."""

    category: str
    description: str
    axis: str
    confidence: float
    source: str
    key: str = ""  # the analyzer's key, when it sent one


def preference_key(description: str) -> str:
    """The stable key of a new preference: a slug of its first wording and a short digest."""
    slug = slugify(description)[:80].strip("-") or "preference"
    return f"{slug}-{digest(description.strip().lower())[:8]}"


def _axis(value: str | None) -> str:
    value = (value or "").strip().lower()
    return value if AXIS_PATTERN.match(value) else ""


def _contradicts(axis: str, other: str) -> bool:
    """Same canonical axis, another pole ("tone:formal" against "tone:casual")."""
    return bool(axis and other) and axis.split(":")[0] == other.split(":")[0] and axis != other


def _same_polarity(a: str, b: str) -> bool:
    return bool(NEGATED.match(a)) == bool(NEGATED.match(b))


def _value_swapped(a: str, b: str) -> bool:
    """The same sentence with another value ("Give temperatures in Celsius." / "... in Fahrenheit.",
    0.89 apart): each side has words the other lacks, and at least half their words are shared.
    Real paraphrases mostly reword more than that; the few this keeps apart just make a second row."""
    words_a, words_b = ({stem(w) for w in content_words(text)} for text in (a, b))
    if not (words_a - words_b) or not (words_b - words_a):
        return False
    return len(words_a & words_b) / len(words_a | words_b) >= 0.5


def preference_text(description: str) -> str:
    """A description as it is stored and embedded: single spaces, at most 500 characters."""
    return " ".join(description.split())[:500]


def preference_embed_missing(user: User) -> None:
    """Rows from before open-set preferences (or written without a vector) get theirs now, in one batch."""
    missing = list(Preference.objects.filter(user=user, embedding__isnull=True).values_list("pk", "description"))
    if not missing:
        return
    vectors = get_embedder().embed([description for _, description in missing])
    for (pk, _), vector in zip(missing, vectors, strict=True):
        Preference.objects.filter(pk=pk, embedding__isnull=True).update(embedding=vector.astype(np.float32).tobytes())


def _match(rows: list[Preference], stated: Stated, vector: np.ndarray) -> Preference | None:
    """The existing row this statement says again: the same axis and pole, else the most similar
    description at PREFERENCE_SAME_SIMILARITY or above with the same polarity, not the same sentence
    with another value, and no contradicting axis.
    A key the analyzer sent matches its row first."""
    if stated.key:
        same_key = [row for row in rows if row.preference == stated.key]
        if same_key:
            return same_key[0]
    if stated.axis:
        same_pole = [row for row in rows if row.axis == stated.axis]
        if same_pole:
            return max(same_pole, key=lambda row: (row.active, row.last_reinforced_at))
    best, best_similarity = None, learning_settings.PREFERENCE_SAME_SIMILARITY
    for row in rows:
        if row.embedding is None or _contradicts(stated.axis, row.axis):
            continue
        if not _same_polarity(stated.description, row.description) or _value_swapped(
            stated.description, row.description
        ):
            continue
        similarity = float(np.dot(vector, row.embedding))
        if similarity >= best_similarity:
            best, best_similarity = row, similarity
    return best


def _store(
    *, user: User, stated: Stated, vector: np.ndarray, source_message: ChatMessage | None, undoable: bool = False
) -> tuple[Preference, bool]:
    """Reinforce the row this statement paraphrases, or create one; then supersede contradicted rows.
    ``undoable``: the user did this, so it records what it replaced for an undo."""
    now = timezone.now()
    manual = stated.source == Preference.Source.MANUAL
    candidate = not manual and stated.confidence < learning_settings.PREFERENCE_MIN_CONFIDENCE
    with transaction.atomic():
        user_writer_lock(user.pk)  # two workers must not both create the same new preference
        rows = list(Preference.objects.filter(user=user))
        row = _match(rows, stated, vector)
        created = row is None
        before = None if row is None else fields_snapshot(row, REINFORCE_FIELDS)
        if row is None:
            row = Preference.objects.create(
                user=user,
                category=stated.category,
                preference=stated.key or preference_key(stated.description),
                description=stated.description,
                axis=stated.axis,
                embedding=vector,
                source_message=source_message,
                confidence=round(min(0.9, max(0.05, stated.confidence)), 4),
                source=stated.source,
                candidate=candidate,
                last_reinforced_at=now,
            )
            row.needs_review = steering_flag(
                user=user, text=row.description, subject_type="preference", subject_id=str(row.pk)
            )
            if row.needs_review:
                row.save(update_fields=["needs_review"])
        else:
            row.confidence = round(reinforced(row.confidence, stated.confidence), 4)
            row.times_reinforced = F("times_reinforced") + 1
            row.last_reinforced_at = now
            fields = ["confidence", "times_reinforced", "last_reinforced_at", "updated_at"]
            if row.candidate and (manual or row.confidence >= learning_settings.PREFERENCE_MIN_CONFIDENCE):
                row.candidate = False
                fields.append("candidate")
            if stated.axis and not row.axis:
                row.axis = stated.axis
                fields.append("axis")
            # Said again: back on, unless the user switched it off themself (adding it by hand is
            # the user saying so).
            if not row.active and (manual or row.inactive_reason != "user"):
                row.active, row.inactive_reason, row.superseded_by, row.superseded_at = True, "", None, None
                fields += ["active", "inactive_reason", "superseded_by", "superseded_at"]
            row.save(update_fields=fields)
            row.refresh_from_db(fields=["times_reinforced"])
        superseded = _supersede_contradicted(row, rows, now=now)
        if undoable:
            undo_record(
                user_id=user.pk,
                subject_type="preference",
                subject_id=row.pk,
                action="added",
                before={"created": created, "row": before, "others": superseded},
            )
        changed_after_commit(user.pk)
    return row, created


def _supersede_contradicted(row: Preference, rows: list[Preference], *, now: datetime) -> list[dict]:
    """An applied preference on a canonical axis supersedes the active ones with another pole
    (kept, inactive, pointing at it); their state before, for an undo."""
    if not (row.active and not row.candidate and row.axis):
        return []
    contradicted = [other for other in rows if other.active and _contradicts(row.axis, other.axis)]
    Preference.objects.filter(pk__in=[other.pk for other in contradicted]).update(
        active=False, inactive_reason="contradicted", superseded_by=row, superseded_at=now, updated_at=now
    )
    return [{"id": other.pk, **fields_snapshot(other, STATE_FIELDS)} for other in contradicted]


def _put_back(pk: int, values: dict, *, now: datetime) -> int:
    """Columns of a row as an undo entry kept them (``updated_at``: now, the undo is a change too)."""
    fields = {f.attname: f for f in Preference._meta.concrete_fields}
    parsed = {name: fields[name].to_python(value) for name, value in values.items()}
    newer = parsed.get("superseded_by_id")
    if newer is not None and not Preference.objects.filter(pk=newer).exists():
        parsed["superseded_by_id"] = None  # the preference that had replaced it is gone since
    return Preference.objects.filter(pk=pk).update(**parsed, updated_at=now)


def preference_prepare(*, user: User, description: str) -> np.ndarray:
    """The model work storing a preference needs, done before any lock: the user's rows that have
    no embedding yet get theirs, and the new description's vector is returned."""
    preference_embed_missing(user)
    return get_embedder().embed_one(preference_text(description))


def preference_learn(
    *,
    user: User,
    finding: PreferenceFinding,
    source_message: ChatMessage | None,
    vector: np.ndarray | None = None,
) -> Preference:
    """Store a preference the analyzer found: a paraphrase of an existing one reinforces it; a
    low-confidence one is a candidate; a contradicted older one is superseded (kept, inactive).
    ``vector``: from preference_prepare, when the caller did the model work already."""
    if finding.category not in PREFERENCE_CATEGORIES:
        raise ApplicationError(f"Unknown preference category {finding.category!r}.", field="category")
    description = preference_text(finding.description)
    if not description:
        raise ApplicationError("A preference needs its description.", field="description")
    key = slugify(finding.preference).replace("-", "_")[:100]
    stated = Stated(
        category=finding.category,
        description=description,
        axis=_axis(finding.axis) or AXIS_OF_KEY.get(key, ""),
        confidence=finding.confidence,
        source=Preference.Source.LEARNED,
        key=key,
    )
    if vector is None:
        vector = preference_prepare(user=user, description=description)
    preference, created = _store(user=user, stated=stated, vector=vector, source_message=source_message)
    if source_message is not None:
        message_event_record(
            source_message,
            "preference",
            event_type="preference_learned" if created else "preference_reinforced",
            event_family=EventFamily.USER_PREFERENCE,
            signal=Signal.NEEDS_REVIEW if preference.candidate else Signal.POSITIVE,
            subject_type="preference",
            subject_id=str(preference.pk),
            after_snapshot={
                "category": preference.category,
                "preference": preference.preference,
                "description": preference.description,
                "axis": preference.axis,
                "candidate": preference.candidate,
                "confidence": preference.confidence,
                "times_reinforced": preference.times_reinforced,
            },
        )
    return preference


def preference_add_manual(*, user: User, description: str, category: str | None = None) -> tuple[Preference, bool]:
    """A preference the user wrote themself; (row, created). Stored like a learned one: a paraphrase
    of an existing preference reinforces it (and switches it on), a contradicted one is superseded;
    the category, when not given, is the analyzer's reading of the text (else "behavior")."""
    description = " ".join((description or "").split())
    if not description:
        raise ApplicationError("description is required: the preference in your own words.", field="description")
    if len(description) > 500:
        raise ApplicationError("description is at most 500 characters.", field="description")
    if category is not None and category not in PREFERENCE_CATEGORIES:
        raise ApplicationError(
            f"Unknown category {category!r}; expected one of {', '.join(PREFERENCE_CATEGORIES)}.", field="category"
        )
    # The analyzer's reading gives the axis (for contradictions) and, when not given, the category. The
    # user has said it is a preference: when the analyzer's type model doubts it (a short "Keep responses
    # short" with no conversation around it), the local models still read its category and axis.
    finding = get_analyzer().analyze(AnalyzerInput(current_message=description)).preference
    if finding is None:
        from learning.analyzer.local import get_local_analyzer  # noqa: PLC0415  heavy: scikit-learn

        finding = get_local_analyzer().read_preference(description)
    axis = (_axis(finding.axis) or AXIS_OF_KEY.get(finding.preference, "")) if finding else ""
    if category is None:
        category = finding.category if finding and finding.category in PREFERENCE_CATEGORIES else DEFAULT_CATEGORY
    stated = Stated(
        category=category, description=description, axis=axis, confidence=0.9, source=Preference.Source.MANUAL
    )
    vector = preference_prepare(user=user, description=description)
    return _store(user=user, stated=stated, vector=vector, source_message=None, undoable=True)


def preference_set_active(*, preference: Preference, active: bool) -> Preference:
    """Switch a preference on or off at the user's request. Switched back on, an applied one on a
    canonical axis supersedes the active ones it contradicts, as saying it again would (they never
    coexist). Undoable: ``preference_undo`` puts back this row and those it superseded."""
    now = timezone.now()
    with transaction.atomic():
        user_writer_lock(preference.user_id)
        row = Preference.objects.select_for_update().get(pk=preference.pk)
        before = fields_snapshot(row, SWITCH_FIELDS)
        row.active = active
        row.inactive_reason = "" if active else "user"
        if active:
            row.last_reinforced_at = now  # a check-in confirmation counts as a sighting
            row.superseded_by, row.superseded_at = None, None
        row.save(
            update_fields=[
                "active",
                "inactive_reason",
                "last_reinforced_at",
                "superseded_by",
                "superseded_at",
                "updated_at",
            ]
        )
        others = _supersede_contradicted(row, list(Preference.objects.filter(user_id=row.user_id)), now=now)
        undo_record(
            user_id=row.user_id,
            subject_type="preference",
            subject_id=row.pk,
            action="switched_on" if active else "switched_off",
            before={"row": before, "others": others},
        )
        changed_after_commit(row.user_id)
    return row


def preference_delete(*, preference: Preference) -> None:
    """Forget a preference (the feedback stream keeps the history of how it was learned). Undoable
    for LEARNING_UNDO_SECONDS: the undo entry keeps the row, and which rows it had superseded."""
    with transaction.atomic():
        row = Preference.objects.select_for_update().filter(pk=preference.pk).first()
        if row is None:
            return
        superseded = list(Preference.objects.filter(superseded_by=row).values_list("pk", flat=True))
        undo_record(
            user_id=row.user_id,
            subject_type="preference",
            subject_id=row.pk,
            action="deleted",
            before={"row": row_snapshot(row), "superseded": superseded},
        )
        row.delete()
        changed_after_commit(preference.user_id)


def preference_undo(*, user: User, preference_id: int) -> tuple[str, Preference | None]:
    """Undo the user's newest change to this preference (within LEARNING_UNDO_SECONDS): a switch,
    an addition (a new row goes, a reinforced one gets its figures back) or a deletion (the row comes
    back as it was); the rows the change superseded get their state back. (action, the row or None)."""
    now = timezone.now()
    with transaction.atomic():
        user_writer_lock(user.pk)
        entry = undo_take(user=user, subject_type="preference", subject_id=preference_id, label="preference")
        before = entry.before
        if entry.action == "deleted":
            row = row_restore(
                Preference,
                before["row"],
                conflict_field="preference",
                conflict="You have this preference again already; nothing to restore.",
            )
            Preference.objects.filter(
                pk__in=before.get("superseded", []),
                user=user,
                superseded_by__isnull=True,
                inactive_reason="contradicted",
            ).update(superseded_by=row)
            newer = _active_contradiction(row)
            if newer is not None:  # the other pole was said since: the newer one stands
                _put_back(
                    row.pk,
                    {
                        "active": False,
                        "inactive_reason": "contradicted",
                        "superseded_by_id": newer.pk,
                        "superseded_at": now,
                    },
                    now=now,
                )
        else:
            row = Preference.objects.select_for_update().filter(pk=preference_id, user=user).first()
            if row is None:
                raise NotFoundError(f"Preference {preference_id} no longer exists.", field="id")
            if entry.action == "added" and before.get("created"):
                row.delete()
                row = None
            elif before.get("row"):
                _put_back(row.pk, before["row"], now=now)
        for other in before.get("others", []):
            _put_back(other["id"], {k: v for k, v in other.items() if k != "id"}, now=now)
        changed_after_commit(user.pk)
    if row is not None:
        row.refresh_from_db()
    return entry.action, row


def _active_contradiction(row: Preference) -> Preference | None:
    if not (row.active and not row.candidate and row.axis):
        return None
    candidates = Preference.objects.filter(user_id=row.user_id, active=True).exclude(pk=row.pk).exclude(axis="")
    return next((other for other in candidates if _contradicts(row.axis, other.axis)), None)


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
