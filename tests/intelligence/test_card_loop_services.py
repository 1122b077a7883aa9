"""The packet/card loop's services, called directly: readers' marks, the one open review per card
and kind, each approval's effect, and the refreshed packet after one job per affected target."""

from __future__ import annotations

import pytest

from config.exceptions import AccessDenied, ApplicationError, Conflict
from feedback.models import FeedbackEvent
from intelligence.models import (
    CardStatus,
    InsightCard,
    InsightCardEvidence,
    IntelligencePacket,
    IntelligenceReview,
    JobStatus,
    PacketRefreshJob,
    ReviewKind,
    ReviewStatus,
)
from intelligence.services.cards import card_edit_propose, card_feedback_record, card_merge_propose
from intelligence.services.refresh import packet_refresh_run
from intelligence.services.reviews import review_decide
from tests.factories import InsightCardFactory
from tests.intelligence.loop_world import Loop, loop_build

pytestmark = pytest.mark.django_db


@pytest.fixture
def loop(world) -> Loop:
    return loop_build(world.project)


def _card_ids(target) -> dict[str, list[str]]:
    packet = IntelligencePacket.objects.get(target=target, current=True)
    return {section["key"]: section["cards"] for section in packet.sections}


def test_useful_is_a_positive_packet_quality_event_and_counts_on_the_evidence(world, loop):
    result = card_feedback_record(actor=world.actor("member"), card=loop.blocker, signal="useful", note="spot on")
    event = result.event
    assert (event.event_type, event.event_family, event.signal) == ("card_feedback", "packet_quality", "positive")
    assert (event.subject_type, event.subject_id, event.target_id) == (
        "insight_card",
        str(loop.blocker.pk),
        str(loop.root.pk),
    )
    assert event.metadata == {"card_type": "blocker", "target_id": loop.root.pk}
    assert (event.user, event.project, event.free_text) == (world.member, world.project, "spot on")
    assert result.review is None
    assert sorted(InsightCardEvidence.objects.filter(card=loop.blocker).values_list("useful_count", flat=True)) == [
        1,
        1,
    ]
    card_feedback_record(
        actor=world.actor("owner"), card=loop.blocker, signal="useful", evidence_id=loop.evidence_with_url.pk
    )
    loop.evidence_with_url.refresh_from_db()
    loop.evidence_without_url.refresh_from_db()
    assert (loop.evidence_with_url.useful_count, loop.evidence_without_url.useful_count) == (2, 1)
    assert not IntelligenceReview.objects.exists()


@pytest.mark.parametrize(
    ("signal", "event_signal", "kind"),
    [("wrong", "negative", "wrong"), ("stale", "stale", "stale"), ("wrong_target", "corrected", "wrong_target")],
)
def test_a_correction_opens_one_review_per_card_and_kind(world, loop, signal, event_signal, kind):
    extra = {"target_slug": "north-wing"} if signal == "wrong_target" else {}
    first = card_feedback_record(actor=world.actor("owner"), card=loop.blocker, signal=signal, note="no", **extra)
    again = card_feedback_record(actor=world.actor("owner"), card=loop.blocker, signal=signal, **extra)
    second = card_feedback_record(actor=world.actor("member"), card=loop.blocker, signal=signal, **extra)
    assert first.event.signal == event_signal
    review = IntelligenceReview.objects.get()
    assert first.review.pk == again.review.pk == second.review.pk == review.pk
    assert (review.kind, review.status, review.requested_by, review.reason) == (kind, "open", world.owner, "no")
    # The owner reporting twice counts once; the member is a second report, with its event.
    assert review.reports == 2
    assert review.source_event_ids == [str(first.event.pk), str(second.event.pk)]
    assert FeedbackEvent.objects.filter(event_type="card_feedback").count() == 3
    if signal == "wrong_target":
        assert review.proposed == {"target": "north-wing", "target_id": loop.wing.pk, "from_target_id": loop.root.pk}
        assert first.event.metadata["corrected_target_id"] == loop.wing.pk
    # Another kind on the same card is its own review; a decided review frees the slot.
    other = "stale" if signal != "stale" else "wrong"
    card_feedback_record(actor=world.actor("owner"), card=loop.blocker, signal=other)
    assert IntelligenceReview.objects.count() == 2
    review_decide(actor=world.actor("admin"), review_id=str(review.pk), decision="reject")
    card_feedback_record(actor=world.actor("owner"), card=loop.blocker, signal=signal, **extra)
    assert IntelligenceReview.objects.filter(kind=kind).count() == 2


