"""The review console (staff only, server-rendered): list, metrics, scan, review and lifecycle actions."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from accounts.actors import Actor
from config.exceptions import ApplicationError, Conflict
from promotions import explain, scans, selectors, services
from promotions.models import LearningPromotion, PromotionStatus

TABS = ("candidate", "approved", "applied", "paused", "rejected", "superseded", "expired")
ACTIONS = ("approve", "reject", "apply", "pause", "resume", "supersede")
# Actions that ask for confirmation first (they change behaviour, or close a promotion for good).
CONFIRMED = ("apply", "reject", "supersede")


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
    """One promotion explained (promotions.explain): its content, reach, evidence, impact preview,
    what Apply will change, the actions its state allows (Apply, Reject and Supersede confirmed),
    and its audit trail. A fixed number of queries, whatever its evidence."""
    promotion = selectors.promotion_get(actor=Actor.from_request(request), promotion_id=promotion_id)
    if promotion is None:
        raise Http404("No such promotion.")
    explanation = explain.promotion_explain(promotion=promotion)
    return render(
        request,
        "promotions/console_detail.html",
        {
            "promotion": promotion,
            "x": explanation,
            "buttons": explain.action_buttons(explanation),
            "replacements": (
                explain.replacement_choices(promotion=promotion) if "supersede" in explanation.actions else []
            ),
            "superseded_by": (
                explain.promotion_briefs([promotion.superseded_by])[str(promotion.superseded_by.pk)]
                if promotion.superseded_by is not None
                else ""
            ),
            "activity": explain.audit_trail(selectors.promotion_activity(promotion_id=str(promotion.pk))),
            "admin_url": explain.admin_change_url(LearningPromotion, promotion.pk),
        },
    )


@staff_member_required
@require_POST
def promotion_action(request: HttpRequest, promotion_id: str, action: str) -> HttpResponse:
    """One lifecycle action. Apply, Reject and Supersede need ``confirm=yes`` (the page's dialog sends
    it); without it, nothing changes and a confirmation page states the consequence (no script
    needed). Supersede names its replacement (``superseded_by``: a promotion's id, or ``none``)."""
    if action not in ACTIONS:
        raise Http404("No such action.")
    actor = Actor.from_request(request)
    notes = request.POST.get("notes", "")[:10_000]
    choice = request.POST.get("superseded_by", "").strip()
    superseded_by = None if choice in ("", "none") else choice
    try:
        if action == "supersede" and not choice:
            raise ApplicationError(
                "Choose the promotion that replaces this one (or “no replacement”).", field="superseded_by"
            )
        if action in CONFIRMED and request.POST.get("confirm") != "yes":
            return _confirmation(
                request,
                actor=actor,
                promotion_id=promotion_id,
                action=action,
                notes=notes,
                choice=choice,
                superseded_by=superseded_by,
            )
        promotion = services.promotion_transition(
            actor=actor, promotion_id=promotion_id, action=action, notes=notes, superseded_by=superseded_by
        )
        messages.success(request, explain.action_message(action, promotion))
    except ApplicationError as exc:
        messages.error(request, exc.message)
    return redirect("console-promotion", promotion_id=promotion_id)


def _confirmation(
    request: HttpRequest,
    *,
    actor: Actor,
    promotion_id: str,
    action: str,
    notes: str,
    choice: str,
    superseded_by: str | None,
) -> HttpResponse:
    """The confirmation page of an unconfirmed Apply, Reject or Supersede (nothing is written)."""
    promotion = selectors.promotion_get(actor=actor, promotion_id=promotion_id)
    if promotion is None:
        raise Http404("No such promotion.")
    explanation = explain.promotion_explain(promotion=promotion)
    if action not in explanation.actions:
        raise Conflict(f"Cannot {action} a promotion that is {promotion.status}.", field="status")
    replacement = (
        services.promotion_replacement_check(promotion=promotion, superseded_by=superseded_by)
        if superseded_by
        else None
    )
    return render(
        request,
        "promotions/console_confirm.html",
        {
            "promotion": promotion,
            "x": explanation,
            "action": action,
            "notes": notes,
            "choice": choice,
            "replacement": explain.promotion_briefs([replacement])[str(replacement.pk)] if replacement else "",
        },
    )


@staff_member_required
@require_POST
def promotion_scan(request: HttpRequest) -> HttpResponse:
    """Generate: queue a scan of every scanner (a worker runs it); the list shows its progress and report."""
    _, created = scans.scan_run_request(actor=Actor.from_request(request))
    messages.success(request, "Scan queued." if created else "A scan is already queued or running.")
    return redirect("console-promotions")
