"""promotions 0003: the text target_id becomes a real reference (values naming a target converted,
the rest null), and open candidates without an expiry get one."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from promotions.models import LearningPromotion
from tests.factories import IntelligenceTargetFactory, ProjectFactory

pytestmark = pytest.mark.django_db(transaction=True)
BEFORE = [("promotions", "0003_intelligence_scanners")]
AFTER = [("promotions", "0004_ledger_paths")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def test_target_ids_that_name_a_target_become_references_and_the_rest_null():
    target = IntelligenceTargetFactory(project=ProjectFactory(slug="apollo"))
    old = migrate(BEFORE).get_model("promotions", "LearningPromotion")
    try:
        rows = {
            text: old.objects.create(
                promotion_type="task_example", subject_type="task_feedback", subject_id=f"s-{n}", target_id=text
            ).pk
            for n, text in enumerate([str(target.pk), str(target.pk + 999), "tower-b", ""])
        }
        decided = old.objects.create(
            promotion_type="task_example", subject_type="task_feedback", subject_id="s-9", status="applied"
        ).pk
    finally:
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    converted = {text: LearningPromotion.objects.get(pk=pk) for text, pk in rows.items()}
    assert converted[str(target.pk)].target_id == target.pk
    assert [converted[t].target_id for t in (str(target.pk + 999), "tower-b", "")] == [None, None, None]
    assert all(p.expires_at is not None and p.promotion_path == "human_review" for p in converted.values())
    assert LearningPromotion.objects.get(pk=decided).expires_at is None  # only open candidates expire
