"""Writes of preference learning: observe a message, apply its analysis, manage what was learned."""

from __future__ import annotations

import hashlib
import logging
import uuid
from datetime import timedelta

import numpy as np
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import F, Q
from django.utils import timezone
from django.utils.text import slugify

from accounts.actors import Actor
from accounts.models import Project, User
from config.exceptions import ApplicationError, Conflict
from feedback.models import EventFamily, Signal
from feedback.services import EventInput, event_record
from learning.analyzer import catalog
from learning.analyzer.base import (
    Analysis,
    AnalyzerInput,
    MemoryFinding,
    PreferenceFinding,
    SimilarPrompt,
    WorkflowFinding,
)
from learning.analyzer.local import prompt_hash, summarize
from learning.context import (
    Context,
    Scope,
    context_build,
    context_invalidate,
    context_invalidate_all,
    context_invalidate_shared,
)
from learning.models import PREFERENCE_CATEGORIES, ChatMessage, LearnedWorkflow, Memory, Preference, PromptPattern
from learning.safety import steering_reasons
from learning.selectors import pattern_window, recent_messages
from learning.services.taste import asks_to_stop, taste_pattern_stop

logger = logging.getLogger(__name__)

REINFORCEMENT_RATE = 0.3  # each re-detection closes this share of the gap to 1.0


def _changed(user_id: int) -> None:
    """The user's learned items changed: drop their cached context once this commits."""
    transaction.on_commit(lambda: context_invalidate(user_id=user_id))


def message_observe(
    *, user: User, session_id: str, content: str, role: str = ChatMessage.Role.USER, project: Project | None = None
) -> tuple[ChatMessage, Context]:
    """Store a chat message (and, for a user message, its prompt pattern), queue its analysis
    after commit, and return the context to inject into this very call. No model work here."""
    content = content or ""
    if not content.strip():
        raise ApplicationError("content must not be empty.", field="content")
    if len(content) > settings.MESSAGE_MAX_CHARS:
        raise ApplicationError(f"content is at most {settings.MESSAGE_MAX_CHARS} characters.", field="content")
    if role not in ChatMessage.Role.values:
        raise ApplicationError(f"Unknown role {role!r}.", field="role")
    with transaction.atomic():
        message = ChatMessage.objects.create(
            session_id=session_id, user=user, project=project, role=role, content=content
        )
        if role == ChatMessage.Role.USER:
            PromptPattern.objects.create(
                user=user,
                session_id=session_id,
                message=message,
                prompt_hash=prompt_hash(content),
                prompt_summary=summarize(content, words=16),
            )
            if settings.REGGIE_PREFERENCE_LEARNING:
                transaction.on_commit(lambda: _enqueue_analysis(str(message.pk)))
            else:
                ChatMessage.objects.filter(pk=message.pk).update(
                    analyzed_at=timezone.now(), analysis={"skipped": "preference learning is off"}
                )
            if asks_to_stop(content):
                taste_pattern_stop(user=user)  # "stop applying this": the pattern last applied to the user's runs
        # In the same transaction: the injections are recorded with the message, at one commit.
        context = context_build(
            user=user,
            message=content if role == ChatMessage.Role.USER else None,
            scope=Scope(project_id=project.pk if project else None),
            response_id=str(message.pk),
            record=True,
        )
    return message, context


def _enqueue_analysis(message_id: str) -> None:
    from learning.tasks import analyze_message

    try:
        analyze_message.delay(message_id)
    except Exception:
        logger.warning("could not enqueue analysis of message %s; the sweep will retry", message_id, exc_info=True)


def _pattern_prune(user_id: int) -> int:
    """Keep the newest PROMPT_WINDOW prompt patterns of a user; delete the rest in one statement."""
    keep = (
        PromptPattern.objects.filter(user_id=user_id)
        .order_by("-created_at", "-id")
        .values_list("id", flat=True)[: settings.PROMPT_WINDOW]
    )
    deleted, _ = PromptPattern.objects.filter(user_id=user_id).exclude(id__in=keep).delete()
    return deleted


