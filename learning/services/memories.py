"""Memories: private statements kept from chat, and the team or project memories a reviewed share creates."""

from __future__ import annotations

import uuid

from django.db import transaction
from django.utils import timezone

from accounts.models import Project, User
from config.exceptions import ApplicationError, Conflict, NotFoundError
from core.ids import parse_uuid
from core.text import normalised_digest
from learning.analyzer.base import (
    MemoryFinding,
)
from learning.conf import learning_settings
from learning.context.cache import context_invalidate_shared
from learning.models import ChatMessage, Memory
from learning.safety import steering_reasons
from learning.services.common import changed_after_commit, reinforced, steering_flag
from learning.services.undo import fields_snapshot, row_restore, row_snapshot, undo_record, undo_take

# What an owner's edit changes: what its undo puts back.
EDIT_FIELDS = ["content", "content_hash", "kind", "needs_review", "edited_at"]


def memory_remember(*, owner: User, finding: MemoryFinding, source_message: ChatMessage | None) -> Memory:
    """Keep a durable personal statement as a private memory (a repeat raises its confidence)."""
    digest = normalised_digest(finding.content)
    kind = finding.kind if finding.kind in Memory.Kind.values else Memory.Kind.FACT
    with transaction.atomic():
        changed_after_commit(owner.pk)
        memory = (
            Memory.objects.select_for_update()
            .filter(owner=owner, content_hash=digest, visibility=Memory.Visibility.PRIVATE)
            .first()
        )
        if memory is None:
            memory = Memory.objects.create(
                owner=owner,
                visibility=Memory.Visibility.PRIVATE,
                kind=kind,
                content=finding.content[:4000],
                content_hash=digest,
                confidence=round(min(0.95, max(0.3, finding.confidence)), 4),
                source_message=source_message,
            )
            if steering_flag(user=owner, text=memory.content, subject_type="memory", subject_id=str(memory.pk)):
                Memory.objects.filter(pk=memory.pk).update(needs_review=True)
                memory.needs_review = True
            return memory
        memory.confidence = round(reinforced(memory.confidence, finding.confidence), 4)
        memory.save(update_fields=["confidence"])
        return memory


def memory_update(*, memory: Memory, content: str | None = None, kind: str | None = None) -> Memory:
    """The owner rewrites a private memory (its text, its kind); a shared copy changes only through
    the promotion that made it."""
    if memory.visibility != Memory.Visibility.PRIVATE:
        raise Conflict("A shared memory changes only through the promotion that shared it.", field="visibility")
    if content is None and kind is None:
        raise ApplicationError("Send content or kind.", field="content")
    if kind is not None and kind not in Memory.Kind.values:
        raise ApplicationError(f"kind must be one of {', '.join(Memory.Kind.values)}.", field="kind")
    fields = ["edited_at"]
    with transaction.atomic():
        row = Memory.objects.select_for_update().get(pk=memory.pk)
        undo_record(
            user_id=row.owner_id,
            subject_type="memory",
            subject_id=row.pk,
            action="edited",
            before=fields_snapshot(row, EDIT_FIELDS),
        )
        if content is not None:
            content = content.strip()
            if not content:
                raise ApplicationError("content must not be empty.", field="content")
            if len(content) > 4000:
                raise ApplicationError("content is at most 4000 characters.", field="content")
            digest = normalised_digest(content)
            duplicate = Memory.objects.filter(
                owner_id=row.owner_id, content_hash=digest, visibility=Memory.Visibility.PRIVATE
            ).exclude(pk=row.pk)
            if duplicate.exists():
                raise Conflict("You already have a memory with this content.", field="content")
            row.content, row.content_hash = content, digest
            row.needs_review = steering_flag(
                user=row.owner, text=content, subject_type="memory", subject_id=str(row.pk)
            )
            fields += ["content", "content_hash", "needs_review"]
        if kind is not None:
            row.kind = kind
            fields.append("kind")
        row.edited_at = timezone.now()
        row.save(update_fields=fields)
        changed_after_commit(row.owner_id)
    return row


def memory_delete(*, memory: Memory) -> None:
    """Forget a private memory; a shared copy is withdrawn through its promotion instead. Undoable
    for LEARNING_UNDO_SECONDS: the undo entry keeps the row."""
    if memory.visibility != Memory.Visibility.PRIVATE:
        raise Conflict("A shared memory is withdrawn through the promotion that shared it.", field="visibility")
    with transaction.atomic():
        row = Memory.objects.select_for_update().filter(pk=memory.pk).first()
        if row is None:
            return
        undo_record(
            user_id=row.owner_id,
            subject_type="memory",
            subject_id=row.pk,
            action="deleted",
            before={"row": row_snapshot(row)},
        )
        row.delete()
        changed_after_commit(memory.owner_id)


def memory_undo(*, user: User, memory_id: str) -> tuple[str, Memory]:
    """Undo the user's newest change to one of their private memories (within
    LEARNING_UNDO_SECONDS): an edit gets its text and kind back, a deleted memory comes back as it
    was. A private memory with the same text since is a Conflict naming ``content``."""
    if parse_uuid(memory_id) is None:
        raise NotFoundError(f"Nothing to undo on memory {memory_id}.", field="id")
    duplicate = "You have a memory with this text again already; nothing to restore."
    with transaction.atomic():
        entry = undo_take(user=user, subject_type="memory", subject_id=memory_id, label="memory")
        if entry.action == "deleted":
            row = row_restore(Memory, entry.before["row"], conflict_field="content", conflict=duplicate)
        else:
            row = Memory.objects.select_for_update().filter(pk=memory_id, owner=user).first()
            if row is None:
                raise NotFoundError(f"Memory {memory_id} no longer exists.", field="id")
            by_attname = {f.attname: f for f in Memory._meta.concrete_fields}
            for name, value in entry.before.items():
                setattr(row, name, by_attname[name].to_python(value))
            taken = Memory.objects.filter(
                owner=user, content_hash=row.content_hash, visibility=Memory.Visibility.PRIVATE
            ).exclude(pk=row.pk)
            if taken.exists():
                raise Conflict(duplicate, field="content")
            row.save(update_fields=EDIT_FIELDS)
        changed_after_commit(user.pk)
    row.refresh_from_db()
    return entry.action, row


