"""One candidate of each promotion type, made the way the product makes it (scanners from real
evidence, share requests from their owners), for the console's tests and its browser tests."""

from __future__ import annotations

from feedback.models import EventFamily
from feedback.services.events import EventInput, event_record
from feedback.services.task_feedback import task_feedback_record
from learning.services.agent import response_feedback_record
from learning.services.taste import command_run_record
from promotions import services
from promotions.models import LearningPromotion
from promotions.scanners.agent_learning import agent_learning_scan
from promotions.scanners.eval_failure import eval_failure_scan
from promotions.scanners.retrieval import retrieval_scan
from promotions.scanners.task_rating import task_rating_scan
from promotions.scanners.tool_failure import tool_failure_scan
from retrieval.services import DocumentInput, ResultFeedback, documents_import, retrieval_feedback_record, search
from tests.conftest import World
from tests.factories import IntelligenceTargetFactory, LearnedWorkflowFactory, MemoryFactory

DOCS = {
    "flutter": ("Wing flutter", "Flutter of aircraft wings: aeroelastic coupling of bending and torsion."),
    "flutter-tests": ("Tunnel tests", "Wind tunnel tests of wing flutter with control surfaces."),
    "buckling": ("Shell buckling", "Buckling of thin cylindrical shells under axial compression."),
    "heating": ("Hypersonic heating", "Aerodynamic heating of blunt bodies in hypersonic flow."),
}
QUERY = "wind tunnel flutter experiments"
# Re-askings of QUERY (the same content words): distinct supporting queries of one neighbourhood.
REASKINGS = [
    QUERY,
    "Wind tunnel flutter experiments?",
    "experiments wind tunnel flutter",
    "wind-tunnel flutter experiments",
]
CLIENT_POEMS = [
    ("Dear client, here is a haiku about autumn leaves.", "The client asked for a spring poem, not autumn"),
    ("Dear client, a haiku about autumn leaves on a pond.", "Wrong season for the client: spring, not autumn"),
]


def corpus(world: World) -> None:
    documents_import(
        actor=world.actor("service"),
        items=[DocumentInput(id=k, title=title, raw_text=text) for k, (title, text) in DOCS.items()],
    )


def weight_boost(world: World, *, searches: int = 3) -> LearningPromotion:
    """A query-scoped boost: ``searches`` searches by ``other`` (re-askings of one query) that each
    used the second result, then the retrieval scan. The top result everyone skipped is penalised too
    (skips are evidence): that candidate stays, another retrieval weight to supersede with."""
    corpus(world)
    actor = world.actor("other")
    second = search(actor=actor, query=QUERY, k=4).hits[1].chunk.chunk_id
    for i in range(searches):
        result = search(actor=actor, query=REASKINGS[i % len(REASKINGS)], k=4)
        retrieval_feedback_record(
            actor=actor,
            trace_id=result.trace_id,
            items=[ResultFeedback(chunk_id=second, cited=True, used_in_answer=True, outcome="helpful")],
        )
    retrieval_scan()
    return LearningPromotion.objects.get(promotion_type="retrieval_weight", proposed_learning__reason="helpful")


def thumbs_down(world: World, *, times: int = 1) -> LearningPromotion:
    """Thumbs-down on similar client-facing responses (high risk: a person decides, whatever the count)."""
    for i in range(times):
        text, reason = CLIENT_POEMS[i % 2]
        role = ("owner", "member")[i % 2]
        response_feedback_record(
            actor=world.actor(role),
            user=getattr(world, role),
            response_id=f"r-{i}",
            rating="down",
            reason=reason,
            response_text=text,
            tool_name="poetry",
            tool_trace=[{"step": "draft", "model": "poet-1"}],
            tags=["poems"],
            project=world.project,
        )
    agent_learning_scan()
    return LearningPromotion.objects.get(promotion_type="agent_learning", subject_type="response_feedback")


def tool_failure(world: World) -> LearningPromotion:
    """Two similar failures of an invoicing tool (financial: it waits for a person)."""
    for n in (1, 2):
        command_run_record(
            actor=world.actor("owner"),
            user=world.owner,
            plugin="invoices",
            command="send",
            output=f"Error: recipient {n} has no address",
            project=world.project,
            succeeded=False,
        )
    tool_failure_scan()
    return LearningPromotion.objects.get(promotion_type="agent_learning", subject_type="tool_failure")


