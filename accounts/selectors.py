"""Reads of accounts data, with the access rules applied."""

from __future__ import annotations

import hashlib

from django.db.models import QuerySet

from accounts.actors import Actor
from accounts.models import ApiKey, Project, ProjectMembership, User


def api_key_digest(raw_key: str) -> str:
    """SHA-256 of a raw key: keys are 256-bit random, so a fast digest is the right hash."""
    return hashlib.sha256(raw_key.encode()).hexdigest()


def api_key_get_for_raw(*, raw_key: str) -> ApiKey | None:
    """The active key matching a raw key, with its owner, or None."""
    return (
        ApiKey.objects.select_related("owner")
        .filter(hashed_key=api_key_digest(raw_key), revoked_at__isnull=True)
        .first()
    )


def api_key_list(*, actor: Actor) -> QuerySet[ApiKey]:
    """The keys the actor owns (admins: every key), newest first."""
    qs = ApiKey.objects.select_related("owner")
    if actor.is_admin:
        return qs
    return qs.filter(owner=actor.user)


def user_get_by_external_id(*, external_id: str) -> User | None:
    return User.objects.filter(external_id=external_id).first()


def project_list(*, actor: Actor) -> QuerySet[Project]:
    """Projects the actor can see: all for admins and services, else their own."""
    if actor.sees_everything:
        return Project.objects.all()
    return Project.objects.filter(memberships__user=actor.user)


def project_get_by_slug(*, slug: str) -> Project | None:
    return Project.objects.filter(slug=slug).first()


def project_ids_for_user(*, user: User) -> QuerySet:
    """The ids of the projects a user is a member of, as a subquery."""
    return ProjectMembership.objects.filter(user=user).values("project_id")


def user_is_project_member(*, user: User, project: Project) -> bool:
    return ProjectMembership.objects.filter(user=user, project=project).exists()
