"""Context assembly latency with 100 active learnings in scope, recording every injection, on PostgreSQL.

    .venv/bin/python bench/context_learnings.py [--calls 2000]

On a scratch PostgreSQL database, with Redis as the cache (as in production), one user of
project "apollo" has 100 active learnings in the scope of the calls (project apollo, tool
"search", plugin email / command draft, surface task_generation):

  30 agent learnings: 5 proposed by the agent-learning scan from pairs of similar thumbs-down,
     25 proposed directly on a thumbs-down; all approved and applied through the promotion services
  20 shared memories: 10 team, 10 project (other members' private memories shared, approved, applied)
   5 private memories of the user
  10 taste patterns for email / draft: 1 learned from three shortened drafts, 9 stored directly
  10 task examples: tasks rated good and completed, proposed by the task-example scan, applied
  25 preferences (added by hand)

and, out of scope, 35 more (another project's, another tool's, another plugin's). Then ``--calls`` calls of
POST /api/v1/context through Django's full request path (in-process, no network), each with
a response_id, so the API records one usage row per injected learning (a GET previews and records
nothing); and context_build alone,
with and without recording, for comparison. Goal: p95 <= 10 ms for the API.
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness import django_in_scratch

TOPICS = [
    "quarterly sales report",
    "weekly standup notes",
    "customer renewal email",
    "overdue invoice reminder",
    "mobile release notes",
    "slow sql query",
    "regression test plan",
    "board meeting agenda",
    "marketing budget",
    "backend job post",
    "product blog draft",
    "code review checklist",
    "outage incident summary",
    "annual roadmap",
    "employee survey results",
    "funding press release",
    "user interview notes",
    "onboarding guide",
    "supplier contract",
    "monthly newsletter",
]
# Very different complaints, so the scan groups each pair and no two pairs together.
COMPLAINTS = [
    ("The answer quoted prices in dollars for a customer in Germany.", "wrong currency for the region"),
    ("Here is a 40 step Kubernetes migration plan with Helm charts.", "far too long and off topic"),
    ("The capital of Australia is Sydney.", "factually wrong capital city"),
    ("SELECT * FROM orders; -- then filter the rows in Python", "inefficient query advice"),
    ("I cannot help with spreadsheets.", "refused a simple spreadsheet question"),
]


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, round(q / 100 * len(ordered)) - 1)]

    return f"p50 {at(50):.2f} ms, p95 {at(95):.2f} ms, p99 {at(99):.2f} ms, mean {statistics.fmean(ordered):.2f} ms"


def p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.95 * len(ordered)) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--database", default="learninglayer_bench_context_learnings")
    parser.add_argument("--cache", default="redis://127.0.0.1:6379/13")
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()

    django_in_scratch(args.pg, args.database, cache=args.cache)
    from django.db.models import Q
    from django.test import Client

    from accounts.actors import Actor
    from accounts.models import User
    from accounts.services import api_key_create, project_ensure, project_member_add, user_ensure
    from feedback.models import TaskFeedback
    from feedback.services.task_feedback import task_feedback_record
    from learning.analyzer.base import MemoryFinding
    from learning.conf import learning_settings
    from learning.context.build import Scope, context_build
    from learning.models import AgentLearning, LearningUsage, Memory, Preference, TastePattern
    from learning.services import taste
    from learning.services.agent import response_feedback_record
    from learning.services.memories import memory_remember
    from learning.services.preferences import preference_add_manual
    from learning.services.usages import usages_record
    from promotions.models import LearningPromotion
    from promotions.scanners.agent_learning import agent_learning_scan
    from promotions.scanners.task_example import task_example_scan
    from promotions.services import promotion_propose, promotion_transition

    admin = Actor(user=User.objects.get(username="bench"))
    apollo, zeus = project_ensure(slug="apollo", name="Apollo"), project_ensure(slug="zeus", name="Zeus")
    carol = user_ensure(username="carol", password=secrets.token_urlsafe(16))
    dave = user_ensure(username="dave", password=secrets.token_urlsafe(16))
    for user in (carol, dave):
        project_member_add(project=apollo, user=user)
    project_member_add(project=zeus, user=dave)

    def approve_and_apply(promotion: LearningPromotion) -> None:
        for action in ("approve", "apply"):
            promotion_transition(actor=admin, promotion_id=str(promotion.pk), action=action)

    # Agent learnings. The scan: five pairs of similar thumbs-down, in apollo, on the search tool.
    for i, (response, reason) in enumerate(COMPLAINTS):
        for j in range(2):
            response_feedback_record(
                actor=Actor(user=carol),
                user=carol,
                response_id=f"scan-{i}-{j}",
                rating="down",
                reason=reason,
                response_text=response,
                tool_name="search",
                project=apollo,
            )
    report = agent_learning_scan(actor=admin)
    for promotion in LearningPromotion.objects.filter(promotion_type="agent_learning", status="candidate"):
        approve_and_apply(promotion)
    # ... and proposed directly on one thumbs-down each: 25 in scope, 20 outside it.
    scopes = [(apollo, "search"), (apollo, ""), (None, "search"), (None, "")] * 7
    scopes = scopes[:25] + [(zeus, "search")] * 10 + [(apollo, "calendar")] * 10
    for i, (project, tool) in enumerate(scopes):
        author = carol if project != zeus else dave
        event, _ = response_feedback_record(
            actor=Actor(user=author),
            user=author,
            response_id=f"direct-{i}",
            rating="down",
            reason=f"missed the point about {TOPICS[i % len(TOPICS)]}",
            response_text=f"Response {i}",
            tool_name=tool,
            project=project,
        )
        promotion, _ = promotion_propose(
            actor=admin,
            promotion_type="agent_learning",
            subject_type="response_feedback",
            subject_id=str(event.pk),
            proposed_learning={
                "title": f"Lesson {i}",
                "tool_name": tool,
                "tags": ["bench"],
                "prevention_prompt": f"When asked about the {TOPICS[i % len(TOPICS)]}, check the "
                f"figures against the source before answering (lesson {i}).",
            },
            project=project,
            risk_level="medium",
        )
        approve_and_apply(promotion)

    # Shared memories: dave's private memories, shared with everyone (team) or with a project.
    for i in range(25):
        visibility, project = ("team", None) if i < 10 else ("project", apollo if i < 20 else zeus)
        memory = memory_remember(
            owner=dave,
            source_message=None,
            finding=MemoryFinding(
                kind="context", content=f"The {TOPICS[i % len(TOPICS)]} is owned by team {i}.", confidence=0.9
            ),
        )
        promotion, _ = promotion_propose(
            actor=Actor(user=dave),
            promotion_type="memory",
            subject_type="memory",
            subject_id=str(memory.pk),
            proposed_learning={"visibility": visibility, "project": project.slug if project else None},
            project=project,
            risk_level="medium",
        )
        approve_and_apply(promotion)
    for i in range(5):
        memory_remember(
            owner=carol,
            source_message=None,
            finding=MemoryFinding(kind="fact", content=f"I work from office number {i + 3}.", confidence=0.8),
        )

    # Taste patterns: one learned from three shortened drafts, the rest stored as learned ones are.
    for i in range(3):
        ran = taste.command_run_record(
            actor=Actor(user=carol),
            user=carol,
            plugin="email",
            command="draft",
            output="Dear team, " + "here is a long and detailed update. " * 30,
        )
        taste.command_decision_record(
            actor=Actor(user=carol),
            user=carol,
            run_id=ran.run_id,
            decision="edited",
            edited_output=f"Dear team, short update {i}.",
        )
    for i in range(14):
        plugin, command = ("email", "draft" if i % 3 else None) if i < 9 else ("calendar", "invite")
        TastePattern.objects.create(
            user=carol,
            plugin=plugin,
            command=command,
            correction_type="section",
            direction=f"removed:part {i}",
            description=f"Removed the 'part {i}' section 3/4 times.",
            instruction=f"Leave out the 'part {i}' section.",
            observations=3,
            confirmations=2,
            confidence=0.4,
            status=TastePattern.Status.ACTIVE,
        )

    # Task examples: rated good and completed, proposed by the scan, approved and applied.
    for i in range(15):
        project = apollo if i < 10 else zeus
        rater = carol if project == apollo else dave
        task_feedback_record(
            actor=Actor(user=rater),
            user_id=rater.pk,
            project_slug=project.slug,
            rating="good",
            completed=True,
            task_snapshot={
                "id": f"task-{i}",
                "title": f"Prepare the {TOPICS[i]}",
                "description": f"Collect the inputs for the {TOPICS[i]}, draft it and ask for review.",
            },
        )
    task_report = task_example_scan(actor=admin)
    for promotion in LearningPromotion.objects.filter(promotion_type="task_example", status="candidate"):
        approve_and_apply(promotion)

    for i in range(25):
        preference_add_manual(
            user=carol,
            category=("tone", "length", "format", "expertise", "output", "behavior")[i % 6],
            description=f"Learned rule number {i} about how to answer",
        )

    in_project = Q(project__isnull=True) | Q(project=apollo)
    active = {
        "agent learnings": AgentLearning.objects.filter(status="active"),
        "team/project memories": Memory.objects.filter(status="active").exclude(visibility="private"),
        "private memories": Memory.objects.filter(owner=carol, visibility="private", status="active"),
        "taste patterns": TastePattern.objects.filter(user=carol, status__in=["candidate", "active"]),
        "task examples": TaskFeedback.objects.filter(promoted=True, rating="good"),
        "preferences": Preference.objects.filter(user=carol, active=True),
    }
    in_scope = {
        "agent learnings": active["agent learnings"].filter(in_project, tool_name__in=["", "search"]).count(),
        "team/project memories": active["team/project memories"]
        .filter(Q(visibility="team") | Q(visibility="project", project=apollo))
        .count(),
        "private memories": active["private memories"].count(),
        "taste patterns": active["taste patterns"]
        .filter(Q(command="draft") | Q(command__isnull=True), plugin="email")
        .count(),
        "task examples": active["task examples"].filter(in_project).count(),
        "preferences": active["preferences"].count(),
    }
    total = sum(in_scope.values())
    outside = sum(qs.count() for qs in active.values()) - total
    print(f"PostgreSQL database {args.database}, cache {args.cache}")
    print(f"agent-learning scan: {report.groups} groups proposed; task-example scan: {task_report.proposed} proposed")
    print(
        f"in scope: {total} active learnings ({', '.join(f'{n} {k}' for k, n in in_scope.items())}); "
        f"{outside} more active out of scope"
    )

    _, raw = api_key_create(owner=carol, name="bench-context")
    client = Client(HTTP_AUTHORIZATION=f"Bearer {raw}", SERVER_NAME="127.0.0.1")
    scope = Scope(project_id=apollo.pk, surface="task_generation", plugin="email", command="draft", tool_name="search")
    http, direct, unrecorded, injected = [], [], [], []
    warm_up = 100
    for i in range(args.calls + warm_up):
        message = f"Can you draft the {TOPICS[i % len(TOPICS)]} for today?"
        params = {
            "message": message,
            "project": "apollo",
            "surface": "task_generation",
            "plugin": "email",
            "command": "draft",
            "tool": "search",
            "response_id": f"resp-{i}",
        }
        started = time.perf_counter()
        response = client.post("/api/v1/context", params, content_type="application/json")
        elapsed = (time.perf_counter() - started) * 1000
        assert response.status_code == 200, response.content
        started = time.perf_counter()
        usages_record(
            user=carol,
            context=context_build(user=carol, message=message, scope=scope),
            scope=scope,
            response_id=f"direct-{i}",
        )
        direct_elapsed = (time.perf_counter() - started) * 1000
        started = time.perf_counter()
        context_build(user=carol, message=message, scope=scope)
        unrecorded_elapsed = (time.perf_counter() - started) * 1000
        if i >= warm_up:
            http.append(elapsed)
            direct.append(direct_elapsed)
            unrecorded.append(unrecorded_elapsed)
            body = response.json()
            injected.append(
                sum(
                    len(body[k])
                    for k in ("preferences", "taste_patterns", "agent_learnings", "memories", "task_examples")
                )
                + (body["workflow"] is not None)
            )
    last = response.json()
    usages = LearningUsage.objects.filter(response_id__startswith="resp-").count()
    print(
        f"{args.calls} calls each after {warm_up} warm-up; each injects {statistics.fmean(injected):.0f} learnings "
        f"(caps: {learning_settings.CONTEXT_MAX_PREFERENCES} preferences, "
        f"{learning_settings.CONTEXT_MAX_TASTE_PATTERNS} taste, "
        f"{learning_settings.CONTEXT_MAX_AGENT_LEARNINGS} agent, {learning_settings.CONTEXT_MAX_MEMORIES} memories, "
        f"{learning_settings.CONTEXT_MAX_TASK_EXAMPLES} task examples; {learning_settings.CONTEXT_MAX_CHARS} chars), "
        f"{len(last['text'])} chars of text"
    )
    print(f"usage rows recorded by the API: {usages} ({usages / (args.calls + warm_up):.0f} per call)")
    print(f"POST /api/v1/context (full request path, record): {percentiles(http)}")
    print(f"context_build + usages_record (no HTTP):          {percentiles(direct)}")
    print(f"context_build (no HTTP):                         {percentiles(unrecorded)}")
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    print(f"goal p95 <= 10 ms: {'met' if p95(http) <= 10 else 'NOT met'} (p95 {p95(http):.2f} ms)")


if __name__ == "__main__":
    main()
