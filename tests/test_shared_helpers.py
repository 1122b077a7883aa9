"""The helpers the app test folders share (tests/conftest.py, tests/<app>/conftest.py) do what
their callers rely on."""

from __future__ import annotations

import numpy as np

from feedback.models import TaskFeedback
from learning.models import TastePattern
from promotions.services import promotion_propose
from tests.conftest import bearer_client
from tests.feedback.conftest import rate_task
from tests.learning.conftest import command_decide, command_run, context_of
from tests.promotions.conftest import promote


def test_bearer_client_acts_for_the_named_user(world):
    body = bearer_client(world.service_raw, on_behalf_of="ext-owner").get("/api/v1/me").json()
    assert (body["username"], body["is_service"]) == ("owner", True)


def test_session_client_is_signed_in_as_the_role(world):
    assert world.session_client("admin").get("/console/promotions/").status_code == 200
    assert world.session_client("owner").get("/console/promotions/").status_code == 302


def test_rate_task_and_promote_reach_an_applied_example(world):
    rated = rate_task(world, "Call Acme")
    assert (rated.user, rated.project, rated.rating, rated.completed) == (world.owner, world.project, "good", True)
    promotion, _ = promotion_propose(
        actor=world.actor("admin"),
        promotion_type="task_example",
        subject_type="task_feedback",
        subject_id=str(rated.pk),
    )
    assert promote(world, promotion, "approve", "apply").status == "applied"
    assert TaskFeedback.objects.get(pk=rated.pk).promoted is True


def test_command_helpers_record_a_run_and_its_decision(world):
    client = world.client("owner")
    run = command_run(client, output="Hello team.")
    decided = command_decide(client, run["run_id"], "accepted")
    assert decided["decision"] == "accepted"
    assert not TastePattern.objects.exists()  # an accepted output corrects nothing


def test_context_of_reads_the_owners_context(world):
    assert set(context_of(world.client("owner"), surface="chat")) >= {"preferences", "memories", "text"}


def test_the_session_embedder_gives_unit_vectors(embedder):
    vector = embedder.embed_one("wing flutter")
    assert vector.shape == (384,)
    assert np.isclose(np.linalg.norm(vector), 1.0, atol=1e-4)