def message_analyze(*, message_id: str) -> Analysis | None:
    """Analyse one user message and apply what it teaches; a second run changes nothing."""
    return messages_analyze(message_ids=[message_id]).get(str(message_id))


def messages_claim(*, first_id: str, limit: int) -> list[str]:
    """Claim up to ``limit`` messages waiting for analysis (``first_id`` among them if it waits),
    oldest first, for ANALYSIS_CLAIM_SECONDS: concurrent workers take disjoint batches."""
    now = timezone.now()
    waiting = ChatMessage.objects.filter(
        Q(analysis_claimed_until__isnull=True) | Q(analysis_claimed_until__lt=now),
        analyzed_at__isnull=True,
        role=ChatMessage.Role.USER,
    )
    locking = waiting.select_for_update(skip_locked=connection.features.has_select_for_update_skip_locked)
    with transaction.atomic():
        ids = [str(pk) for pk in locking.filter(pk=first_id).values_list("pk", flat=True)]
        ids += [
            str(pk)
            for pk in locking.exclude(pk=first_id)
            .order_by("created_at")
            .values_list("pk", flat=True)[: limit - len(ids)]
        ]
        ChatMessage.objects.filter(pk__in=ids).update(
            analysis_claimed_until=now + timedelta(seconds=settings.ANALYSIS_CLAIM_SECONDS)
        )
    return ids


def messages_analyze(*, message_ids: list[str]) -> dict[str, Analysis]:
    """Analyse user messages, oldest first, embedding them in one batch; already analysed or
    missing ones are skipped, so any delivery of any batch can run again harmlessly."""
    from core.embeddings import get_embedder
    from learning.analyzer import get_analyzer
    from learning.analyzer.local import LocalAnalyzer

    messages = list(
        ChatMessage.objects.select_related("user", "project")
        .filter(pk__in=message_ids, analyzed_at__isnull=True, role=ChatMessage.Role.USER)
        .order_by("created_at")
    )
    if not messages:
        return {}
    if not settings.REGGIE_PREFERENCE_LEARNING:
        ChatMessage.objects.filter(pk__in=[m.pk for m in messages], analyzed_at__isnull=True).update(
            analyzed_at=timezone.now(), analysis={"skipped": "preference learning is off"}
        )
        return {}

    # Model work outside any transaction: one forward pass for the whole batch.
    vectors = get_embedder().embed([m.content for m in messages])
    analyzer = get_analyzer()
    results: dict[str, Analysis] = {}
    for message, vector in zip(messages, vectors, strict=True):
        # The window is read per message, so a batch sees its own earlier messages.
        similar: list[SimilarPrompt] = []
        similar_vectors: list[np.ndarray] = []
        now = timezone.now()
        for pattern in pattern_window(user_id=message.user_id, exclude_message_id=message.pk):
            if pattern.embedding is None:
                continue
            similarity = float(np.dot(vector, pattern.embedding))
            if similarity >= settings.WORKFLOW_SIMILARITY:
                days = (now - pattern.created_at).days
                similar.append(SimilarPrompt(pattern.prompt_summary, days, round(similarity, 3)))
                similar_vectors.append(pattern.embedding)
        similar.sort(key=lambda p: -p.similarity)
        data = AnalyzerInput(
            current_message=message.content,
            similar_past_prompts=similar[:10],
            match_count=len(similar),
            recent_context=[{"role": m.role, "content": m.content[:2000]} for m in recent_messages(message=message)],
        )
        if isinstance(analyzer, LocalAnalyzer):
            analysis = analyzer.analyze_embedded([data], vector.reshape(1, -1))[0]
        else:
            analysis = analyzer.analyze(data)

        with transaction.atomic():
            locked = (
                ChatMessage.objects.select_for_update(of=("self",)).select_related("user", "project").get(pk=message.pk)
            )
            if locked.analyzed_at is not None:
                continue  # another delivery got here first
            PromptPattern.objects.filter(message_id=message.pk).update(embedding=vector.astype(np.float32).tobytes())
            _apply(locked, analysis, vector, similar_vectors)
            locked.analyzed_at = timezone.now()
            locked.analysis = analysis.as_dict()
            locked.save(update_fields=["analyzed_at", "analysis"])
        results[str(message.pk)] = analysis
    for user_id in {m.user_id for m in messages}:
        _pattern_prune(user_id)
    return results


