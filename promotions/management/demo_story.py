"""The demo's story: a month of a small team's work, written through the real services at the time
it happened, so that the console, the dashboard and the preferences modal show what they would show
after such a month.

Each *beat* (a chat message, a thumbs-down, a search and what the user did with its results, a tool
run, a task rating, an automatic check, a scheduled scan, an admin's review) runs with the clock set to
its moment (``time_machine.travel``), so every row is written by its own service as it would have been
that day: events through the one event writer, promotions by the scanners, usages by context assembly.
Nothing is backdated after the fact, and the append-only stream is never updated. The beats keep their
order whatever the length of the story (``days``): a shorter one squeezes them, the test uses that.

What it leaves (``./scripts/demo`` prints it too):
- open candidates of every promotion type, from the final scan (the admin's Generate) and two share
  requests: a retrieval-weight boost and penalty (people skip an outdated checklist ranked first and use
  the current one below it), agent learnings from a one-off thumbs-down, repeated failures of a billing
  export, a bad task rating and a failed currency check (high risk: they wait for a person), a task
  example, a memory and a workflow share, a packet rule (risks seen only in chat, marked wrong) and an
  attribution rule (mail about the client that says "the blue room");
- decided promotions in every other state: applied automatically (repeated thumbs-down, calendar
  failures, a date check, a workflow outcome) or by the admin, rejected, approved, paused, superseded,
  and (in a story longer than the candidates' expiry) expired;
- alice's preferences, memories, a weekly workflow and two taste patterns (one active, one she stopped);
- thumbs on responses that judged the injected learnings helped or hurt, over the whole month.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any

import time_machine
from django.utils import timezone

from accounts.actors import Actor
from accounts.models import ApiKey, Project, User
from feedback.models import EventFamily, Signal
from feedback.selectors import task_feedback_list
from feedback.services.events import EventInput, event_record
from feedback.services.task_feedback import task_feedback_record
from intelligence.selectors import attribution_candidates, cards_visible
from intelligence.services.attribution_reviews import attribution_candidate_decide
from intelligence.services.cards import card_feedback_record
from intelligence.services.targets import target_for_project, target_update
from learning.models import ChatMessage
from learning.selectors import memory_list, workflow_list
from learning.services.agent import response_feedback_record
from learning.services.messages import message_observe
from learning.services.taste import command_decision_record, command_run_record
from promotions.management import demo_content as content
from promotions.models import LearningPromotion, PromotionStatus
from promotions.scans import scan_run_now, scan_run_request
from promotions.selectors import promotion_list
from promotions.services import memory_share_propose, promotion_transition, promotions_expire, workflow_share_propose
from retrieval.services import DocumentInput, ResultFeedback, documents_import, retrieval_feedback_record, search

FULL_DAYS = 34  # the nominal length the beats are written for (days back from today)


@dataclass
class Beat:
    ago: float  # days back from today, in the nominal 34-day story
    hour: float
    order: int  # beats of one moment keep the order they were written in
    run: Callable[[], Any]


class DemoStory:
    """Plays the story out; ``run()`` once on a database without it (``seed_demo`` checks)."""

    def __init__(
        self, *, admin: User, alice: User, bob: User, project: Project, service_key: ApiKey, days: int, log=print
    ) -> None:
        self.users = {"alice": alice, "bob": bob}
        self.project = project
        self.admin = Actor(user=admin)
        self.service = Actor(user=None, api_key=service_key)
        self.service_key = service_key
        self.days = days
        self.scale = days / FULL_DAYS
        self.log = log
        self.today = timezone.now().replace(hour=0, minute=0, second=0, microsecond=0)
        self.last: datetime | None = None
        self.beats: list[Beat] = []
        self.messages: dict[str, ChatMessage] = {}  # chat text -> the stored message

    # --- the clock --------------------------------------------------------------------------------
    def at(self, day: float, hour: float, run: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """A beat: ``run(*args, **kwargs)`` on ``day`` (days back from today, nominal) at ``hour``."""
        self.beats.append(Beat(ago=day, hour=hour, order=len(self.beats), run=partial(run, *args, **kwargs)))

    @contextmanager
    def clock(self, day: float, hour: float) -> Iterator[None]:
        """Travel to the beat's moment (never before the previous beat ended, never after now)."""
        when = self.today - timedelta(days=day * self.scale) + timedelta(hours=hour * min(1.0, self.scale))
        if self.last is not None:
            when = max(when, self.last + timedelta(minutes=1))
        when = min(when, timezone.now() - timedelta(minutes=5))
        with time_machine.travel(when, tick=True):
            yield
            self.last = timezone.now()

    def for_user(self, name: str) -> Actor:
        """The assistant's backend acting for a user (a service key with X-On-Behalf-Of)."""
        return Actor(user=self.users[name], api_key=self.service_key)

    def run(self) -> None:
        self._documents()
        self._chat()
        self._searches()
        self._tools()
        self._tasks()
        self._checks()
        self._intelligence()
        self._reviews()
        beats = sorted(self.beats, key=lambda beat: (-beat.ago, beat.hour, beat.order))
        for index, beat in enumerate(beats, 1):
            with self.clock(beat.ago, beat.hour):
                beat.run()
            if index % 20 == 0:
                self.log(f"  {index} of {len(beats)} moments of the story written")
        # The admin's Generate, now: the candidates of the last weeks' evidence open for review.
        scan_run_request(actor=self.admin, scanner="all")

    # --- documents ---------------------------------------------------------------------------------
    def _documents(self) -> None:
        def handbook() -> None:
            documents_import(
                actor=self.service,
                items=[
                    DocumentInput(id=key, title=title, raw_text=text, source_system="wiki")
                    for key, (title, text) in content.HANDBOOK.items()
                ],
            )
            target = target_for_project(project=self.project)
            target_update(actor=self.admin, target_id=target.pk, changes={"client_names": [content.CLIENT]})

        self.at(34, 8, handbook)

    # --- chat: messages, replies, thumbs ---------------------------------------------------------------
    def _chat(self) -> None:
        for index, (day, name, text, reply) in enumerate(content.CHAT):
            self.at(day, 9 + index % 3, self._say, name, text, reply, day)
            if text in content.THUMBS:
                rating, reason = content.THUMBS[text]
                self.at(day, 12 + index % 3, self._thumb, name, text, rating, reason)

    def _say(self, name: str, text: str, reply: str, day: float) -> None:
        user = self.users[name]
        session = f"demo-{name}-{int(day)}"
        message, _ = message_observe(user=user, session_id=session, content=text, project=self.project)
        self.messages[text] = message
        if reply:
            message_observe(user=user, session_id=session, content=reply, role=ChatMessage.Role.ASSISTANT)

    def _thumb(self, name: str, text: str, rating: str, reason: str) -> None:
        message = self.messages[text]
        reply = next((r for _, _, t, r in content.CHAT if t == text), "")
        response_feedback_record(
            actor=self.for_user(name),
            user=self.users[name],
            response_id=str(message.pk),  # the message's context recorded its injections against its id
            rating=rating,
            reason=reason,
            response_text=reply,
            project=self.project,
            session_id=message.session_id,
        )

    # --- search: everyday use, then the outdated checklist ----------------------------------------------
    def _searches(self) -> None:
        for day in range(33, 0, -1):
            query, answer = content.EVERYDAY_SEARCHES[day % len(content.EVERYDAY_SEARCHES)]
            name = "alice" if day % 2 else "bob"
            self.at(day, 11, self._search, name, query, answer)
        for index, query in enumerate(content.DEPLOY_SEARCHES):
            day = 9 - 2 * index
            name = "bob" if index % 2 else "alice"
            self.at(day, 15, self._search, name, query, content.DEPLOY_CURRENT)
        # Somebody also says the old checklist is out of date.
        self.at(2, 16, self._search, "bob", content.DEPLOY_SEARCHES[0], None, stale=content.DEPLOY_OUTDATED)

    def _search(self, name: str, query: str, answer: str | None, stale: str | None = None) -> None:
        """Search, then act as people do: read from the top, use the first result that answers (the
        ones above it were looked at and skipped), say nothing of the rest."""
        actor = self.for_user(name)
        result = search(actor=actor, query=query, k=5, session_id=f"demo-search-{name}")
        items = []
        for hit in result.hits:
            document = hit.chunk.document_id
            if stale is not None and document == stale:
                items.append(ResultFeedback(chunk_id=hit.chunk.chunk_id, outcome="stale"))
                break
            if document == answer:
                items.append(ResultFeedback(chunk_id=hit.chunk.chunk_id, cited=True, used_in_answer=True))
                break
        retrieval_feedback_record(actor=actor, trace_id=str(result.trace_id), items=items, answer_rating="up")

    # --- tools: alice's drafts and replies (taste), failing runs -------------------------------------------
    def _tools(self) -> None:
        for index, edited in enumerate(content.DRAFT_EDITED):
            self.at(28 - 2 * index, 10.5, self._run, "alice", "email", "draft", content.DRAFT_OUTPUT, edited)
        for day in (19, 16):  # the pattern is applied; drafts accepted as they come confirm it
            self.at(day, 10.5, self._run, "alice", "email", "draft", content.DRAFT_OUTPUT, None)
        for day in (25, 20, 14):
            self.at(day, 14.5, self._run, "alice", "email", "reply", content.REPLY_OUTPUT, content.REPLY_EDITED)
        # A reply she rejects, with the pattern applied on trial, and then she says so in the chat.
        self.at(12, 9, self._run, "alice", "email", "reply", content.REPLY_OUTPUT, None, decision="rejected")
        self.at(12, 9.5, self._say, "alice", "stop applying this", "", 12)
        for day in (23, 22):
            self.at(day, 15.5, self._fail, "bob", "calendar", "schedule", content.CALENDAR_ERROR)
        for day in (6, 4, 2):
            self.at(day, 13.5, self._fail, "bob", "billing", "export", content.BILLING_ERROR)

    def _run(
        self, name: str, plugin: str, command: str, output: str, edited: str | None, decision: str = "accepted"
    ) -> None:
        actor, user = self.for_user(name), self.users[name]
        run = command_run_record(
            actor=actor, user=user, plugin=plugin, command=command, output=output, project=self.project
        )
        if edited is None:
            command_decision_record(actor=actor, user=user, run_id=run.run_id, decision=decision)
        else:
            command_decision_record(actor=actor, user=user, run_id=run.run_id, decision="edited", edited_output=edited)

    def _fail(self, name: str, plugin: str, command: str, error: str) -> None:
        command_run_record(
            actor=self.for_user(name),
            user=self.users[name],
            plugin=plugin,
            command=command,
            output=error,
            project=self.project,
            succeeded=False,
        )

    # --- generated tasks and their outcomes ---------------------------------------------------------
    def _tasks(self) -> None:
        def rate(name: str, task: dict, rating: str, reason: str, completed: bool) -> None:
            task_feedback_record(
                actor=self.for_user(name),
                task_snapshot=task,
                rating=rating,
                reason=reason,
                completed=completed,
                project_slug=self.project.slug,
                user_id=self.users[name].pk,
                surface="task_generation",
            )

        self.at(20, 16, rate, "alice", content.RELEASE_NOTES_TASK, "good", "Exactly the steps we follow.", True)
        self.at(20, 16.5, rate, "bob", content.OFFSITE_TASK, "good", "Useful this time.", True)
        self.at(17, 10, rate, "bob", content.TRIAGE_TASK, "good", "Saves me the morning.", False)
        for day in (16, 15, 14):
            self.at(day, 17, self._outcome, content.TRIAGE_TASK["title"])
        self.at(4, 16, rate, "alice", content.VAGUE_TASK, "bad", "Too vague: no owner and no due date.", False)
        self.at(2, 11.5, rate, "alice", content.DEMO_AGENDA_TASK, "good", "Ready to send as it is.", True)

    def _outcome(self, title: str) -> None:
        """The product reports that the workflow started from a rated task completed."""
        rated = task_feedback_list(actor=self.service).filter(task_snapshot__title=title)
        task = rated.order_by("-created_at").first()
        if task is None:
            return
        event_record(
            actor=self.service,
            data=EventInput(
                event_type="workflow_completed",
                event_family=EventFamily.WORKFLOW_OUTCOME,
                signal=Signal.COMPLETED,
                project_slug=self.project.slug,
                surface="task_generation",
                subject_type="task_feedback",
                subject_id=str(task.pk),
            ),
        )

    # --- automatic checks of the assistant's answers ---------------------------------------------------
    def _checks(self) -> None:
        for day in (15, 14):
            self.at(day, 18, self._check, *content.DATE_CHECK)
        for day in (5, 3, 1):
            self.at(day, 18, self._check, *content.CURRENCY_CHECK)

    def _check(self, check: str, expected: str, observed: str) -> None:
        event_record(
            actor=self.service,
            data=EventInput(
                event_type="eval_check_failed",
                event_family=EventFamily.EVAL_FAILURE,
                signal=Signal.FAILED,
                project_slug=self.project.slug,
                surface="eval",
                reason_category=check,
                free_text=observed,
                metadata={"deterministic": True, "check": check, "expected": expected},
            ),
        )

    # --- project intelligence: cards marked, mail attributed ----------------------------------------------
    def _intelligence(self) -> None:
        def notes() -> None:
            documents_import(
                actor=self.service,
                items=[
                    DocumentInput(
                        id=key, title=title, raw_text=text, source_system=system, project_slug=self.project.slug
                    )
                    for key, system, title, text in content.PROJECT_DOCUMENTS
                ],
            )

        def mail() -> None:
            documents_import(
                actor=self.service,
                items=[
                    DocumentInput(id=key, title=title, raw_text=text, source_system="email")
                    for key, title, text in content.INBOX
                ],
            )

        self.at(18, 8, notes)
        # Three decisions marked useful on three cards; later, two risks seen only in chat marked wrong.
        for index, name in enumerate(("alice", "bob", "alice")):
            self.at(17 - index, 12, self._mark, name, "decision", "useful", index)
        for index, name in enumerate(("alice", "bob", "alice")):
            self.at(6 - 2 * index, 12.5, self._mark, name, "risk", "wrong", index % 2, only="chat")
        self.at(5, 8, mail)
        self.at(3, 9, self._attribute_mail)

    def _mark(self, name: str, card_type: str, signal: str, index: int, only: str | None = None) -> None:
        """A reader marks one of the project's cards of this type (resting only on ``only``, if given)."""
        actor = Actor(user=self.users[name])
        cards = [
            card
            for card in cards_visible(actor=actor)
            .filter(project=self.project, card_type=card_type)
            .prefetch_related("evidence")
            .order_by("created_at")
            if only is None or {evidence.source_system for evidence in card.evidence.all()} == {only}
        ]
        if cards:
            card_feedback_record(actor=actor, card=cards[index % len(cards)], signal=signal)

    def _attribute_mail(self) -> None:
        """The admin confirms the mail the scorer thought was about the demo project's client."""
        inbox = [key for key, _, _ in content.INBOX]
        for candidate in attribution_candidates(actor=self.admin).filter(document_id__in=inbox):
            attribution_candidate_decide(actor=self.admin, candidate_id=candidate.pk, decision="approve")

    # --- scheduled scans and the admin's reviews --------------------------------------------------------
    def _reviews(self) -> None:
        for day in (32, 21, 18, 13, 8):
            self.at(day, 23, scan_run_now, scanner="all")  # the scheduled scans
        decide = self._decide
        self.at(17, 9, decide, "task_example", "approve", "apply", title=content.RELEASE_NOTES_TASK["title"])
        self.at(
            17, 9.2, decide, "task_example", "reject", notes="A one-off event.", title=content.OFFSITE_TASK["title"]
        )
        self.at(12, 10.2, decide, "packet_rule", "approve", "apply", rule_type="card_type_rank")
        self.at(
            7,
            10,
            decide,
            "agent_learning",
            "supersede",
            notes="The style guide's rule replaces it.",
            check="date_format",
            status=PromotionStatus.APPLIED,
        )
        self.at(
            7,
            10.5,
            decide,
            "agent_learning",
            "approve",
            notes="Apply after the support team's review.",
            reason="handover",
        )
        self.at(
            5,
            10,
            decide,
            "packet_rule",
            "pause",
            notes="This month the team reads risks first.",
            rule_type="card_type_rank",
            status=PromotionStatus.APPLIED,
        )
        self.at(27, 9, self._share_memory, "bob", "kids", notes="So the team knows when I leave.")
        self.at(26, 9, self._decide, "memory", "reject", notes="Family details stay private.", owner="bob")
        self.at(2, 9, self._share_memory, "alice", "sprint demo")
        self.at(1, 9, self._share_workflow)
        self.at(1, 22, promotions_expire)

    def _decide(
        self, promotion_type: str, *actions: str, notes: str = "", status: str = PromotionStatus.CANDIDATE, **match: str
    ) -> None:
        """The admin takes ``actions`` on the first promotion of this type and status that matches."""
        for promotion in promotion_list(actor=self.admin).filter(promotion_type=promotion_type, status=status):
            if _matches(promotion, match, self.users):
                for action in actions:
                    promotion_transition(actor=self.admin, promotion_id=str(promotion.pk), action=action, notes=notes)
                return
        self.log(f"  (nothing to {'/'.join(actions)} for {promotion_type} {match})")

    def _share_memory(self, name: str, about: str, notes: str = "") -> None:
        user = self.users[name]
        memory = next(
            (m for m in memory_list(user=user) if about in m.content.lower() and m.visibility == "private"), None
        )
        if memory is None:
            self.log(f"  ({name} has no memory about {about!r} to share)")
            return
        memory_share_propose(
            actor=Actor(user=user),
            subject_type="memory",
            subject_id=str(memory.pk),
            visibility="project",
            project=self.project,
            notes=notes,
        )

    def _share_workflow(self) -> None:
        alice = self.users["alice"]
        workflow = workflow_list(user=alice).first()
        if workflow is None:
            self.log("  (alice has no workflow to share)")
            return
        workflow_share_propose(
            actor=Actor(user=alice), workflow_id=workflow.pk, visibility="project", project=self.project
        )


def _matches(promotion: LearningPromotion, match: dict[str, str], match_users: dict[str, User]) -> bool:
    learning = promotion.proposed_learning if isinstance(promotion.proposed_learning, dict) else {}
    for key, value in match.items():
        if key == "title" and learning.get("title") != value:
            return False
        if key == "rule_type" and learning.get("rule_type") != value:
            return False
        if key == "reason" and value not in str(learning.get("prevention_prompt", "")).lower():
            return False
        if key == "check" and value not in promotion.rule:
            return False
        if key == "owner" and promotion.subject_id not in {str(m.pk) for m in memory_list(user=match_users[value])}:
            return False
    return True


def story_counts() -> dict[str, Any]:
    """What the story left for the console: open candidates per type, promotions per status."""
    rows = LearningPromotion.objects.values_list("promotion_type", "status")
    open_by_type: dict[str, int] = {}
    by_status: dict[str, int] = {}
    for promotion_type, status in rows:
        by_status[status] = by_status.get(status, 0) + 1
        if status == PromotionStatus.CANDIDATE:
            open_by_type[promotion_type] = open_by_type.get(promotion_type, 0) + 1
    return {"candidates": open_by_type, "statuses": by_status}


__all__ = ["DemoStory", "story_counts"]