def task_rating(world: World) -> LearningPromotion:
    task_feedback_record(
        actor=world.actor("owner"),
        task_snapshot={"id": "t-bad", "title": "Plan the site visit", "description": "Sometime soon"},
        rating="bad",
        reason="Too vague: no date and no list of who attends",
        project_slug=world.project.slug,
    )
    task_rating_scan()
    return LearningPromotion.objects.get(promotion_type="agent_learning", subject_type="task_feedback")


def eval_failure(world: World) -> LearningPromotion:
    """A deterministic check on invoices (financial: it waits for a person)."""
    for _ in range(2):
        event_record(
            actor=world.actor("service"),
            data=EventInput(
                event_type="eval_check_failed",
                event_family=EventFamily.EVAL_FAILURE,
                signal="failed",
                user_id=world.owner.pk,
                project_slug=world.project.slug,
                free_text="Wrote 3/4/2026 on the invoice",
                metadata={
                    "deterministic": True,
                    "check": "invoice_date_format",
                    "expected": "Invoice dates are written as YYYY-MM-DD.",
                    "tool_name": "report",
                },
            ),
        )
    eval_failure_scan()
    return LearningPromotion.objects.get(promotion_type="agent_learning", subject_type="eval_failure")


def task_example(world: World, title: str = "Draft the Q3 site report") -> LearningPromotion:
    feedback, _ = task_feedback_record(
        actor=world.actor("owner"),
        task_snapshot={"id": f"t-{title}", "title": title, "description": "Progress per trade"},
        rating="good",
        reason="Exactly what the site manager needed",
        completed=True,
        project_slug=world.project.slug,
    )
    promotion, _ = services.promotion_propose(
        actor=world.actor("admin"),
        promotion_type="task_example",
        subject_type="task_feedback",
        subject_id=str(feedback.pk),
        project=world.project,
    )
    return promotion


def memory_share(world: World, content: str = "The site office closes at 4 pm on Fridays.") -> LearningPromotion:
    memory = MemoryFactory(owner=world.owner, content=content)
    promotion, _ = services.memory_share_propose(
        actor=world.actor("owner"),
        subject_type="memory",
        subject_id=str(memory.pk),
        visibility="project",
        project=world.project,
    )
    return promotion


def workflow_share(world: World) -> LearningPromotion:
    workflow = LearnedWorkflowFactory(
        user=world.owner,
        workflow_name="Weekly site report",
        trigger_pattern="write the weekly site report",
        learned_steps=["Collect the trades' progress", "Summarise delays", "List next week's pours"],
        times_detected=4,
    )
    promotion, _ = services.workflow_share_propose(
        actor=world.actor("owner"), workflow_id=workflow.pk, visibility="project", project=world.project
    )
    return promotion


def packet_rule(world: World) -> LearningPromotion:
    promotion, _ = services.promotion_propose(
        actor=world.actor("admin"),
        promotion_type="packet_rule",
        subject_type="packet_rule",
        subject_id=f"{world.project.pk}:card_type_rank:risk",
        project=world.project,
        proposed_learning={
            "rule_type": "card_type_rank",
            "parameters": {"card_type": "risk", "direction": "up"},
            "description": "Raise risks in the packet: users marked 4 risk cards useful.",
            "evidence": {"marks": 4, "cards": ["a", "b", "c"], "signal": "positive"},
        },
    )
    return promotion


def attribution_rule(world: World) -> LearningPromotion:
    target = IntelligenceTargetFactory(project=world.project, name="Apollo tower")
    promotion, _ = services.promotion_propose(
        actor=world.actor("admin"),
        promotion_type="attribution_rule",
        subject_type="attribution_pattern",
        subject_id="alias:the dig",
        project=world.project,
        target=target,
        proposed_learning={
            "match_kind": "alias",
            "pattern": "the dig",
            "target_id": target.pk,
            "target": f"{world.project.slug}/{target.slug}",
            "reviewed_documents": ["flutter", "heating"],
            "support": {"reviewed": 2, "attributed": 5, "best_other_project": 0},
        },
    )
    return promotion


# Every type the ledger has (agent learnings from each of their four sources), by a name for test ids.
CASES = {
    "retrieval_weight": weight_boost,
    "agent_learning_thumbs_down": thumbs_down,
    "agent_learning_tool_failure": tool_failure,
    "agent_learning_task_rating": task_rating,
    "agent_learning_eval_failure": eval_failure,
    "task_example": task_example,
    "memory": memory_share,
    "workflow": workflow_share,
    "packet_rule": packet_rule,
    "attribution_rule": attribution_rule,
}
