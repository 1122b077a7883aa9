"""Whose data a learning request is about, and the small pieces every learning endpoint shares."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.views import APIView

from accounts.actors import Actor
from accounts.models import Project, User
from accounts.selectors import project_get_for_member
from config.api import OnBehalfOf, StrictBooleanField, StrictInputSerializer
from config.exceptions import AccessDenied, ApplicationError


def subject_user(request: Request) -> User:
    """Whose learning this request is about: the caller, or the user a service key names."""
    actor = Actor.from_request(request)
    if actor.user is None:
        raise ApplicationError(
            "A service key must name the user with the X-On-Behalf-Of header.", field="X-On-Behalf-Of"
        )
    return actor.user


class UserDataApi(APIView):
    """An operation on the subject user's own data (``subject_user``): a service key must name the user
    with X-On-Behalf-Of (the schema says so)."""

    on_behalf_of = OnBehalfOf.REQUIRED


SURFACES = ("chat", "command", "task_generation", "search", "agent")


def project_of_user(user: User, slug: str | None, *, actor: Actor) -> Project | None:
    """A project the request's subject user belongs to (staff: any); whoever the caller is, the
    context and the items shared are that user's. A service key limited to projects may name
    only those."""
    if not slug:
        return None
    project = project_get_for_member(slug=slug, user=user)
    if project is None:
        raise ApplicationError(f"No project {slug!r}.", field="project")
    if not actor.may_use_project(project.pk):
        raise AccessDenied("This service key is not allowed in this project.", field="project")
    if not user.is_staff and not getattr(project, "is_member", False):
        raise AccessDenied("The user is not a member of this project.", field="project")
    return project


class ToggleInputSerializer(StrictInputSerializer):
    active = StrictBooleanField()


class NoInputSerializer(StrictInputSerializer):
    """An action that takes no body: any field sent is named as unknown (400)."""


UNDO_HELP = (
    "Undo your newest change to this item within LEARNING_UNDO_SECONDS (600 s by default); each call goes one "
    "change further back. 404 naming `id` when there is nothing left to undo."
)
