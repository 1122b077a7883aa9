"""The review console (staff only, server-rendered): list, metrics, scan, review and lifecycle actions."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from accounts.actors import Actor
from config.exceptions import ApplicationError
from promotions import selectors, services
from promotions.models import PromotionStatus
from promotions.scanners import promotions_scan

TABS = ("candidate", "approved", "applied", "paused", "rejected", "superseded", "expired")
ACTIONS = ("approve", "reject", "apply", "pause", "resume", "supersede")


@staff_member_required
def promotion_list(request: HttpRequest) -> HttpResponse:
    status = request.GET.get("status", PromotionStatus.CANDIDATE)
    if status not in TABS:
        status = PromotionStatus.CANDIDATE
    actor = Actor.from_request(request)
    rows = selectors.promotion_list(actor=actor).filter(status=status)[:200]
    return render(
        request,
        "promotions/console_list.html",
        {
            "tabs": TABS,
            "status": status,
            "rows": rows,
            "metrics": selectors.console_metrics(),
            "activity": selectors.promotion_activity(),
        },
    )


@staff_member_required
def promotion_detail(request: HttpRequest, promotion_id: str) -> HttpResponse:
    from promotions.previews import retrieval_weight_preview

    promotion = selectors.promotion_get(actor=Actor.from_request(request), promotion_id=promotion_id)
    if promotion is None:
        raise Http404("No such promotion.")
    preview = None
    if promotion.promotion_type == "retrieval_weight" and request.GET.get("preview"):
        preview = retrieval_weight_preview(promotion=promotion)
    learning = {k: v for k, v in promotion.proposed_learning.items() if k not in ("anchor_traces", "anchor_terms")}
    # Agent learnings carry their evidence as rows (the responses and reasons behind them).
    evidence = learning.pop("evidence") if isinstance(learning.get("evidence"), list) else []
    return render(
        request,
        "promotions/console_detail.html",
        {
            "promotion": promotion,
            "learning": learning,
            "evidence": evidence,
            "anchors": len(promotion.proposed_learning.get("anchor_traces", [])),
            "preview": preview,
            "actions": ACTIONS,
            "activity": selectors.promotion_activity(promotion_id=str(promotion.pk)),
        },
    )


@staff_member_required
@require_POST
def promotion_action(request: HttpRequest, promotion_id: str, action: str) -> HttpResponse:
    if action not in ACTIONS:
        raise Http404("No such action.")
    try:
        services.promotion_transition(
            actor=Actor.from_request(request),
            promotion_id=promotion_id,
            action=action,
            notes=request.POST.get("notes", "")[:10_000],
        )
        messages.success(request, f"Promotion {action}d." if action.endswith("e") else f"Promotion {action}ed.")
    except ApplicationError as exc:
        messages.error(request, exc.message)
    return redirect("console-promotion", promotion_id=promotion_id)


@staff_member_required
@require_POST
def promotion_scan(request: HttpRequest) -> HttpResponse:
    reports = promotions_scan(actor=Actor.from_request(request))
    report, agents, tasks = reports["retrieval"], reports["agent_learning"], reports["task_example"]
    messages.success(
        request,
        f"Scan done: {report.boosts} boosts and {report.penalties} penalties proposed "
        f"({report.skipped_open} chunks already had an open candidate); {agents.proposed} agent learnings "
        f"({agents.flagged} steering reasons flagged); {tasks.proposed} task examples.",
    )
    return redirect("console-promotions")
