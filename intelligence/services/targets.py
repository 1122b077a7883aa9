"""Intelligence targets: every project has one (its root); named scopes inside it are added."""

from __future__ import annotations

from accounts.models import Project
from intelligence.models import IntelligenceTarget, TargetKind


def target_for_project(*, project: Project) -> IntelligenceTarget:
    """The project's root target, created on first use (named after the project)."""
    target, _ = IntelligenceTarget.objects.get_or_create(
        project=project,
        kind=TargetKind.PROJECT,
        defaults={"slug": project.slug, "name": project.name},
    )
    return target