def memory_share_check(*, subject_type: str, subject_id: str, visibility: str, project: Project | None) -> dict:
    """What sharing a private memory with a team or project would create; refused if it is not the
    owner's own confident, reviewable statement, or if it is a preference (a preference, or a memory
    of the preference kind, is never shared). The proposed learning of a ``memory`` promotion."""
    if visibility not in (Memory.Visibility.TEAM, Memory.Visibility.PROJECT):
        raise ApplicationError("visibility must be 'team' or 'project'.", field="visibility")
    if visibility == Memory.Visibility.PROJECT and project is None:
        raise ApplicationError("A project memory needs its project.", field="project")
    if subject_type == "memory":
        memory = (
            Memory.objects.filter(pk=subject_id, visibility=Memory.Visibility.PRIVATE).first()
            if parse_uuid(subject_id) is not None
            else None
        )
        if memory is None or memory.status != Memory.Status.ACTIVE:
            raise ApplicationError(f"No private memory {subject_id}.", field="subject_id")
        owner_id, kind, content, confidence, flagged = (
            memory.owner_id,
            memory.kind,
            memory.content,
            memory.confidence,
            memory.needs_review,
        )
    elif subject_type == "preference":
        # A private preference (how one person wants answers) never changes team-visible output:
        # only stated facts (and the like) may be shared, after review.
        raise ApplicationError(
            "A private preference is never promoted to team or project memory; only stated facts may be shared.",
            field="subject_type",
        )
    else:
        raise ApplicationError("subject_type must be 'memory' or 'preference'.", field="subject_type")
    if kind == Memory.Kind.PREFERENCE:
        raise ApplicationError(
            "A private preference is never promoted to team or project memory; only stated facts may be shared.",
            field="kind",
        )
    minimum = learning_settings.MEMORY_SHARE_MIN_CONFIDENCE
    if confidence < minimum:
        raise ApplicationError(
            f"Confidence {confidence:.2f} is below {minimum}: a tentative private item is never shared.",
            field="subject_id",
        )
    if flagged or steering_reasons(content):
        raise ApplicationError(
            "This text reads like instructions to the assistant; it stays the owner's quoted preference.",
            field="subject_id",
        )
    shared_in = project.slug if (project and visibility == Memory.Visibility.PROJECT) else None  # team: no project
    return {
        "owner": owner_id,
        "kind": kind,
        "content": content,
        "visibility": visibility,
        "project": shared_in,
        "confidence": round(confidence, 3),
    }


def memory_share_apply(*, promotion_id: uuid.UUID, subject_type: str, subject_id: str, learning: dict) -> Memory:
    """Create the team or project memory an applied promotion describes (once per promotion); the
    promotion's subject (the private memory or preference it came from) is checked again."""
    existing = Memory.objects.filter(promotion_id=promotion_id).first()
    if existing is not None:
        return existing  # an apply delivered twice
    owner = User.objects.filter(pk=int(learning.get("owner") or 0)).first()
    if owner is None:
        raise Conflict("The memory's owner no longer exists.", field="subject_id")
    if steering_reasons(learning.get("content", "")):
        raise Conflict("This text reads like instructions to the assistant; it is never shared.", field="content")
    project = Project.objects.filter(slug=learning["project"]).first() if learning.get("project") else None
    if learning.get("visibility") == Memory.Visibility.PROJECT and project is None:
        raise Conflict(f"Project {learning.get('project')!r} no longer exists.", field="project")
    # The subject is checked again now: between proposal and review the owner may have withdrawn it
    # (switched off, deleted, archived) or it may have decayed below the sharing threshold.
    try:
        memory_share_check(
            subject_type=subject_type,
            subject_id=subject_id,
            visibility=str(learning.get("visibility", "")),
            project=project,
        )
    except ApplicationError as exc:
        raise Conflict(f"No longer shareable: {exc.message}", fields=exc.fields) from exc
    content = str(learning["content"])[:4000]
    digest = normalised_digest(content)
    with transaction.atomic():
        memory = Memory.objects.create(
            owner=owner,
            project=project,
            visibility=learning["visibility"],
            kind=learning.get("kind", "fact"),
            content=content,
            content_hash=digest,
            confidence=float(learning.get("confidence", 0.7)),
            promotion_id=promotion_id,
        )
        transaction.on_commit(context_invalidate_shared)
    return memory


def memory_share_set_status(*, promotion_id: uuid.UUID, active: bool, missing_ok: bool = False) -> None:
    """Pause (archive) or resume the shared memory a promotion made; a vanished one is a conflict
    (unless the promotion is being retired anyway)."""
    updated = Memory.objects.filter(promotion_id=promotion_id).update(
        status=Memory.Status.ACTIVE if active else Memory.Status.ARCHIVED
    )
    if not updated and not missing_ok:
        raise Conflict("The shared memory this promotion created no longer exists.", field="destination_record_id")
    transaction.on_commit(context_invalidate_shared)
