"""The review console (staff only, server-rendered): list, metrics, scan, review and lifecycle actions."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from accounts.actors import Actor
from config.exceptions import ApplicationError
from promotions import scans, selectors, services
from promotions.models import PromotionStatus
from promotions.previews import retrieval_weight_preview

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
            "scan": selectors.scan_run_latest(actor=actor),
        },
    )


@staff_member_required
def promotion_detail(request: HttpRequest, promotion_id: str) -> HttpResponse:
    promotion = selectors.promotion_get(actor=Actor.from_request(request), promotion_id=promotion_id)
    if promotion is None:
        raise Http404("No such promotion.")
    preview = None
    if promotion.promotion_type == "retrieval_weight" and request.GET.get("preview"):
        try:
            preview = retrieval_weight_preview(promotion=promotion)
        except ApplicationError as exc:  # its passage is gone
            messages.error(request, exc.message)
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
            "weight": selectors.retrieval_weight_of(promotion=promotion),
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
    """Generate: queue a scan of every scanner (a worker runs it); the list shows its progress and report."""
    _, created = scans.scan_run_request(actor=Actor.from_request(request))
    messages.success(request, "Scan queued." if created else "A scan is already queued or running.")
    return redirect("console-promotions")
