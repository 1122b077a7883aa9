"""Task generation's context: approved examples, the active prevention prompts of its scope (project,
tool and tags, Gate 6) and the target's packet evidence, within the size budget, each injection
recorded as a usage."""

from __future__ import annotations

import pytest
from django.test import override_settings

from learning.context.build import Scope, agent_learning_in_scope, context_build
from learning.context.cache import context_invalidate_shared
from learning.models import LearningUsage
from tests.factories import (
    AgentLearningFactory,
    InsightCardEvidenceFactory,
    InsightCardFactory,
    IntelligencePacketCardFactory,
    IntelligencePacketFactory,
    IntelligenceTargetFactory,
)

URL = "/api/v1/context"


def learning(**scope) -> dict:
    return {"project": None, "tool_name": "", "tags": [], **scope}


@pytest.mark.parametrize(
    ("item", "scope", "reaches"),
    [
        (learning(), Scope(project_id=1), True),
        (learning(project=2), Scope(project_id=1), False),
        (learning(tool_name="search_docs"), Scope(tool_name="search_docs"), True),
        (learning(tool_name="search_docs"), Scope(tool_name="sheets"), False),
        (learning(tool_name="sheets/export"), Scope(plugin="sheets", command="export"), True),
        (learning(tool_name="sheets/export"), Scope(plugin="sheets", command="import"), False),
        (learning(tags=["task_generation"]), Scope(surface="task_generation"), True),
        (learning(tags=["task_generation"]), Scope(surface="chat"), False),
        (learning(tags=["Safety"]), Scope(tags=("safety", "site")), True),
        (learning(tags=["safety"]), Scope(tags=("budget",)), False),
        (learning(tags=["safety"]), Scope(), False),
    ],
)
def test_agent_learnings_are_scoped_by_project_tool_and_tags(item, scope, reaches):
    assert agent_learning_in_scope(item, scope) is reaches


@pytest.fixture
def packet(world):
    """Apollo's own target with a current packet of two cards (a blocker first), each with evidence."""
    target = IntelligenceTargetFactory(project=world.project)
    current = IntelligencePacketFactory(target=target, current=True)
    blocker = InsightCardFactory(target=target, card_type="blocker", title="Crane permit still pending")
    risk = InsightCardFactory(target=target, card_type="risk", title="Steel delivery may slip two weeks")
    InsightCardEvidenceFactory(card=blocker, excerpt="The city has not issued the crane permit yet.")
    InsightCardEvidenceFactory(card=risk, excerpt="Supplier warned the steel may arrive two weeks late.")
    IntelligencePacketCardFactory(packet=current, card=blocker, section="blockers", position=0)
    IntelligencePacketCardFactory(packet=current, card=risk, section="risks", position=1)
    old = IntelligencePacketFactory(target=target, current=False)
    stale = InsightCardFactory(target=target, title="Only in an old packet")
    InsightCardEvidenceFactory(card=stale)
    IntelligencePacketCardFactory(packet=old, card=stale, position=0)
    return target


def task_context(client, **params):
    response = client.get(URL, {"project": "apollo", "surface": "task_generation", **params})
    assert response.status_code == 200, response.content
    return response.json()


def test_task_generation_gets_the_targets_packet_evidence(world, packet):
    body = task_context(world.client("member"))
    assert [(c["card_type"], c["title"]) for c in body["packet_evidence"]] == [
        ("blocker", "Crane permit still pending"),
        ("risk", "Steel delivery may slip two weeks"),
    ]
    assert body["packet_evidence"][0]["excerpt"] == "The city has not issued the crane permit yet."
    assert "[Project Intelligence]" in body["text"]
    assert "from sources" in body["text"]
    assert "crane permit yet" in body["text"]
    assert "Only in an old packet" not in body["text"]
    # Only task generation is shown the packet.
    chat = world.client("member").get(URL, {"project": "apollo"}).json()
    assert chat["packet_evidence"] == []


def test_a_named_target_gets_its_own_packet(world, packet):
    tower = IntelligenceTargetFactory(project=world.project, kind="building", slug="tower-b")
    tower_packet = IntelligencePacketFactory(target=tower, current=True)
    card = InsightCardFactory(target=tower, title="Tower B facade samples approved")
    InsightCardEvidenceFactory(card=card)
    IntelligencePacketCardFactory(packet=tower_packet, card=card, position=0)
    body = task_context(world.client("member"), target="tower-b")
    assert [c["title"] for c in body["packet_evidence"]] == ["Tower B facade samples approved"]


def test_an_outsider_never_sees_the_packet(world, packet):
    response = world.client("other").get(URL, {"project": "apollo", "surface": "task_generation"})
    assert response.status_code == 403
    # Named by id in a scope (the service path), a project the user is not in is ignored.
    scope = Scope(project_id=world.project.pk, surface="task_generation")
    assert context_build(user=world.other, scope=scope).packet_evidence == []
    assert context_build(user=world.member, scope=scope).packet_evidence
    assert task_context(world.client("admin"))["packet_evidence"]  # staff read everything


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"target": "nowhere"}, "target"),
        ({"target": "tower-b", "project": ""}, "target"),
        ({"tags": ",".join(f"t{n}" for n in range(21))}, "tags"),
        ({"tags": "x" * 51}, "tags"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(world, packet, params, field):
    response = world.client("member").get(URL, {"project": "apollo", "surface": "task_generation", **params})
    assert response.status_code == 400, response.content
    assert field in response.json()["error"]["fields"]


def test_prevention_prompts_reach_task_generation_by_tag_and_are_recorded(world, packet):
    AgentLearningFactory(project=world.project, tags=["task_generation"], prevention_prompt="Give each task an owner.")
    AgentLearningFactory(project=world.project, tags=["safety"], prevention_prompt="Name the hazard.")
    AgentLearningFactory(project=None, prevention_prompt="Say when a date is an estimate.")
    context_invalidate_shared()
    body = task_context(world.client("member"))
    assert sorted(a["prevention_prompt"] for a in body["agent_learnings"]) == [
        "Give each task an owner.",
        "Say when a date is an estimate.",
    ]
    tagged = task_context(world.client("member"), tags="safety")
    assert "Name the hazard." in [a["prevention_prompt"] for a in tagged["agent_learnings"]]
    chat = world.client("member").get(URL, {"project": "apollo"}).json()
    assert [a["prevention_prompt"] for a in chat["agent_learnings"]] == ["Say when a date is an estimate."]

    response = world.client("member").post(
        URL, {"project": "apollo", "surface": "task_generation", "response_id": "task-run-1"}, format="json"
    )
    assert response.status_code == 200, response.content
    used = sorted(LearningUsage.objects.filter(response_id="task-run-1").values_list("item_type", flat=True))
    assert used == ["agent_learning", "agent_learning", "insight_card", "insight_card"]


def test_the_packet_is_trimmed_first_to_keep_within_the_budget(world, packet):
    AgentLearningFactory(project=world.project, tags=["task_generation"], prevention_prompt="Give each task an owner.")
    context_invalidate_shared()
    full = task_context(world.client("member"))
    with override_settings(CONTEXT_MAX_CHARS=len(full["text"]) - 10):
        trimmed = task_context(world.client("member"))
    assert len(trimmed["text"]) <= len(full["text"]) - 10
    assert len(trimmed["packet_evidence"]) == 1  # the packet's last card went first
    assert trimmed["agent_learnings"] == full["agent_learnings"]
