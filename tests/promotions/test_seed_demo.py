"""manage.py seed_demo: a story, written through the services at the time it happened, that leaves
the console open candidates of every promotion type and decided ones in the other states, the
dashboard a history over many days, and alice's preferences modal something in every section;
written once, however often the command runs."""

from __future__ import annotations

import io
import uuid
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from accounts.models import ApiKey, User
from feedback.models import FeedbackEvent
from learning.models import LearnedWorkflow, LearningUsage, Memory, Preference, TastePattern
from promotions.destinations import WRITERS
from promotions.models import LearningPromotion, PromotionStatus

DAYS = 8  # a short story: the same beats, squeezed


@pytest.mark.django_db(transaction=True)  # the analysis and the intelligence jobs run when each write commits
def test_the_story():
    """One story (it costs tens of seconds), checked for what each surface needs, then run again."""
    out = io.StringIO()
    call_command("seed_demo", "--days", str(DAYS), "--no-warm", stdout=out)
    every_promotion_type_has_an_open_candidate_and_every_other_state_a_row(out.getvalue())
    the_story_has_a_history_in_the_order_it_happened()
    alice_has_something_in_every_section_of_the_modal_and_learnings_were_judged()
    running_it_again_writes_the_story_once_and_gives_new_keys()


def every_promotion_type_has_an_open_candidate_and_every_other_state_a_row(seeded: str) -> None:
    candidates = set(
        LearningPromotion.objects.filter(status=PromotionStatus.CANDIDATE).values_list("promotion_type", flat=True)
    )
    assert candidates == set(WRITERS)  # every type that can be promoted, from the real scanners and requests
    statuses = set(LearningPromotion.objects.values_list("status", flat=True))
    assert {"applied", "approved", "rejected", "paused", "superseded"} <= statuses
    weights = {
        p.proposed_learning["reason"]
        for p in LearningPromotion.objects.filter(promotion_type="retrieval_weight", status="candidate")
    }
    assert {"helpful", "unhelpful"} <= weights  # a boost and a penalty from position-biased clicks
    agent = set(
        LearningPromotion.objects.filter(promotion_type="agent_learning", status="candidate").values_list(
            "subject_type", flat=True
        )
    )
    assert agent == {"response_feedback", "tool_failure", "task_feedback", "eval_failure"}
    printed = next(line for line in seeded.splitlines() if line.startswith("Open candidates by type: "))
    assert all(f"{promotion_type} " in printed for promotion_type in WRITERS)


def the_story_has_a_history_in_the_order_it_happened() -> None:
    now = timezone.now()
    days = {created.date() for created in FeedbackEvent.objects.values_list("created_at", flat=True)}
    assert len(days) >= DAYS - 1
    assert min(days) <= (now - timedelta(days=DAYS - 1)).date()
    assert not FeedbackEvent.objects.filter(created_at__gt=now).exists()
    # Evidence comes before what was made of it: a promotion opens on evidence already there (later
    # evidence may reinforce it, before its last change).
    times = dict(FeedbackEvent.objects.values_list("id", "created_at"))
    for promotion in LearningPromotion.objects.exclude(source_event_ids=[]):
        evidence = [times[uuid.UUID(str(e))] for e in promotion.source_event_ids]
        assert min(evidence) < promotion.created_at
        assert max(evidence) < promotion.updated_at
    promotions_days = {p.date() for p in LearningPromotion.objects.values_list("created_at", flat=True)}
    assert len(promotions_days) >= 4


def alice_has_something_in_every_section_of_the_modal_and_learnings_were_judged() -> None:
    alice = User.objects.get(username="alice")
    assert Preference.objects.filter(user=alice, active=True).count() >= 3
    assert Memory.objects.filter(owner=alice).count() >= 2
    assert LearnedWorkflow.objects.filter(user=alice).exists()
    assert set(TastePattern.objects.filter(user=alice).values_list("status", flat=True)) == {"active", "rejected"}
    outcomes = set(LearningUsage.objects.values_list("outcome", flat=True))
    assert {"helped", "hurt"} <= outcomes
    assert LearningUsage.objects.filter(item_type="agent_learning", outcome="helped").exists()


def running_it_again_writes_the_story_once_and_gives_new_keys() -> None:
    counts = (FeedbackEvent.objects.count(), LearningPromotion.objects.count(), Memory.objects.count())
    out = io.StringIO()
    call_command("seed_demo", "--days", str(DAYS), "--no-warm", stdout=out)
    assert (FeedbackEvent.objects.count(), LearningPromotion.objects.count(), Memory.objects.count()) == counts
    assert "already in this database" in out.getvalue()
    assert ApiKey.objects.filter(name="demo", revoked_at__isnull=True).count() == 2
    assert ApiKey.objects.filter(name="demo", revoked_at__isnull=False).count() == 2
    assert "Service key llk_" in out.getvalue()


def test_a_story_shorter_than_three_days_is_refused(db):
    with pytest.raises(CommandError, match="--days"):
        call_command("seed_demo", "--days", "2", "--no-warm", stdout=io.StringIO())
