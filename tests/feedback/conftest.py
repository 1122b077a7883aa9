"""Feedback's shared helpers: a rated task, written through the service as the API would."""

from __future__ import annotations

from feedback.models import TaskFeedback
from feedback.services.task_feedback import task_feedback_record
from tests.conftest import World


def rate_task(
    world: World,
    title: str = "Draft the Q3 budget memo",
    description: str | None = "Summarise spend per line, travel included.",
    *,
    rating: str = "good",
    completed: bool = True,
    project: str | None = "apollo",
    role: str = "owner",
) -> TaskFeedback:
    """A task rated by ``role`` (a good, complete, completed one unless told otherwise)."""
    snapshot = {"id": title, "title": title}
    if description is not None:
        snapshot["description"] = description
    feedback, _ = task_feedback_record(
        actor=world.actor(role), task_snapshot=snapshot, rating=rating, completed=completed, project_slug=project
    )
    return feedback