def test_feedback_with_an_idempotency_key_is_recorded_once(world, loop):
    kwargs = {"actor": world.actor("owner"), "card": loop.blocker, "idempotency_key": "tap-1"}
    first = card_feedback_record(signal="useful", **kwargs)
    second = card_feedback_record(signal="useful", **kwargs)
    assert (first.created, second.created, first.event.pk) == (True, False, second.event.pk)
    assert FeedbackEvent.objects.filter(event_type="card_feedback").count() == 1
    assert set(InsightCardEvidence.objects.filter(card=loop.blocker).values_list("useful_count", flat=True)) == {1}
    wrong = card_feedback_record(actor=world.actor("owner"), card=loop.blocker, signal="wrong", idempotency_key="w")
    replay = card_feedback_record(actor=world.actor("owner"), card=loop.blocker, signal="wrong", idempotency_key="w")
    assert replay.review.pk == wrong.review.pk
    assert IntelligenceReview.objects.get().reports == 1
    with pytest.raises(Conflict):  # the same key for a different mark
        card_feedback_record(actor=world.actor("owner"), card=loop.blocker, signal="stale", idempotency_key="w")


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"signal": "meh"}, "signal"),
        ({"signal": "wrong_target"}, "target"),
        ({"signal": "wrong_target", "target_slug": "nowhere"}, "target"),
        ({"signal": "wrong_target", "target_slug": "apollo"}, "target"),  # where it already is
        ({"signal": "wrong", "target_slug": "north-wing"}, "target"),
        ({"signal": "useful", "evidence_id": 10**9}, "evidence_id"),
    ],
)
def test_bad_feedback_names_the_field_and_writes_nothing(world, loop, kwargs, field):
    with pytest.raises(ApplicationError) as exc:
        card_feedback_record(actor=world.actor("owner"), card=loop.blocker, **kwargs)
    assert field in exc.value.fields
    assert not FeedbackEvent.objects.exists()
    assert not IntelligenceReview.objects.exists()


def test_evidence_of_another_card_is_refused(world, loop):
    risk_evidence = InsightCardEvidence.objects.get(card=loop.risk)
    with pytest.raises(ApplicationError) as exc:
        card_feedback_record(
            actor=world.actor("owner"), card=loop.blocker, signal="useful", evidence_id=risk_evidence.pk
        )
    assert "evidence_id" in exc.value.fields


def test_a_non_member_cannot_write_card_feedback(world, loop):
    with pytest.raises(AccessDenied):
        card_feedback_record(actor=world.actor("other"), card=loop.blocker, signal="useful")
    assert not FeedbackEvent.objects.exists()


def _approve(world, review, django_capture_on_commit_callbacks, notes="checked"):
    """Approve, running what the commit queues (the refresh tasks run eagerly): one job per target."""
    jobs_before = set(PacketRefreshJob.objects.values_list("pk", flat=True))
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        decision = review_decide(actor=world.actor("admin"), review_id=str(review.pk), decision="approve", notes=notes)
    jobs = PacketRefreshJob.objects.exclude(pk__in=jobs_before)
    assert len(callbacks) == jobs.count() == len(decision.refreshed_target_ids)
    assert sorted(jobs.values_list("target_id", flat=True)) == decision.refreshed_target_ids
    assert {(job.status, job.attempts) for job in jobs} == {(JobStatus.SUCCEEDED, 1)}
    return decision


