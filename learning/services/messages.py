"""Chat messages: observe one, queue and claim its analysis, analyse a batch and apply what it teaches."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, OperationalError, connection, transaction
from django.db.models import F, Q, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from accounts.models import Project, User
from config.exceptions import ApplicationError, Conflict
from core.db import commit_without_waiting_for_disk
from core.embeddings import KnownVectors, get_embedder
from core.text import digest, summarize, words
from feedback.models import EventFamily, Signal
from learning import tasks
from learning.analyzer import get_analyzer
from learning.analyzer.base import (
    Analysis,
    AnalyzerInput,
    SimilarPrompt,
)
from learning.analyzer.workflows import prompt_categories, same_task_matches, words_embed
from learning.conf import learning_settings
from learning.context.build import Context, Scope, context_build
from learning.context.cache import cache_is_shared, context_warm
from learning.models import ChatMessage, PromptPattern
from learning.selectors import (
    PATTERN_WINDOW_ROWS,
    pattern_windows,
    recent_messages_many,
    unanalyzed_message_ids,
    users_with_unembedded_preferences,
)
from learning.services.common import message_event_record
from learning.services.memories import memory_remember
from learning.services.preferences import preference_embed_missing, preference_learn, preference_text
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
        # An observation: the answer is the context; a database crash may lose the last moments of them.
        commit_without_waiting_for_disk()
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


def analysis_in_process() -> bool:
    """Whether a message's analysis runs in this process when its transaction commits (eager tasks:
    local development and tests), rather than in a worker."""
    return bool(tasks.analyze_message.app.conf.task_always_eager)


def _queued_key() -> str:
    return f"learning:analysis-queued:{settings.CELERY_TASK_DEFAULT_QUEUE}"


# A queued analysis task that has not started yet will claim every message waiting when it does:
# a message stored meanwhile needs no task of its own. The mark expires on its own, so a task the
# broker lost holds nothing up for long (and the sweep finds what it left).
ANALYSIS_QUEUED_SECONDS = 10

# Per process: until when (time.monotonic()) a failed publish keeps requests from trying the broker.
_publish_down_until = 0.0


def _enqueue_analysis(message_id: str) -> None:
    """Queue the analysis of a stored message, unless a queued task that has not started yet will
    claim it anyway: under load one task drains a batch instead of one task per message. A broker
    that is down costs the request at most the bounded publish retries (CELERY_BROKER_CONNECTION_TIMEOUT,
    CELERY_TASK_PUBLISH_RETRY_POLICY) and is logged: the message stays stored, unanalysed, and
    learning.analyze_pending_messages (the sweep) queues it again. In eager mode (local, tests) an
    analysis that fails is logged the same way."""
    if time.monotonic() < _publish_down_until:
        # The broker failed a publish moments ago: no request waits out its timeouts again. The
        # worker's sweep when it reconnects (or beat's) queues the message.
        logger.info("broker marked down; analysis of message %s is left to the sweep", message_id)
        return
    key = _queued_key()
    try:
        if not cache.add(key, message_id, timeout=ANALYSIS_QUEUED_SECONDS):
            return
    except Exception:
        logger.warning("no cache to coalesce analysis tasks; queueing one for message %s", message_id, exc_info=True)
        # Coalesce within this process instead: the task of a publish already in flight claims this
        # message too when it runs (or, if that publish fails, the sweep does). Without this, with the
        # cache and the broker both hanging, every request waited out its own publish timeout.
        if not _publishing.acquire(blocking=False):
            return
        try:
            _publish(message_id)
        finally:
            _publishing.release()
        return
    _publish(message_id)


_publishing = threading.Lock()


def _publish(message_id: str) -> None:
    global _publish_down_until
    try:
        tasks.analyze_message.delay(message_id)
    except Exception:
        _analysis_dequeued()
        if not analysis_in_process():  # in-process, the failure was the analysis, not the broker
            _publish_down_until = time.monotonic() + learning_settings.ANALYSIS_PUBLISH_BREAKER_SECONDS
        logger.warning("could not enqueue analysis of message %s; the sweep will retry", message_id, exc_info=True)


def analysis_publish_breaker_reset() -> None:
    """Try the broker again at the next message (tests; an operator's shell after an outage)."""
    global _publish_down_until
    _publish_down_until = 0.0


def _analysis_dequeued() -> None:
    try:
        cache.delete(_queued_key())
    except Exception:
        logger.warning("could not clear the queued-analysis mark", exc_info=True)


def analysis_run(*, first_id: str) -> int:
    """What an analysis task does: claim a batch of waiting messages (``first_id`` first if it
    waits) and analyse it; returns how many were analysed. Messages stored from the moment it
    starts queue a new task; after a full batch, the next is queued (oldest first: it claims them)."""
    _analysis_dequeued()
    limit = learning_settings.ANALYSIS_BATCH_SIZE
    ids = messages_claim(first_id=first_id, limit=limit)
    if not ids:
        return 0
    analysed = _analyse_claimed(ids)
    if len(ids) == limit:
        _enqueue_analysis(first_id)
    return analysed


def _analyse_claimed(ids: list[str]) -> int:
    """Analyse claimed messages; a task never dies holding a claim: whatever fails, they are released."""
    try:
        return len(messages_analyze(message_ids=ids))
    except (OperationalError, ConnectionError, SoftTimeLimitExceeded) as exc:
        # Transient: retried as a whole. With the database gone the release fails too; then the claims
        # expire after ANALYSIS_CLAIM_SECONDS, and the original error is what Celery retries on.
        try:
            messages_release(message_ids=ids, error=exc, count=False)
        except Exception:
            logger.warning("could not release the claims of %d message(s)", len(ids), exc_info=True)
        raise
    except Exception as exc:  # noqa: BLE001 - anything else: find the message that fails, spare the others
        logger.warning("analysis of a batch of %d failed (%r); analysing one at a time", len(ids), exc)
        done = 0
        for one in ids:
            try:
                done += len(messages_analyze(message_ids=[one]))
            except Exception as failure:  # noqa: BLE001 - counted against this message, released for the sweep
                messages_release(message_ids=[one], error=failure)
        return done


def analysis_sweep(*, older_than_seconds: int) -> int:
    """Queue analysis for messages whose own task never ran (the broker was down when they came):
    one task, which claims the oldest first and queues the next batch while any are left."""
    ids = unanalyzed_message_ids(older_than_seconds=older_than_seconds)
    if ids:
        _analysis_dequeued()  # a mark left by a task the broker lost must not hold this one back
        analysis_publish_breaker_reset()  # the sweep is the retry: it tries the broker now
        _enqueue_analysis(ids[0])
    return len(ids)


def _patterns_prune(user_ids: set[int]) -> int:
    """Keep the newest PROMPT_WINDOW prompt patterns of each of these users; delete the rest in one statement."""
    ranked = PromptPattern.objects.filter(user_id__in=user_ids).annotate(
        newer=Window(RowNumber(), partition_by=[F("user_id")], order_by=[F("created_at").desc(), F("id").desc()])
    )
    stale = list(ranked.filter(newer__gt=learning_settings.PROMPT_WINDOW).values_list("id", flat=True))
    if not stale:
        return 0
    deleted, _ = PromptPattern.objects.filter(id__in=stale).delete()
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

    # Model work outside any transaction: one forward pass for the batch's messages, one for the
    # context turns no stored vector covers, one for the preferences found.
    embedder = get_embedder()
    from learning.analyzer.model import embed_texts_with_states  # noqa: PLC0415  heavy: scikit-learn, the worker's

    # The local analyzer also reads an early layer of the same forward pass (when the model gives it), and its
    # tuned type reader continues from that layer's token states.
    vectors, layers, states = embed_texts_with_states(embedder, [m.content for m in messages])
    categories = prompt_categories(vectors)
    patterns = {p.message_id: p for p in PromptPattern.objects.filter(message_id__in=[m.pk for m in messages])}
    items, similar_patterns, earlier = _inputs(messages, vectors, patterns)
    known = KnownVectors(embedder, _known_vectors(messages, vectors, earlier))
    analyses = _analyses(items, vectors, known, layers, states)
    preference_vectors = _preference_vectors(messages, analyses, known)

    # Each message is applied in a short transaction of its own: what it teaches locks rows of its
    # user (a preference locks the user's row, which storing their next message must read), and a
    # request must not wait for a whole batch. The guarded update claims the message: a concurrent
    # delivery of the same message waits on it, finds the message analysed and keeps nothing.
    results: dict[str, Analysis] = {}
    for message, vector, category, analysis, past, preference_vector in zip(
        messages, vectors, categories, analyses, similar_patterns, preference_vectors, strict=True
    ):
        with transaction.atomic():
            learned = _apply(message, analysis, vector, past, preference_vector)
            claimed = ChatMessage.objects.filter(pk=message.pk, analyzed_at__isnull=True).update(
                analyzed_at=timezone.now(), analysis=analysis.as_dict(), learned=learned
            )
            if not claimed:  # another delivery got here first
                transaction.set_rollback(True)
                continue
            PromptPattern.objects.filter(message_id=message.pk).update(
                embedding=vector.astype(np.float32).tobytes(), prompt_category=category
            )
        results[str(message.pk)] = analysis
    _patterns_prune({m.user_id for m in messages})
    if results and (cache_is_shared() or analysis_in_process()):
        # What this batch taught changed these users' cached context: their next request finds it
        # rebuilt rather than rebuilding it (a worker's local-memory cache would reach no request).
        context_warm(users=[m.user for m in messages if str(m.pk) in results])
    return results


def _inputs(
    messages: list[ChatMessage], vectors: np.ndarray, patterns: dict[Any, PromptPattern]
) -> tuple[list[AnalyzerInput], list[list[PromptPattern]], dict[Any, str]]:
    """What the analyzer reads about each message, the past requests of the same task, and the
    user's earlier turns in the conversations read (id: content).

    Each message's window is the user's embedded prompt patterns as they stand when it is applied:
    the stored ones (read once for the batch's users) and those of the batch's earlier messages,
    embedded just now; ``patterns`` are the batch's own (by message id)."""
    windows = pattern_windows(user_ids={m.user_id for m in messages})
    recents = recent_messages_many(messages=messages)
    words_embed([m.content for m in messages] + [p.prompt_summary for w in windows.values() for p in w])
    items: list[AnalyzerInput] = []
    similar_patterns: list[list[PromptPattern]] = []
    earlier: dict[Any, str] = {}
    for message, vector in zip(messages, vectors, strict=True):
        now = timezone.now()
        window = [p for p in windows[message.user_id] if p.message_id != message.pk and p.embedding is not None]
        texts = [p.prompt_summary for p in window]
        window_vectors = [p.embedding for p in window if p.embedding is not None]
        similar: list[SimilarPrompt] = []
        past: list[PromptPattern] = []
        # Same task, whatever the wording: see learning.analyzer.workflows.
        for index, _ in same_task_matches(message.content, texts, vector, window_vectors):
            pattern = window[index]
            similarity = float(np.dot(vector, window_vectors[index]))
            similar.append(SimilarPrompt(pattern.prompt_summary, (now - pattern.created_at).days, round(similarity, 3)))
            past.append(pattern)
        similar.sort(key=lambda p: -p.similarity)
        recent = recents[message.pk]
        earlier.update((m.pk, m.content) for m in recent if m.role == ChatMessage.Role.USER)
        items.append(
            AnalyzerInput(
                current_message=message.content,
                similar_past_prompts=similar[:10],
                match_count=len(similar),
                recent_context=[{"role": m.role, "content": m.content[:2000]} for m in recent],
            )
        )
        similar_patterns.append(past)
        own = patterns.get(message.pk)
        if own is not None:  # embedded when this message is applied: in the window of the next ones
            own.embedding = vector
            windows[message.user_id] = sorted(
                [own, *windows[message.user_id]], key=lambda p: p.created_at, reverse=True
            )[:PATTERN_WINDOW_ROWS]
    return items, similar_patterns, earlier


def _known_vectors(messages: list[ChatMessage], vectors: np.ndarray, earlier: dict[Any, str]) -> dict[str, np.ndarray]:
    """Vectors the analyzer would otherwise compute again for the conversation it reads: the
    batch's messages and the user's earlier turns, whose embedding is stored with their prompt
    (each the vector of the message's whole content, so it serves only that very text)."""
    known = {m.content: v for m, v in zip(messages, vectors, strict=True)}
    wanted = [pk for pk, content in earlier.items() if content not in known]
    if wanted:
        stored = PromptPattern.objects.filter(message_id__in=wanted, embedding__isnull=False)
        for message_id, embedding in stored.values_list("message_id", "embedding"):
            known.setdefault(earlier[message_id], embedding)
    return known


def _analyses(
    items: list[AnalyzerInput],
    vectors: np.ndarray,
    known: KnownVectors,
    layers: np.ndarray | None,
    states: list[Any] | None = None,
) -> list[Analysis]:
    analyzer = get_analyzer()
    # The local analyzer takes the vectors just computed, and the known ones of the context, in one call.
    analyze_embedded = getattr(analyzer, "analyze_embedded", None)
    if analyze_embedded is not None:
        return analyze_embedded(items, vectors, embedder=known, layers=layers, states=states)
    return [analyzer.analyze(item) for item in items]


def _preference_vectors(
    messages: list[ChatMessage], analyses: list[Analysis], known: KnownVectors
) -> list[np.ndarray | None]:
    """The embedding of each preference found (one pass for the batch), before any lock is taken."""
    wanted = [i for i, analysis in enumerate(analyses) if analysis.preference is not None and not analysis.steering]
    result: list[np.ndarray | None] = [None] * len(messages)
    if not wanted:
        return result
    users = {messages[i].user_id: messages[i].user for i in wanted}
    for user_id in users_with_unembedded_preferences(user_ids=users):
        preference_embed_missing(users[user_id])
    descriptions = [preference_text(analyses[i].preference.description) for i in wanted]  # type: ignore[union-attr]
    for i, vector in zip(wanted, known.embed(descriptions), strict=True):
        result[i] = vector
    return result


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
        if workflow is not None:
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
