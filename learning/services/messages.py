"""Chat messages: observe one, queue and claim its analysis, analyse a batch and apply what it teaches."""

from __future__ import annotations

import logging
from datetime import timedelta

import numpy as np
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from accounts.models import Project, User
from config.exceptions import ApplicationError
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
from learning.services.preferences import preference_learn
from learning.services.taste import taste_pattern_stop
from learning.services.taste_rules import asks_to_stop
from learning.services.usages import usages_record
from learning.services.workflows import workflow_learn

logger = logging.getLogger(__name__)


def message_observe(
    *, user: User, session_id: str, content: str, role: str = ChatMessage.Role.USER, project: Project | None = None
) -> tuple[ChatMessage, Context]:
    """Store a chat message (and, for a user message, its prompt pattern), queue its analysis
    after commit, and return the context to inject into this very call. No model work here."""
    content = content or ""
    if not content.strip():
        raise ApplicationError("content must not be empty.", field="content")
    if len(content) > learning_settings.MESSAGE_MAX_CHARS:
        raise ApplicationError(f"content is at most {learning_settings.MESSAGE_MAX_CHARS} characters.", field="content")
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
                prompt_hash=digest(" ".join(words(content))),  # equal for equal words, whatever the spacing
                prompt_summary=summarize(content, words=16),
            )
            if learning_settings.REGGIE_PREFERENCE_LEARNING:
                transaction.on_commit(lambda: _enqueue_analysis(str(message.pk)))
            else:
                ChatMessage.objects.filter(pk=message.pk).update(
                    analyzed_at=timezone.now(), analysis={"skipped": "preference learning is off"}
                )
            if asks_to_stop(content):
                taste_pattern_stop(user=user)  # "stop applying this": the pattern last applied to the user's runs
        # In the same transaction: the injections are recorded with the message, at one commit.
        scope = Scope(project_id=project.pk if project else None)
        context = context_build(user=user, message=content if role == ChatMessage.Role.USER else None, scope=scope)
        usages_record(user=user, context=context, scope=scope, response_id=str(message.pk))
    return message, context


def _enqueue_analysis(message_id: str) -> None:
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

        with transaction.atomic():
            locked = (
                ChatMessage.objects.select_for_update(of=("self",)).select_related("user", "project").get(pk=message.pk)
            )
            if locked.analyzed_at is not None:
                continue  # another delivery got here first
            PromptPattern.objects.filter(message_id=message.pk).update(
                embedding=vector.astype(np.float32).tobytes(), prompt_category=category
            )
            _apply(locked, analysis, vector, similar_patterns)
            locked.analyzed_at = timezone.now()
            locked.analysis = analysis.as_dict()
            locked.save(update_fields=["analyzed_at", "analysis"])
        results[str(message.pk)] = analysis
    for user_id in {m.user_id for m in messages}:
        _pattern_prune(user_id)
    return results


def _apply(message: ChatMessage, analysis: Analysis, vector: np.ndarray, similar_patterns: list[PromptPattern]) -> None:
    user = message.user
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
    if analysis.preference is not None:
        preference_learn(user=user, finding=analysis.preference, source_message=message)
    if analysis.detected == "correction":
        message_event_record(
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
        message_event_record(
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
        workflow_learn(user=user, finding=analysis.workflow, message=message, vector=vector, past=similar_patterns)
    if analysis.memory is not None:
        memory_remember(owner=user, finding=analysis.memory, source_message=message)
