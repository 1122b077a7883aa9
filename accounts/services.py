"""Writes of accounts data: users, projects, memberships, API keys."""

from __future__ import annotations

import secrets
from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from accounts.models import ApiKey, Project, ProjectMembership, User
from accounts.selectors import (
    api_key_cache_forget,
    api_key_digest,
    api_key_project_limit_forget,
    user_get_by_external_id,
)
from config.exceptions import AccessDenied, ApplicationError
from core.text import digest

API_KEY_SCHEME = "llk"
EXTERNAL_ID_MAX = 255


def _external_username(external_id: str) -> str:
    username = f"ext:{external_id}"
    if len(username) <= 150:
        return username
    return "ext:" + digest(external_id)


def validate_external_id(external_id: str, *, field: str = "X-On-Behalf-Of") -> str:
    """An external user id: 1..255 printable characters, surrounding spaces removed."""
    value = (external_id or "").strip()
    if not value:
        raise ApplicationError("An external user id must not be empty.", field=field)
    if len(value) > EXTERNAL_ID_MAX:
        raise ApplicationError(f"An external user id is at most {EXTERNAL_ID_MAX} characters.", field=field)
    if not value.isprintable():
        raise ApplicationError("An external user id must not contain control characters.", field=field)
    return value


def user_get_or_create_external(*, external_id: str) -> User:
    """The user a service names by external id; created on first sight."""
    external_id = validate_external_id(external_id)
    user = user_get_by_external_id(external_id=external_id)
    if user is not None:
        return user
    try:
        with transaction.atomic():
            user = User(username=_external_username(external_id), external_id=external_id)
            user.set_unusable_password()
            user.save()
            return user
    except IntegrityError:
        # Another request created it first.
        user = user_get_by_external_id(external_id=external_id)
        if user is None:
            raise
        return user


def user_ensure(*, username: str, password: str, is_staff: bool = False, external_id: str | None = None) -> User:
    """The user with this username; created (staff admins as superusers) with the password if new."""
    user = User.objects.filter(username=username).first()
    if user is not None:
        return user
    user = User(username=username, is_staff=is_staff, is_superuser=is_staff, external_id=external_id)
    user.set_password(password)
    user.save()
    return user


def project_ensure(*, slug: str, name: str) -> Project:
    """The project with this slug; created with the name if new."""
    project, _ = Project.objects.get_or_create(slug=slug, defaults={"name": name})
    return project


def project_member_add(*, project: Project, user: User, role: str = ProjectMembership.Role.MEMBER) -> ProjectMembership:
    """Add a user to a project, or change their role there."""
    if role not in ProjectMembership.Role.values:
        raise ApplicationError(f"Unknown role {role!r}.", field="role")
    membership, _ = ProjectMembership.objects.update_or_create(project=project, user=user, defaults={"role": role})
    return membership


def api_key_create(
    *, owner: User, name: str, kind: str = ApiKey.Kind.USER, projects: list[Project] | None = None
) -> tuple[ApiKey, str]:
    """Create a key; returns the row and the raw key, which is never stored or shown again.
    A service key may be limited to ``projects`` at once."""
    if kind not in ApiKey.Kind.values:
        raise ApplicationError(f"Unknown key kind {kind!r}; use 'user' or 'service'.", field="kind")
    name = (name or "").strip()
    if not name:
        raise ApplicationError("A key needs a name.", field="name")
    if kind == ApiKey.Kind.SERVICE and not owner.is_staff:
        raise AccessDenied("Only staff admins may own service keys.", field="kind")
    raw = f"{API_KEY_SCHEME}_{secrets.token_hex(4)}_{secrets.token_urlsafe(32)}"
    if projects and kind != ApiKey.Kind.SERVICE:
        raise ApplicationError("Only service keys can be limited to projects.", field="projects")
    with transaction.atomic():
        key = ApiKey.objects.create(
            owner=owner, name=name[:100], kind=kind, prefix=raw[:12], hashed_key=api_key_digest(raw)
        )
        if projects:
            key.projects.set(projects)
    return key, raw


def api_key_projects_set(*, api_key: ApiKey, projects: list[Project]) -> ApiKey:
    """Limit a service key to these projects (an empty list lifts the limit); takes effect at once
    in this process, in the others within API_KEY_CACHE_SECONDS."""
    if not api_key.is_service:
        raise ApplicationError("Only service keys can be limited to projects.", field="projects")
    with transaction.atomic():
        ApiKey.objects.select_for_update().filter(pk=api_key.pk).first()
        api_key.projects.set(projects)
    api_key_project_limit_forget(api_key_id=str(api_key.pk))
    return api_key


def api_key_revoke(*, api_key: ApiKey) -> ApiKey:
    """Revoke a key (idempotent); the row stays for the audit trail."""
    with transaction.atomic():
        key = ApiKey.objects.select_for_update().get(pk=api_key.pk)
        if key.revoked_at is None:
            key.revoked_at = timezone.now()
            key.save(update_fields=["revoked_at"])
    api_key_cache_forget(hashed_key=key.hashed_key)
    return key


def api_key_mark_used(*, api_key_id: str, used_at: datetime) -> int:
    """Move a key's last_used_at forward to ``used_at`` (never back); returns rows changed."""
    return (
        ApiKey.objects.filter(pk=api_key_id)
        .filter(Q(last_used_at__isnull=True) | Q(last_used_at__lt=used_at))
        .update(last_used_at=used_at)
    )


def user_delete_erased(*, user: User, counts: dict[str, int]) -> None:
    """The last step of an erasure (``promotions.erasure``): the user's keys, memberships, sessions,
    the admin log's entries about them and the login-lockout records of their username, then the
    user row itself."""
    from axes.models import AccessAttempt, AccessFailureLog, AccessLog  # noqa: PLC0415
    from django.contrib.admin.models import LogEntry  # noqa: PLC0415 - contrib models need the app registry
    from django.contrib.contenttypes.models import ContentType  # noqa: PLC0415
    from django.contrib.sessions.models import Session  # noqa: PLC0415

    with transaction.atomic():
        hashed = list(ApiKey.objects.filter(owner=user).values_list("hashed_key", flat=True))
        counts[ApiKey._meta.db_table], _ = ApiKey.objects.filter(owner=user).delete()
        counts[ProjectMembership._meta.db_table], _ = ProjectMembership.objects.filter(user=user).delete()
        about = LogEntry.objects.filter(content_type=ContentType.objects.get_for_model(User), object_id=str(user.pk))
        by = LogEntry.objects.filter(user=user)
        counts[LogEntry._meta.db_table] = about.delete()[0] + by.delete()[0]
        sessions = [s.pk for s in Session.objects.iterator() if s.get_decoded().get("_auth_user_id") == str(user.pk)]
        counts[Session._meta.db_table], _ = Session.objects.filter(pk__in=sessions).delete()
        for lockout in (AccessAttempt, AccessFailureLog, AccessLog):
            counts[lockout._meta.db_table], _ = lockout.objects.filter(username=user.get_username()).delete()
        user.delete()
        counts[User._meta.db_table] = 1
    for hashed_key in hashed:
        api_key_cache_forget(hashed_key=hashed_key)