def test_approving_wrong_contradicts_the_card_and_the_refreshed_packet_drops_it(
    world, loop, django_capture_on_commit_callbacks
):
    assert str(loop.blocker.pk) in _card_ids(loop.root)["blockers"]
    review = card_feedback_record(actor=world.actor("member"), card=loop.blocker, signal="wrong").review
    decision = _approve(world, review, django_capture_on_commit_callbacks)
    loop.blocker.refresh_from_db()
    assert loop.blocker.status == CardStatus.CONTRADICTED
    assert decision.refreshed_target_ids == [loop.root.pk]
    assert "blockers" not in _card_ids(loop.root)
    event = decision.event
    assert (event.event_type, event.event_family, event.signal) == (
        "card_review_approved",
        "packet_quality",
        "corrected",
    )
    assert (event.before_snapshot["status"], event.after_snapshot["status"]) == ("active", "contradicted")
    assert (event.source_table, event.source_record_id, event.user, event.free_text) == (
        "intelligence_reviews",
        str(review.pk),
        world.admin,
        "checked",
    )
    review.refresh_from_db()
    assert (review.status, review.reviewer, review.decision_notes) == ("approved", world.admin, "checked")
    assert review.decided_at is not None


def test_approving_stale_moves_the_card_below_the_active_ones(world, loop, django_capture_on_commit_callbacks):
    review = card_feedback_record(actor=world.actor("owner"), card=loop.blocker, signal="stale").review
    _approve(world, review, django_capture_on_commit_callbacks)
    sections = _card_ids(loop.root)
    assert list(sections) == ["risks", "stale"]
    assert sections["stale"] == [str(loop.blocker.pk)]


def test_approving_wrong_target_moves_the_card_and_refreshes_both_packets(
    world, loop, django_capture_on_commit_callbacks
):
    review = card_feedback_record(
        actor=world.actor("owner"), card=loop.blocker, signal="wrong_target", target_slug="north-wing"
    ).review
    decision = _approve(world, review, django_capture_on_commit_callbacks)
    assert decision.refreshed_target_ids == sorted([loop.root.pk, loop.wing.pk])
    loop.blocker.refresh_from_db()
    assert loop.blocker.target == loop.wing
    assert str(loop.blocker.pk) not in [c for cards in _card_ids(loop.root).values() for c in cards]
    assert _card_ids(loop.wing) == {"blockers": [str(loop.blocker.pk)]}
    assert (decision.event.before_snapshot["target_id"], decision.event.after_snapshot["target_id"]) == (
        loop.root.pk,
        loop.wing.pk,
    )


def test_approving_a_merge_moves_the_evidence_and_dismisses_the_card(world, loop, django_capture_on_commit_callbacks):
    review = card_merge_propose(actor=world.actor("owner"), card=loop.risk, into_id=str(loop.blocker.pk)).review
    assert review.kind == ReviewKind.MERGE
    _approve(world, review, django_capture_on_commit_callbacks)
    loop.risk.refresh_from_db()
    loop.blocker.refresh_from_db()
    assert (loop.risk.status, loop.risk.evidence_count) == (CardStatus.DISMISSED, 0)
    assert loop.blocker.evidence_count == InsightCardEvidence.objects.filter(card=loop.blocker).count() == 3
    assert _card_ids(loop.root) == {"blockers": [str(loop.blocker.pk)]}


def test_approving_an_edit_changes_the_text(world, loop, django_capture_on_commit_callbacks):
    review = card_edit_propose(
        actor=world.actor("member"), card=loop.blocker, title="Crane permit pending", summary="City review."
    ).review
    decision = _approve(world, review, django_capture_on_commit_callbacks)
    loop.blocker.refresh_from_db()
    assert (loop.blocker.title, loop.blocker.summary) == ("Crane permit pending", "City review.")
    assert decision.event.before_snapshot["title"] == "Crane permit blocks the steel erection"
    assert decision.event.after_snapshot["title"] == "Crane permit pending"


def test_rejecting_changes_no_card_and_refreshes_nothing(world, loop, django_capture_on_commit_callbacks):
    review = card_feedback_record(actor=world.actor("owner"), card=loop.blocker, signal="wrong").review
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        decision = review_decide(actor=world.actor("admin"), review_id=str(review.pk), decision="reject", notes="fine")
    assert callbacks == []
    assert not PacketRefreshJob.objects.exists()
    assert InsightCard.objects.get(pk=loop.blocker.pk).status == CardStatus.ACTIVE
    assert (decision.event.signal, decision.event.event_type) == ("negative", "card_review_rejected")
    with pytest.raises(Conflict):
        review_decide(actor=world.actor("admin"), review_id=str(review.pk), decision="approve")


