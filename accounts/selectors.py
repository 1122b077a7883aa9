"""Reads of accounts data, with the access rules applied."""

from __future__ import annotations

import copy
import logging
import threading

from cachetools import TTLCache
from django.core.cache import cache
from django.db.models import Exists, OuterRef, QuerySet

from accounts.actors import Actor
from accounts.conf import accounts_settings
from accounts.models import ApiKey, Project, ProjectMembership, User
from core.text import digest

logger = logging.getLogger(__name__)


def api_key_digest(raw_key: str) -> str:
    """SHA-256 of a raw key: keys are 256-bit random, so a fast digest is the right hash."""
    return digest(raw_key)


# Authentication runs on every request; resolving a key (and a service's on-behalf-of user)
# costs a query each. Resolved keys, with their owner, are kept in the shared cache (Redis in
# production) for API_KEY_CACHE_SECONDS: revoking a key through accounts.services replaces its
# entry with a tombstone that a concurrent lookup cannot overwrite (entries are only ever
# *added*), so a revocation holds at once in every process. A change made behind the service's
# back (SQL, a deactivated owner) holds within the window. On-behalf-of users are cached per
# process for the same window. Only hits are cached; each caller gets its own copy.
_REVOKED = "revoked"
_cache_lock = threading.Lock()
_user_cache: TTLCache | None = None


def _user_memo() -> TTLCache | None:
    global _user_cache
    ttl = accounts_settings.API_KEY_CACHE_SECONDS
    if ttl <= 0:
        return None
    if _user_cache is None or _user_cache.ttl != ttl:
        _user_cache = TTLCache(maxsize=65536, ttl=ttl)
    return _user_cache


def _key_cache_key(hashed_key: str) -> str:
    return f"apikey:{hashed_key}"


def auth_cache_clear() -> None:
    """Forget every on-behalf-of user memoised in this process (tests, and after bulk changes to users)."""
    with _cache_lock:
        if _user_cache is not None:
            _user_cache.clear()
        if _limit_cache is not None:
            _limit_cache.clear()


def auth_cache_forget_user(*, external_id: str) -> None:
    """Forget a cached on-behalf-of user (deactivated, erased, or created by a rolled-back request)."""
    with _cache_lock:
        if _user_cache is not None:
            _user_cache.pop(external_id, None)


def api_key_cache_forget(*, hashed_key: str) -> None:
    """Make every process resolve this key from the database again (after a revocation)."""
    ttl = accounts_settings.API_KEY_CACHE_SECONDS
    try:
        if ttl > 0:
            cache.set(_key_cache_key(hashed_key), _REVOKED, ttl)
        else:
            cache.delete(_key_cache_key(hashed_key))
    except Exception:
        logger.error(
            "could not invalidate the cached api key %s…; the change holds within %s s",
            hashed_key[:8],
            ttl,
            exc_info=True,
        )


def api_key_get_for_raw(*, raw_key: str) -> ApiKey | None:
    """The active key matching a raw key, with its owner, or None."""
    hashed = api_key_digest(raw_key)
    ttl = accounts_settings.API_KEY_CACHE_SECONDS
    if ttl > 0:
        try:
            cached = cache.get(_key_cache_key(hashed))
        except Exception:  # the cache is down: resolve from the database, cache nothing
            logger.warning("api key cache unreachable; resolving from the database", exc_info=True)
            cached, ttl = None, 0
        if isinstance(cached, ApiKey):
            return cached
    try:
        key = ApiKey.objects.select_related("owner").get(hashed_key=hashed, revoked_at__isnull=True)
    except ApiKey.DoesNotExist:
        return None
    if ttl > 0:
        try:
            cache.add(_key_cache_key(hashed), key, ttl)  # never over a tombstone
        except Exception:
            logger.warning("api key cache unreachable; key not cached", exc_info=True)
    return key


# A service key's project limit, per process like the keys themselves (a change reaches the
# process that made it at once, the others within API_KEY_CACHE_SECONDS).
_limit_cache: TTLCache | None = None


