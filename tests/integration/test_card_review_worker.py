"""The packet/card loop on the production path: a member's wrong-target mark and an admin's
approval through the API; the worker's one refresh per target shows the card under its new target."""

from __future__ import annotations

import pytest

from intelligence.models import IntelligencePacket, JobStatus, PacketRefreshJob
from tests.integration.test_worker import wait_for
from tests.intelligence.loop_world import loop_build

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


def test_an_approved_correction_is_in_the_next_packet_after_one_job(real_broker, world):
    loop = loop_build(world.project)
    marked = world.client("member").post(
        f"/api/v1/intelligence/cards/{loop.blocker.pk}/feedback",
        {"signal": "wrong_target", "target": "north-wing"},
        format="json",
    )
    assert marked.status_code == 201, marked.content
    approved = world.client("admin").post(
        f"/api/v1/intelligence/reviews/{marked.json()['review_id']}/approve", {"notes": "north wing"}, format="json"
    )
    assert approved.status_code == 200, approved.content
    jobs = PacketRefreshJob.objects.filter(target__in=[loop.root, loop.wing])
    assert jobs.count() == 2  # one per affected target, run by the worker (nothing ran in the request)

    def refreshed() -> bool:
        return set(jobs.values_list("status", flat=True)) == {JobStatus.SUCCEEDED}

    assert wait_for(refreshed, timeout=60), real_broker["log"].read_text()[-3000:]
    assert set(jobs.values_list("attempts", flat=True)) == {1}
    wing = IntelligencePacket.objects.get(target=loop.wing, current=True)
    assert [(section["key"], section["cards"]) for section in wing.sections] == [("blockers", [str(loop.blocker.pk)])]
    assert [entry["card"] for entry in wing.sections[0]["entries"]] == [str(loop.blocker.pk)]
    root = IntelligencePacket.objects.get(target=loop.root, current=True)
    assert str(loop.blocker.pk) not in [card for section in root.sections for card in section["cards"]]
    assert "intelligence.packet_refresh_run" in real_broker["log"].read_text()
