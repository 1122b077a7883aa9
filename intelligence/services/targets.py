"""Intelligence targets: every project has one (its root); named scopes inside it are added."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.utils.text import slugify

from accounts.actors import Actor
from accounts.models import Project, ProjectMembership
from config.exceptions import AccessDenied, ApplicationError, Conflict, NotFoundError
from intelligence.matching import compact, norm
from intelligence.models import IntelligenceTarget, TargetKind


def target_for_project(*, project: Project) -> IntelligenceTarget:
    """The project's root target, created on first use (named after the project)."""
    target, _ = IntelligenceTarget.objects.get_or_create(
        project=project,
        kind=TargetKind.PROJECT,
        defaults={"slug": project.slug, "name": project.name},
    )
    return target


PROFILE_FIELDS = ("aliases", "client_names", "addresses", "participants", "external_ids")
PROFILE_MAX_ITEMS = 200
PROFILE_MAX_CHARS = 200


def _may_edit_targets(actor: Actor, project: Project) -> bool:
    if actor.is_admin:
        return True
    return (
        actor.user is not None
        and not actor.is_service
        and actor.may_use_project(project.pk)
        and ProjectMembership.objects.filter(
            user=actor.user, project=project, role=ProjectMembership.Role.ADMIN
        ).exists()
    )


def _profile_clean(name: str, values: Any) -> list[str]:
    """A profile list as stored: text items, trimmed, duplicates (in matching form) dropped."""
    if not isinstance(values, list):
        raise ApplicationError(f"{name} must be a list of text.", field=name)
    if len(values) > PROFILE_MAX_ITEMS:
        raise ApplicationError(f"{name} holds at most {PROFILE_MAX_ITEMS} items.", field=name)
    cleaned: list[str] = []
    seen: set[str] = set()
    for value in values:
        if not isinstance(value, str) or not value.strip() or len(value) > PROFILE_MAX_CHARS:
            raise ApplicationError(f"Each item of {name} is text of 1 to {PROFILE_MAX_CHARS} characters.", field=name)
        key = compact(value) if name == "external_ids" else norm(value)
        if not key:
            raise ApplicationError(f"{value!r} in {name} has no letters or digits.", field=name)
        if name == "aliases" and len(key) < 3:
            raise ApplicationError(f"The alias {value!r} is too short to match safely.", field=name)
        if key not in seen:
            seen.add(key)
            cleaned.append(" ".join(value.split()))
    return cleaned


def _external_ids_check(project: Project, external_ids: list[str], exclude_pk: int | None) -> None:
    """An explicit id names one project: another project's active target may not hold it."""
    wanted = {compact(value) for value in external_ids}
    others = IntelligenceTarget.objects.filter(active=True).exclude(project=project)
    if exclude_pk is not None:
        others = others.exclude(pk=exclude_pk)
    for slug, values in others.values_list("project__slug", "external_ids"):
        taken = wanted & {compact(str(v)) for v in values or []}
        if taken:
            raise ApplicationError(f"The id {sorted(taken)[0]!r} already names project {slug!r}.", field="external_ids")


def target_create(
    *,
    actor: Actor,
    project_slug: str,
    name: str,
    slug: str = "",
    kind: str = TargetKind.SCOPE,
    profile: dict[str, Any] | None = None,
) -> IntelligenceTarget:
    """Create a target (a project's root, or a named scope inside it) with its profile."""
    project = Project.objects.filter(slug=project_slug).first()
    if project is None:
        raise ApplicationError(f"No project {project_slug!r}.", field="project")
    if not _may_edit_targets(actor, project):
        raise AccessDenied("Only staff admins and the project's admins edit its targets.", field="project")
    if kind not in TargetKind.values:
        raise ApplicationError(f"kind must be one of {', '.join(TargetKind.values)}.", field="kind")
    name = " ".join((name or "").split())
    if not name or len(name) > 200:
        raise ApplicationError("name is text of 1 to 200 characters.", field="name")
    slug = slug or (project.slug if kind == TargetKind.PROJECT else slugify(name)[:100])
    if not slug or slugify(slug) != slug:
        raise ApplicationError("slug is lower-case letters, digits and dashes.", field="slug")
    cleaned = {key: _profile_clean(key, (profile or {}).get(key, [])) for key in PROFILE_FIELDS}
    _external_ids_check(project, cleaned["external_ids"], None)
    if IntelligenceTarget.objects.filter(project=project, slug=slug).exists():
        raise Conflict(f"Project {project.slug!r} already has a target {slug!r}.", field="slug")
    if kind == TargetKind.PROJECT and IntelligenceTarget.objects.filter(project=project, kind=kind).exists():
        raise Conflict(f"Project {project.slug!r} already has its project target.", field="kind")
    try:
        with transaction.atomic():
            return IntelligenceTarget.objects.create(project=project, kind=kind, slug=slug, name=name, **cleaned)
    except IntegrityError as exc:  # created concurrently
        raise Conflict(f"Project {project.slug!r} already has a target {slug!r}.", field="slug") from exc


def target_update(*, actor: Actor, target_id: int, changes: dict[str, Any]) -> IntelligenceTarget:
    """Change a target's name, profile lists or active flag (the fields given)."""
    with transaction.atomic():
        target = (
            IntelligenceTarget.objects.select_for_update(of=("self",))
            .select_related("project")
            .filter(pk=target_id)
            .first()
        )
        if target is None:
            raise NotFoundError("No such target.")
        if not _may_edit_targets(actor, target.project):
            raise AccessDenied("Only staff admins and the project's admins edit its targets.", field="project")
        fields: list[str] = []
        if "name" in changes:
            name = " ".join(str(changes["name"] or "").split())
            if not name or len(name) > 200:
                raise ApplicationError("name is text of 1 to 200 characters.", field="name")
            target.name = name
            fields.append("name")
        for key in PROFILE_FIELDS:
            if key in changes:
                setattr(target, key, _profile_clean(key, changes[key]))
                fields.append(key)
        if "active" in changes:
            if not isinstance(changes["active"], bool):
                raise ApplicationError("active is true or false.", field="active")
            target.active = changes["active"]
            fields.append("active")
        if "external_ids" in fields or (target.active and "active" in fields):
            _external_ids_check(target.project, target.external_ids, target.pk)
        if fields:
            target.save(update_fields=[*fields, "updated_at"])
    return target