def _limits() -> TTLCache | None:
    global _limit_cache
    ttl = accounts_settings.API_KEY_CACHE_SECONDS
    if ttl <= 0:
        return None
    if _limit_cache is None or _limit_cache.ttl != ttl:
        _limit_cache = TTLCache(maxsize=4096, ttl=ttl)
    return _limit_cache


def api_key_project_ids(*, api_key: ApiKey) -> frozenset[int] | None:
    """The projects a service key is limited to, or None (every project; user keys always None)."""
    if not api_key.is_service:
        return None
    key_id = str(api_key.pk)
    with _cache_lock:
        limits = _limits()
        if limits is not None and key_id in limits:
            return limits[key_id]
    ids = frozenset(ApiKey.projects.through.objects.filter(apikey_id=api_key.pk).values_list("project_id", flat=True))
    limit = ids or None
    if limits is not None:
        with _cache_lock:
            limits[key_id] = limit
    return limit


def api_key_project_limit_forget(*, api_key_id: str) -> None:
    with _cache_lock:
        if _limit_cache is not None:
            _limit_cache.pop(str(api_key_id), None)


def api_key_list(*, actor: Actor) -> QuerySet[ApiKey]:
    """The keys the actor owns (admins: every key), newest first."""
    qs = ApiKey.objects.select_related("owner").prefetch_related("projects")
    if actor.is_admin:
        return qs
    return qs.filter(owner=actor.user)


def user_get_by_external_id(*, external_id: str) -> User | None:
    """The user a service names by external id (cached like keys), or None."""
    with _cache_lock:
        memo = _user_memo()
        cached = memo.get(external_id) if memo is not None else None
    if cached is not None:
        return copy.copy(cached)
    user = User.objects.filter(external_id=external_id).first()
    if user is not None and memo is not None:
        with _cache_lock:
            memo[external_id] = copy.copy(user)
    return user


def user_exists_by_external_id(*, external_id: str) -> bool:
    """Whether the user a service names exists: ``user_get_by_external_id`` without the copy."""
    with _cache_lock:
        memo = _user_memo()
        if memo is not None and memo.get(external_id) is not None:
            return True
    return user_get_by_external_id(external_id=external_id) is not None


def project_list(*, actor: Actor) -> QuerySet[Project]:
    """Projects the actor can see: all for admins and services, else their own; a service key
    limited to projects sees those only."""
    if actor.sees_everything:
        return Project.objects.all()
    if actor.is_service:
        return Project.objects.filter(pk__in=actor.project_ids or ())
    qs = Project.objects.filter(memberships__user=actor.user)
    return qs.filter(pk__in=actor.project_ids) if actor.project_ids is not None else qs


def project_get_by_slug(*, slug: str) -> Project | None:
    return Project.objects.filter(slug=slug).first()


def project_get_for_member(*, slug: str, user: User) -> Project | None:
    """The project, with ``is_member`` telling whether ``user`` belongs to it (one query)."""
    membership = ProjectMembership.objects.filter(project=OuterRef("pk"), user=user)
    return Project.objects.filter(slug=slug).annotate(is_member=Exists(membership)).first()


def project_ids_for_user(*, user: User) -> QuerySet:
    """The ids of the projects a user is a member of, as a subquery."""
    return ProjectMembership.objects.filter(user=user).values("project_id")


def project_memberships_of_users(*, user_ids: list[int]) -> QuerySet:
    """(user id, project id) of every membership of these users."""
    return ProjectMembership.objects.filter(user_id__in=user_ids).values_list("user_id", "project_id")


def user_is_project_member(*, user: User, project: Project) -> bool:
    return ProjectMembership.objects.filter(user=user, project=project).exists()


def actor_may_use_project(*, actor: Actor, project: Project) -> bool:
    """May the actor read and write this project's data? Admins and the unlimited service: any;
    a limited service key: its projects; a user (and a service key acting for one): the user's
    projects, within the key's limit."""
    if actor.sees_everything:
        return True
    if not actor.may_use_project(project.pk):
        return False
    if actor.is_service:
        return True
    return actor.user is not None and user_is_project_member(user=actor.user, project=project)