def test_only_staff_decide_and_a_failed_approval_leaves_the_review_open(world, loop):
    review = card_feedback_record(actor=world.actor("owner"), card=loop.blocker, signal="stale").review
    for role in ("owner", "member", "service"):
        with pytest.raises(AccessDenied):
            review_decide(actor=world.actor(role), review_id=str(review.pk), decision="approve")
    merge = card_merge_propose(actor=world.actor("owner"), card=loop.risk, into_id=str(loop.blocker.pk)).review
    InsightCard.objects.filter(pk=loop.blocker.pk).update(status=CardStatus.DISMISSED)
    events = FeedbackEvent.objects.count()
    with pytest.raises(ApplicationError) as exc:
        review_decide(actor=world.actor("admin"), review_id=str(merge.pk), decision="approve")
    assert "merge_into" in exc.value.fields
    merge.refresh_from_db()
    assert merge.status == ReviewStatus.OPEN
    assert FeedbackEvent.objects.count() == events
    assert InsightCardEvidence.objects.filter(card=loop.risk).count() == 1


def test_one_refresh_job_runs_the_change_even_when_its_task_is_held(world, loop, django_capture_on_commit_callbacks):
    """The refresh row is the truth: whichever delivery runs it, one run shows the change."""
    review = card_feedback_record(actor=world.actor("owner"), card=loop.blocker, signal="wrong").review
    with django_capture_on_commit_callbacks(execute=False):
        review_decide(actor=world.actor("admin"), review_id=str(review.pk), decision="approve")
    job = PacketRefreshJob.objects.get()
    assert "blockers" in _card_ids(loop.root)  # not yet refreshed
    assert packet_refresh_run(job_id=job.pk) is not None
    assert packet_refresh_run(job_id=job.pk) is None  # a second delivery does nothing
    assert "blockers" not in _card_ids(loop.root)
    assert IntelligencePacket.objects.filter(target=loop.root).count() == 2


def test_merge_and_edit_proposals_refuse_bad_input(world, loop):
    elsewhere = InsightCardFactory()
    for into, field in ((str(loop.blocker.pk), "into"), (str(elsewhere.pk), "into")):
        with pytest.raises(ApplicationError) as exc:
            card_merge_propose(actor=world.actor("owner"), card=loop.blocker, into_id=into)
        assert field in exc.value.fields
    for kwargs, field in (({}, "title"), ({"title": "  "}, "title"), ({"title": loop.blocker.title}, "title")):
        with pytest.raises(ApplicationError) as exc:
            card_edit_propose(actor=world.actor("owner"), card=loop.blocker, **kwargs)
        assert field in exc.value.fields
    assert not FeedbackEvent.objects.exists()
    assert not IntelligenceReview.objects.exists()


def test_a_dismissed_or_contradicted_card_takes_marks_but_no_corrections(world, loop):
    InsightCard.objects.filter(pk=loop.blocker.pk).update(status=CardStatus.CONTRADICTED)
    loop.blocker.refresh_from_db()
    assert card_feedback_record(actor=world.actor("owner"), card=loop.blocker, signal="useful").created
    for signal in ("wrong", "stale"):
        with pytest.raises(ApplicationError) as exc:
            card_feedback_record(actor=world.actor("owner"), card=loop.blocker, signal=signal)
        assert "signal" in exc.value.fields
    with pytest.raises(ApplicationError):
        card_edit_propose(actor=world.actor("owner"), card=loop.blocker, title="Something else")
    with pytest.raises(ApplicationError):
        card_merge_propose(actor=world.actor("owner"), card=loop.blocker, into_id=str(loop.risk.pk))
    assert not IntelligenceReview.objects.exists()
    assert FeedbackEvent.objects.count() == 1
