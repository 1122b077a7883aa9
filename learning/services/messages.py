"""Chat messages: observe one, queue and claim its analysis, analyse a batch and apply what it teaches."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np
from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from accounts.models import Project, User
from config.exceptions import ApplicationError, Conflict
from core.embeddings import get_embedder
from core.text import digest, summarize, words
from feedback.models import EventFamily, Signal
from learning import tasks
from learning.analyzer import get_analyzer
from learning.analyzer.base import (
    Analysis,
    AnalyzerInput,
    SimilarPrompt,
)
from learning.analyzer.workflows import prompt_categories, same_task_matches
from learning.conf import learning_settings
from learning.context.build import Context, Scope, context_build
from learning.models import ChatMessage, PromptPattern
from learning.selectors import pattern_window, recent_messages
from learning.services.common import message_event_record
from learning.services.memories import memory_remember
from learning.services.preferences import preference_learn, preference_prepare
from learning.services.taste import taste_pattern_stop
from learning.services.taste_rules import asks_to_stop
from learning.services.usages import usages_record
from learning.services.workflows import workflow_learn

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Observed:
    """A stored message, the context it was answered with, and whether this was a replay of it."""

    message: ChatMessage
    context: dict[str, Any]
    replayed: bool = False


def message_observe(
    *, user: User, session_id: str, content: str, role: str = ChatMessage.Role.USER, project: Project | None = None
) -> tuple[ChatMessage, Context]:
    """Store a chat message (and, for a user message, its prompt pattern), queue its analysis
    after commit, and return the context to inject into this very call. No model work here."""
    _validate(content=content, role=role)
    return _observe(user=user, session_id=session_id, content=content, role=role, project=project)


def message_observe_once(
    *,
    user: User,
    session_id: str,
    content: str,
    client_message_id: str,
    role: str = ChatMessage.Role.USER,
    project: Project | None = None,
) -> Observed:
    """Observe a message the caller names: a retry with the same id returns the original message
    and its context and learns nothing again; the same id with other content is a conflict."""
    _validate(content=content, role=role)
    if not client_message_id.strip() or len(client_message_id) > 255:
        raise ApplicationError("client_message_id must be 1 to 255 characters.", field="client_message_id")
    original = ChatMessage.objects.filter(user=user, client_message_id=client_message_id).first()
    if original is not None:
        return _replay(original, content=content, session_id=session_id)
    try:
        message, context = _observe(
            user=user,
            session_id=session_id,
            content=content,
            role=role,
            project=project,
            client_message_id=client_message_id,
        )
    except IntegrityError:
        # A concurrent retry stored it first: the unique constraint on (user, client_message_id) decided.
        original = ChatMessage.objects.filter(user=user, client_message_id=client_message_id).first()
        if original is None:
            raise
        return _replay(original, content=content, session_id=session_id)
    return Observed(message=message, context=context.as_dict())


def _replay(original: ChatMessage, *, content: str, session_id: str) -> Observed:
    if original.content != content or original.session_id != session_id:
        raise Conflict("This client_message_id was already used for a different message.", field="client_message_id")
    return Observed(message=original, context=original.replay_context or {}, replayed=True)


def _validate(*, content: str, role: str) -> None:
    if not (content or "").strip():
        raise ApplicationError("content must not be empty.", field="content")
    if len(content) > learning_settings.MESSAGE_MAX_CHARS:
        raise ApplicationError(f"content is at most {learning_settings.MESSAGE_MAX_CHARS} characters.", field="content")
    if role not in ChatMessage.Role.values:
        raise ApplicationError(f"Unknown role {role!r}.", field="role")


def _observe(
    *,
    user: User,
    session_id: str,
    content: str,
    role: str,
    project: Project | None,
    client_message_id: str | None = None,
) -> tuple[ChatMessage, Context]:
    message_id = uuid.uuid4()
    if role == ChatMessage.Role.USER and asks_to_stop(content):
        with transaction.atomic():
            taste_pattern_stop(user=user)  # "stop applying this": the pattern last applied to the user's runs
    # Built before the insert (a message with a client id stores the context it is answered with) and
    # outside the transaction: a slow or failing cache never holds it open, and a cache outage only
    # means an uncached context (learning.context.cache), never a lost message.
    scope = Scope(project_id=project.pk if project else None)
    context = context_build(user=user, message=content if role == ChatMessage.Role.USER else None, scope=scope)
    with transaction.atomic():
        message = ChatMessage.objects.create(
            id=message_id,
            session_id=session_id,
            user=user,
            project=project,
            role=role,
            content=content,
            client_message_id=client_message_id,
            replay_context=context.as_dict() if client_message_id else None,
        )
        if role == ChatMessage.Role.USER:
            PromptPattern.objects.create(
                user=user,
                session_id=session_id,
                message=message,
                prompt_hash=digest(" ".join(words(content))),  # equal for equal words, whatever the spacing
                prompt_summary=summarize(content, words=16),
            )
            if learning_settings.REGGIE_PREFERENCE_LEARNING:
                transaction.on_commit(lambda: _enqueue_analysis(str(message.pk)))
            else:
                ChatMessage.objects.filter(pk=message.pk).update(
                    analyzed_at=timezone.now(), analysis={"skipped": "preference learning is off"}
                )
        # In the same transaction: the injections are recorded with the message, at one commit.
        usages_record(user=user, context=context, scope=scope, response_id=str(message.pk))
    return message, context


def _enqueue_analysis(message_id: str) -> None:
    """Queue the analysis of a stored message, after commit. A broker that is down costs the request
    at most the bounded publish retries (CELERY_BROKER_CONNECTION_TIMEOUT, CELERY_TASK_PUBLISH_RETRY_POLICY)
    and is logged: the message stays stored, unanalysed, and learning.analyze_pending_messages (the
    sweep) queues it again. In eager mode (local, tests) an analysis that fails is logged the same way."""
    try:
        tasks.analyze_message.delay(message_id)
    except Exception:
        logger.warning("could not enqueue analysis of message %s; the sweep will retry", message_id, exc_info=True)


def _pattern_prune(user_id: int) -> int:
    """Keep the newest PROMPT_WINDOW prompt patterns of a user; delete the rest in one statement."""
    keep = (
        PromptPattern.objects.filter(user_id=user_id)
        .order_by("-created_at", "-id")
        .values_list("id", flat=True)[: learning_settings.PROMPT_WINDOW]
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
            analysis_claimed_until=now + timedelta(seconds=learning_settings.ANALYSIS_CLAIM_SECONDS)
        )
    return ids


def messages_analyze(*, message_ids: list[str]) -> dict[str, Analysis]:
    """Analyse user messages, oldest first, embedding them in one batch; already analysed or
    missing ones are skipped, so any delivery of any batch can run again harmlessly."""
    messages = list(
        ChatMessage.objects.select_related("user", "project")
        .filter(pk__in=message_ids, analyzed_at__isnull=True, role=ChatMessage.Role.USER)
        .order_by("created_at")
    )
    if not messages:
        return {}
    if not learning_settings.REGGIE_PREFERENCE_LEARNING:
        ChatMessage.objects.filter(pk__in=[m.pk for m in messages], analyzed_at__isnull=True).update(
            analyzed_at=timezone.now(), analysis={"skipped": "preference learning is off"}
        )
        return {}

    # Model work outside any transaction: one forward pass for the whole batch.
    vectors = get_embedder().embed([m.content for m in messages])
    categories = prompt_categories(vectors)
    analyzer = get_analyzer()
    results: dict[str, Analysis] = {}
    for message, vector, category in zip(messages, vectors, categories, strict=True):
        # The window is read per message, so a batch sees its own earlier messages.
        similar: list[SimilarPrompt] = []
        similar_patterns: list[PromptPattern] = []
        now = timezone.now()
        # Same task, whatever the wording: see learning.analyzer.workflows.
        window = [
            (p, p.embedding)
            for p in pattern_window(user_id=message.user_id, exclude_message_id=message.pk)
            if p.embedding is not None
        ]
        texts, window_vectors = [p.prompt_summary for p, _ in window], [e for _, e in window]
        for index, _ in same_task_matches(message.content, texts, vector, window_vectors):
            pattern, embedding = window[index]
            similarity = float(np.dot(vector, embedding))
            similar.append(SimilarPrompt(pattern.prompt_summary, (now - pattern.created_at).days, round(similarity, 3)))
            similar_patterns.append(pattern)
        similar.sort(key=lambda p: -p.similarity)
        data = AnalyzerInput(
            current_message=message.content,
            similar_past_prompts=similar[:10],
            match_count=len(similar),
            recent_context=[{"role": m.role, "content": m.content[:2000]} for m in recent_messages(message=message)],
        )
        # The local analyzer takes the vector just computed instead of embedding the message again.
        analyze_embedded = getattr(analyzer, "analyze_embedded", None)
        if analyze_embedded is not None:
            analysis = analyze_embedded([data], vector.reshape(1, -1))[0]
        else:
            analysis = analyzer.analyze(data)

        # The preference's own embedding too, before any lock is taken.
        preference_vector = (
            preference_prepare(user=message.user, description=analysis.preference.description)
            if analysis.preference is not None and not analysis.steering
            else None
        )
        with transaction.atomic():
            locked = (
                ChatMessage.objects.select_for_update(of=("self",)).select_related("user", "project").get(pk=message.pk)
            )
            if locked.analyzed_at is not None:
                continue  # another delivery got here first
            PromptPattern.objects.filter(message_id=message.pk).update(
                embedding=vector.astype(np.float32).tobytes(), prompt_category=category
            )
            locked.learned = _apply(locked, analysis, vector, similar_patterns, preference_vector)
            locked.analyzed_at = timezone.now()
            locked.analysis = analysis.as_dict()
            locked.save(update_fields=["analyzed_at", "analysis", "learned"])
        results[str(message.pk)] = analysis
    for user_id in {m.user_id for m in messages}:
        _pattern_prune(user_id)
    return results


def _apply(
    message: ChatMessage,
    analysis: Analysis,
    vector: np.ndarray,
    similar_patterns: list[PromptPattern],
    preference_vector: np.ndarray | None,
) -> list[dict[str, str]]:
    """Apply what the analysis found; returns what was learned ([{kind, id, text}])."""
    user = message.user
    learned: list[dict[str, str]] = []
    if analysis.analyzer.startswith("fallback"):
        message_event_record(
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
    if analysis.steering:
        # Text that tries to steer the assistant or other users teaches nothing: flagged for review.
        message_event_record(
            message,
            "steering",
            event_type="learned_text_flagged",
            event_family=EventFamily.USER_PREFERENCE,
            signal=Signal.NEEDS_REVIEW,
            reason_category="steering",
            free_text=message.content[:10_000],
            subject_type="message",
            subject_id=str(message.pk),
        )
        return learned
    if analysis.preference is not None:
        preference = preference_learn(
            user=user, finding=analysis.preference, source_message=message, vector=preference_vector
        )
        if not preference.candidate:  # a tentative candidate is not announced as learned
            learned.append({"kind": "preference", "id": str(preference.pk), "text": preference.description})
    if analysis.detected in ("correction", "pain_point"):
        kind = analysis.detected
        message_event_record(
            message,
            kind,
            event_type=kind,
            event_family=EventFamily.ASSISTANT_RESPONSE,
            signal=Signal.CORRECTED if kind == "correction" else Signal.NEGATIVE,
            reason_category=kind,
            free_text=message.content[:10_000],
            subject_type="message",
            subject_id=str(message.pk),
        )
        learned.append({"kind": kind, "id": str(message.pk), "text": summarize(message.content, words=24)})
    elif analysis.detected == "workflow" and analysis.workflow is not None:
        workflow = workflow_learn(
            user=user, finding=analysis.workflow, message=message, vector=vector, past=similar_patterns
        )
        learned.append({"kind": "workflow", "id": str(workflow.pk), "text": workflow.workflow_name})
    if analysis.memory is not None:
        memory = memory_remember(owner=user, finding=analysis.memory, source_message=message)
        learned.append({"kind": "memory", "id": str(memory.pk), "text": memory.content[:500]})
    return learned


def messages_release(*, message_ids: list[str], error: BaseException, count: bool = True) -> list[str]:
    """After a failed analysis, the messages of ``message_ids`` still waiting lose their claim, so the
    next delivery or the sweep takes them again at once. With ``count`` the failure is counted against
    each (in ``analysis``, which stays unread until the message is analysed); at ANALYSIS_MAX_ATTEMPTS a
    message is given up: marked analysed with the error, with an ``eval_failure`` event. Returns the ids
    given up."""
    given_up: list[str] = []
    reason = f"{type(error).__name__}: {str(error)[:300]}"
    with transaction.atomic():
        waiting = (
            ChatMessage.objects.select_for_update(of=("self",))
            .select_related("project")
            .filter(pk__in=message_ids, analyzed_at__isnull=True)
        )
        for message in waiting:
            message.analysis_claimed_until = None
            if not count:
                message.save(update_fields=["analysis_claimed_until"])
                continue
            previous = message.analysis if isinstance(message.analysis, dict) else {}
            attempts = int(previous.get("failed_attempts", 0)) + 1
            message.analysis = {"failed_attempts": attempts, "error": reason}
            if attempts >= learning_settings.ANALYSIS_MAX_ATTEMPTS:
                message.analyzed_at = timezone.now()
                message.learned = []
                message_event_record(
                    message,
                    "analysis_failed",
                    event_type="analysis_failed",
                    event_family=EventFamily.EVAL_FAILURE,
                    signal=Signal.FAILED,
                    reason_category="analysis_error",
                    free_text=f"analysis gave up after {attempts} attempts: {reason}",
                    subject_type="message",
                    subject_id=str(message.pk),
                )
                given_up.append(str(message.pk))
            message.save(update_fields=["analysis_claimed_until", "analysis", "analyzed_at", "learned"])
    logger.warning(
        "analysis of %d message(s) failed (%s); released%s",
        len(message_ids),
        reason,
        f", given up on {given_up}" if given_up else "",
    )
    return given_up