def _event(message: ChatMessage, kind: str, **fields: object) -> None:
    """Write what the analysis saw into the feedback stream, tied to the message."""
    event_record(
        actor=Actor.for_system(),
        data=EventInput(
            user_id=message.user_id,
            project_slug=message.project.slug if message.project_id and message.project else None,
            session_id=message.session_id[:255],
            source_table=ChatMessage._meta.db_table,
            source_record_id=str(message.pk),
            surface="chat",
            private=True,
            idempotency_key=f"analysis:{message.pk}:{kind}",
            **fields,  # type: ignore[arg-type]
        ),
    )


def _apply(message: ChatMessage, analysis: Analysis, vector: np.ndarray, similar_vectors: list[np.ndarray]) -> None:
    user = message.user
    if analysis.analyzer.startswith("fallback"):
        _event(
            message,
            "eval_failure",
            event_type="analyzer_fallback",
            event_family=EventFamily.EVAL_FAILURE,
            signal=Signal.FAILED,
            reason_category="analyzer_error",
            free_text=analysis.reasoning[:2000],
            subject_type="message",
            subject_id=str(message.pk),
        )
    if analysis.preference is not None:
        preference_learn(user=user, finding=analysis.preference, source_message=message)
    if analysis.detected == "correction":
        _event(
            message,
            "correction",
            event_type="correction",
            event_family=EventFamily.ASSISTANT_RESPONSE,
            signal=Signal.CORRECTED,
            reason_category="correction",
            free_text=message.content[:10_000],
            subject_type="message",
            subject_id=str(message.pk),
        )
    elif analysis.detected == "pain_point":
        _event(
            message,
            "pain_point",
            event_type="pain_point",
            event_family=EventFamily.ASSISTANT_RESPONSE,
            signal=Signal.NEGATIVE,
            reason_category="pain_point",
            free_text=message.content[:10_000],
            subject_type="message",
            subject_id=str(message.pk),
        )
    elif analysis.detected == "workflow" and analysis.workflow is not None:
        workflow_learn(user=user, finding=analysis.workflow, message=message, vectors=[vector, *similar_vectors])
    if analysis.memory is not None:
        memory_remember(owner=user, finding=analysis.memory, source_message=message)


def _flag_steering(*, user: User, text: str, subject_type: str, subject_id: str) -> bool:
    """Learned text that reads like orders to the assistant is kept (quoted, in the user's own
    context only) and flagged for review in the stream. True if flagged."""
    reasons = steering_reasons(text)
    if reasons:
        event_record(
            actor=Actor.for_system(),
            data=EventInput(
                event_type="learned_text_flagged",
                event_family=EventFamily.USER_PREFERENCE,
                signal=Signal.NEEDS_REVIEW,
                user_id=user.pk,
                surface="learning",
                subject_type=subject_type,
                subject_id=subject_id,
                reason_category="steering",
                free_text=text[:10_000],
                metadata={"reasons": reasons},
                private=True,
            ),
        )
    return bool(reasons)


