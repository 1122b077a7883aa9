"""Reads of what was learned about a user: their own rows, and the shared ones they may see."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import timedelta
from uuid import UUID

from django.db import connection
from django.db.models import F, Q, QuerySet, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from accounts.models import Project, User
from accounts.selectors import project_ids_for_user
from core.ids import parse_uuid
from learning.conf import learning_settings
from learning.corrections import patterns_consistent
from learning.models import ChatMessage, LearnedWorkflow, Memory, Preference, PromptPattern, TastePattern


def preference_list(*, user: User, active: bool | None = None) -> QuerySet[Preference]:
    qs = Preference.objects.filter(user=user).order_by("-active", "-confidence", "-last_reinforced_at")
    return qs if active is None else qs.filter(active=active)


def users_with_unembedded_preferences(*, user_ids: Iterable[int]) -> set[int]:
    """Which of these users have a preference stored without its vector (rows from before open-set
    preferences), in one query."""
    return set(
        Preference.objects.filter(user_id__in=list(user_ids), embedding__isnull=True).values_list("user_id", flat=True)
    )


def preference_get(*, user: User, preference_id: int) -> Preference | None:
    """The user's preference, or None (also for another user's id: ids do not leak)."""
    return Preference.objects.filter(user=user, pk=preference_id).first()


def preference_check_in_list(*, user: User) -> QuerySet[Preference]:
    """Preferences that faded for lack of reinforcement: "are these still accurate?"."""
    return Preference.objects.filter(user=user, active=False, inactive_reason="decayed").order_by("-last_reinforced_at")


def workflow_list(*, user: User, active: bool | None = None) -> QuerySet[LearnedWorkflow]:
    qs = LearnedWorkflow.objects.filter(user=user).order_by("-active", "-confidence", "-times_detected")
    return qs if active is None else qs.filter(active=active)


def workflow_get(*, user: User, workflow_id: int) -> LearnedWorkflow | None:
    return LearnedWorkflow.objects.filter(user=user, pk=workflow_id).first()


def memory_visibility_q(*, user: User, project: Project | None = None) -> Q:
    """The memories a user may see: their own private ones, team memories, and project memories
    of projects they belong to (of ``project`` alone, when given). Never another user's private one."""
    shared_projects = Q(project_id__in=project_ids_for_user(user=user))
    if project is not None:
        shared_projects = Q(project=project) & shared_projects
    return (
        Q(owner=user, visibility=Memory.Visibility.PRIVATE)
        | Q(visibility=Memory.Visibility.TEAM)
        | (Q(visibility=Memory.Visibility.PROJECT) & shared_projects)
    )


def memory_list(*, user: User, project: Project | None = None, within: Q | None = None) -> QuerySet[Memory]:
    """Memories the user may see (see memory_visibility_q), most confident first. ``within`` narrows
    them further (a service key's project limit: ``Actor.limit_q()``)."""
    visible = memory_visibility_q(user=user, project=project) & (within or Q())
    return Memory.objects.filter(visible, status=Memory.Status.ACTIVE).order_by("-confidence", "-created_at")


def memory_get_visible(*, user: User, memory_id: str, within: Q | None = None) -> Memory | None:
    """A memory the user may see (their own private one, or a shared one in their reach), or None."""
    if parse_uuid(memory_id) is None:
        return None
    visible = memory_visibility_q(user=user) & (within or Q())
    return Memory.objects.select_related("owner").filter(visible, pk=memory_id).first()


def memory_get_own(*, user: User, memory_id: str) -> Memory | None:
    """One of the user's own private memories (None for anybody else's: ids do not leak)."""
    if parse_uuid(memory_id) is None:
        return None
    return Memory.objects.filter(owner=user, pk=memory_id, visibility=Memory.Visibility.PRIVATE).first()


def taste_pattern_list(*, user: User) -> QuerySet[TastePattern]:
    return TastePattern.objects.filter(user=user).order_by("status", "-confidence", "-observations")


def taste_patterns_applicable(*, user: User, plugin: str, command: str | None) -> list[TastePattern]:
    """The patterns applied to the user's next run of plugin/command: candidates (on trial) and
    active ones, for that command or for every command of the plugin, never two that contradict
    (the command's own before a plugin-wide one; see ``patterns_consistent``)."""
    live = TastePattern.objects.filter(
        Q(command=command) | Q(command__isnull=True),
        user=user,
        plugin=plugin,
        status__in=[TastePattern.Status.CANDIDATE, TastePattern.Status.ACTIVE],
    ).order_by("-confidence", "-observations", "-updated_at", "-pk")
    return patterns_consistent(live, command=command)[: learning_settings.CONTEXT_MAX_TASTE_PATTERNS]


def message_get_own(*, user: User, message_id: str) -> ChatMessage | None:
    """One of the user's own chat messages (None for anybody else's: ids do not leak)."""
    if parse_uuid(message_id) is None:
        return None
    return ChatMessage.objects.filter(user=user, pk=message_id).first()


def messages_exist(*, user: User) -> bool:
    """Whether the user has any chat message (the demo seed's sign that its story is there)."""
    return ChatMessage.objects.filter(user=user).exists()


def message_get(*, message_id: str) -> ChatMessage | None:
    return ChatMessage.objects.select_related("user").filter(pk=message_id).first()