def _reinforced(confidence: float, strength: float) -> float:
    """Confidence after one more sighting: rises with diminishing returns, never past 0.99."""
    return min(0.99, confidence + (1.0 - confidence) * REINFORCEMENT_RATE * max(0.2, strength))


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
                    _flag_steering(
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
            preference.confidence = round(_reinforced(preference.confidence, finding.confidence), 4)
            preference.times_reinforced = F("times_reinforced") + 1
            preference.last_reinforced_at = now
            fields = ["confidence", "times_reinforced", "last_reinforced_at", "updated_at"]
            # Said again: back on, unless the user switched it off themself.
            if not preference.active and preference.inactive_reason != "user":
                preference.active, preference.inactive_reason, preference.superseded_by = True, "", None
                fields += ["active", "inactive_reason", "superseded_by"]
            preference.save(update_fields=fields)
            preference.refresh_from_db(fields=["times_reinforced"])
        _changed(user.pk)
        opposite = catalog.opposite_of(slug)
        if opposite and preference.active:
            Preference.objects.filter(user=user, category=finding.category, preference=opposite, active=True).update(
                active=False, inactive_reason="contradicted", superseded_by=preference, updated_at=now
            )
        if source_message is not None:
            _event(
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
        row.needs_review = _flag_steering(
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
        _changed(user.pk)
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
        _changed(row.user_id)
    return row


def preference_delete(*, preference: Preference) -> None:
    """Forget a preference (the feedback stream keeps the history of how it was learned)."""
    with transaction.atomic():
        Preference.objects.filter(pk=preference.pk).delete()
        _changed(preference.user_id)


def workflow_learn(
    *, user: User, finding: WorkflowFinding, message: ChatMessage, vectors: list[np.ndarray]
) -> LearnedWorkflow:
    """Create the workflow three similar requests revealed, or count one more use of a known one."""
    now = timezone.now()
    centroid = np.mean(np.vstack(vectors), axis=0).astype(np.float32)
    centroid /= np.linalg.norm(centroid) or 1.0
    with transaction.atomic():
        _changed(user.pk)
        best, best_similarity = None, settings.WORKFLOW_SIMILARITY
        for workflow in LearnedWorkflow.objects.select_for_update().filter(user=user, embedding__isnull=False):
            if workflow.embedding is None:
                continue
            similarity = float(np.dot(workflow.embedding, vectors[0]))
            if similarity >= best_similarity:
                best, best_similarity = workflow, similarity
        if best is None:
            return LearnedWorkflow.objects.create(
                user=user,
                workflow_name=finding.workflow_name[:200],
                trigger_pattern=finding.trigger_pattern[:500],
                learned_steps=finding.learned_steps,
                preferred_output=finding.preferred_output[:500],
                example_input=message.content[:4000],
                times_detected=len(vectors),
                last_used_at=now,
                confidence=round(min(0.95, finding.confidence), 4),
                embedding=centroid,
            )
        assert best.embedding is not None
        merged = best.embedding * best.times_detected + vectors[0]
        best.embedding = (merged / (np.linalg.norm(merged) or 1.0)).astype(np.float32)
        best.times_detected = F("times_detected") + 1
        best.last_used_at = now
        best.confidence = round(_reinforced(best.confidence, finding.confidence), 4)
        if finding.preferred_output and not best.preferred_output:
            best.preferred_output = finding.preferred_output[:500]
        best.save(
            update_fields=[
                "embedding",
                "times_detected",
                "last_used_at",
                "confidence",
                "preferred_output",
                "updated_at",
            ]
        )
        best.refresh_from_db(fields=["times_detected"])
        return best


def workflow_set_active(*, workflow: LearnedWorkflow, active: bool) -> LearnedWorkflow:
    with transaction.atomic():
        row = LearnedWorkflow.objects.select_for_update().get(pk=workflow.pk)
        row.active = active
        row.save(update_fields=["active", "updated_at"])
        _changed(row.user_id)
    return row


def workflow_delete(*, workflow: LearnedWorkflow) -> None:
    with transaction.atomic():
        LearnedWorkflow.objects.filter(pk=workflow.pk).delete()
        _changed(workflow.user_id)


def memory_remember(*, owner: User, finding: MemoryFinding, source_message: ChatMessage | None) -> Memory:
    """Keep a durable personal statement as a private memory (a repeat raises its confidence)."""
    normalised = " ".join(finding.content.lower().split())
    digest = hashlib.sha256(normalised.encode()).hexdigest()
    kind = finding.kind if finding.kind in Memory.Kind.values else Memory.Kind.FACT
    with transaction.atomic():
        _changed(owner.pk)
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
            if _flag_steering(user=owner, text=memory.content, subject_type="memory", subject_id=str(memory.pk)):
                Memory.objects.filter(pk=memory.pk).update(needs_review=True)
                memory.needs_review = True
            return memory
        memory.confidence = round(_reinforced(memory.confidence, finding.confidence), 4)
        memory.save(update_fields=["confidence"])
        return memory


def preferences_decay(*, now: object = None) -> tuple[int, int]:
    """Lower the confidence of learned preferences not reinforced lately; those that fall under
    the floor go inactive (kept, and listed for a check-in). Two set-based updates."""
    now = now or timezone.now()
    stale = Preference.objects.filter(
        active=True,
        source=Preference.Source.LEARNED,
        last_reinforced_at__lt=now - timedelta(days=settings.PREFERENCE_DECAY_AFTER_DAYS),  # type: ignore[operator]
    )
    decayed = stale.update(confidence=F("confidence") * settings.PREFERENCE_DECAY_FACTOR, updated_at=now)
    deactivated = Preference.objects.filter(
        Q(active=True, source=Preference.Source.LEARNED, confidence__lt=settings.PREFERENCE_DECAY_FLOOR)
    ).update(active=False, inactive_reason="decayed", updated_at=now)
    if decayed or deactivated:
        context_invalidate_all()
    return decayed, deactivated


def memory_share_check(*, subject_type: str, subject_id: str, visibility: str, project: Project | None) -> dict:
    """What sharing a private memory (or preference) with a team or project would create; refused if
    it is not the owner's own confident, reviewable text. The proposed learning of a ``memory`` promotion."""
    if visibility not in (Memory.Visibility.TEAM, Memory.Visibility.PROJECT):
        raise ApplicationError("visibility must be 'team' or 'project'.", field="visibility")
    if visibility == Memory.Visibility.PROJECT and project is None:
        raise ApplicationError("A project memory needs its project.", field="project")
    if subject_type == "memory":
        memory = (
            Memory.objects.filter(pk=subject_id, visibility=Memory.Visibility.PRIVATE).first()
            if _is_uuid(subject_id)
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
        preference = Preference.objects.filter(pk=int(subject_id)).first() if subject_id.isdigit() else None
        if preference is None or not preference.active:
            raise ApplicationError(f"No active preference {subject_id}.", field="subject_id")
        owner_id, kind, content, confidence, flagged = (
            preference.user_id,
            Memory.Kind.PREFERENCE,
            preference.description,
            preference.confidence,
            preference.needs_review,
        )
    else:
        raise ApplicationError("subject_type must be 'memory' or 'preference'.", field="subject_type")
    if confidence < settings.MEMORY_SHARE_MIN_CONFIDENCE:
        raise ApplicationError(
            f"Confidence {confidence:.2f} is below {settings.MEMORY_SHARE_MIN_CONFIDENCE}: a tentative private "
            "item is never shared.",
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


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True


def memory_share_apply(*, promotion_id: uuid.UUID, learning: dict) -> Memory:
    """Create the team or project memory an applied promotion describes (once per promotion)."""
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
    from promotions.models import LearningPromotion  # the ledger's destinations import this module

    subject = LearningPromotion.objects.filter(pk=promotion_id).values("subject_type", "subject_id").first()
    if subject is None:
        raise Conflict("No such promotion.", field="promotion_id")
    try:
        memory_share_check(
            subject_type=subject["subject_type"],
            subject_id=subject["subject_id"],
            visibility=str(learning.get("visibility", "")),
            project=project,
        )
    except ApplicationError as exc:
        raise Conflict(f"No longer shareable: {exc.message}", fields=exc.fields) from exc
    content = str(learning["content"])[:4000]
    digest = hashlib.sha256(" ".join(content.lower().split()).encode()).hexdigest()
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