def answered_request_newest(*, message_ids: Sequence[UUID]) -> tuple[str, str] | None:
    """The newest of these requests that has an answer (the message that followed it in its session
    is the assistant's, not empty), with that answer; None when none has one.

    One statement, written out: the worker asks this on every reinforcement of a workflow that has
    no example yet (with clients that never post answers, on every one), and building it with the
    ORM (two correlated subqueries) cost 2.4-3.0 ms of CPU a call against 0.15 ms for the statement."""
    if not message_ids:
        return None
    table, pk = ChatMessage._meta.db_table, ChatMessage._meta.pk
    assert pk is not None
    ids = [pk.get_db_prep_value(message_id, connection) for message_id in message_ids]
    sql = (
        f"SELECT r.content, a.content FROM {table} r JOIN {table} a ON a.id = ("  # noqa: S608 (names, not input)
        f"SELECT n.id FROM {table} n WHERE n.user_id = r.user_id AND n.session_id = r.session_id "
        "AND n.created_at > r.created_at ORDER BY n.created_at LIMIT 1) "
        f"WHERE r.id IN ({', '.join(['%s'] * len(ids))}) AND a.role = %s AND a.content <> '' "
        "ORDER BY r.created_at DESC LIMIT 1"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*ids, ChatMessage.Role.ASSISTANT.value])
        row = cursor.fetchone()
    return (row[0], row[1]) if row else None


def recent_messages(*, message: ChatMessage, limit: int = 4) -> list[ChatMessage]:
    """The messages of the same session just before this one, oldest first."""
    earlier = (
        ChatMessage.objects.filter(
            user_id=message.user_id, session_id=message.session_id, created_at__lt=message.created_at
        )
        .only("id", "role", "content", "created_at")
        .order_by("-created_at")[:limit]
    )
    return list(reversed(earlier))


def recent_messages_many(*, messages: Sequence[ChatMessage], limit: int = 4) -> dict[UUID, list[ChatMessage]]:
    """``recent_messages`` of each of ``messages`` (by id), one query for all their sessions.

    Per session it reads the newest messages before the session's latest one in ``messages``:
    enough for every one of them unless other messages came between them; such a message (rare:
    several of the same session, far apart) is read on its own."""
    sessions: dict[tuple[int, str], list[ChatMessage]] = defaultdict(list)
    for message in messages:
        sessions[(message.user_id, message.session_id)].append(message)
    if not sessions or limit <= 0:
        return {message.pk: [] for message in messages}
    depth = limit + max(len(group) for group in sessions.values()) - 1
    bounds = Q()
    for (user_id, session_id), group in sessions.items():
        bounds |= Q(user_id=user_id, session_id=session_id, created_at__lt=max(m.created_at for m in group))
    rows = (
        ChatMessage.objects.filter(bounds)
        .annotate(
            newest=Window(RowNumber(), partition_by=[F("user_id"), F("session_id")], order_by=F("created_at").desc())
        )
        .filter(newest__lte=depth)
        .only("id", "user_id", "session_id", "role", "content", "created_at")
    )
    read: dict[tuple[int, str], list[ChatMessage]] = defaultdict(list)
    for row in rows:
        read[(row.user_id, row.session_id)].append(row)
    result: dict[UUID, list[ChatMessage]] = {}
    for key, group in sessions.items():
        newest = sorted(read[key], key=lambda row: row.created_at)
        whole_session = len(newest) < depth  # everything before the latest was read
        for message in group:
            before = [row for row in newest if row.created_at < message.created_at]
            if whole_session or len(before) >= limit:
                result[message.pk] = before[-limit:]
            else:
                result[message.pk] = recent_messages(message=message, limit=limit)
    return result


PATTERN_WINDOW_ROWS = 100  # the newest embedded prompts a new one is compared with


def pattern_window(*, user_id: int, exclude_message_id: UUID | None = None) -> list[PromptPattern]:
    """The user's embedded prompt patterns in the rolling window, newest first."""
    qs = PromptPattern.objects.filter(user_id=user_id, embedding__isnull=False).order_by("-created_at")
    if exclude_message_id is not None:
        qs = qs.exclude(message_id=exclude_message_id)
    return list(qs.only("id", "prompt_summary", "created_at", "embedding", "message_id")[:PATTERN_WINDOW_ROWS])


def pattern_windows(*, user_ids: Iterable[int]) -> dict[int, list[PromptPattern]]:
    """``pattern_window`` of each of these users, in one query."""
    windows: dict[int, list[PromptPattern]] = {user_id: [] for user_id in user_ids}
    if not windows:
        return windows
    rows = (
        PromptPattern.objects.filter(user_id__in=list(windows), embedding__isnull=False)
        .annotate(newest=Window(RowNumber(), partition_by=[F("user_id")], order_by=F("created_at").desc()))
        .filter(newest__lte=PATTERN_WINDOW_ROWS)
        .only("id", "user_id", "prompt_summary", "created_at", "embedding", "message_id")
    )
    for row in rows:
        windows[row.user_id].append(row)
    for window in windows.values():
        window.sort(key=lambda row: row.created_at, reverse=True)
    return windows


def unanalyzed_message_ids(*, older_than_seconds: int, limit: int = 500) -> list[str]:
    """User messages still waiting for analysis (their enqueue failed or their task was lost)."""
    cutoff = timezone.now() - timedelta(seconds=older_than_seconds)
    return [
        str(pk)
        for pk in ChatMessage.objects.filter(
            analyzed_at__isnull=True, role=ChatMessage.Role.USER, created_at__lt=cutoff
        )
        .order_by("created_at")
        .values_list("pk", flat=True)[:limit]
    ]
