"""The attribution review queue of the console (staff only, server-rendered)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from accounts.actors import Actor
from config.exceptions import ApplicationError
from intelligence import selectors
from intelligence.models import AttributionStatus
from intelligence.services.attribution_reviews import DECISIONS, attribution_candidate_decide

TABS = AttributionStatus.values
PAST = {"approve": "approved", "reject": "rejected", "correct": "corrected"}


@staff_member_required
def attribution_queue(request: HttpRequest) -> HttpResponse:
    status = request.GET.get("status", AttributionStatus.CANDIDATE)
    if status not in TABS:
        status = AttributionStatus.CANDIDATE
    actor = Actor.from_request(request)
    rows = selectors.attribution_candidates(actor=actor, status=status)
    if status != AttributionStatus.CANDIDATE:
        rows = rows.order_by("-decided_at", "-pk")
    return render(
        request,
        "intelligence/console_attribution.html",
        {
            "tabs": TABS,
            "status": status,
            "rows": list(rows[:100]),
            "targets": list(selectors.attribution_queue_targets()),
            "activity": selectors.attribution_activity(),
        },
    )


@staff_member_required
@require_POST
def attribution_decide(request: HttpRequest, candidate_id: int, decision: str) -> HttpResponse:
    if decision not in DECISIONS:
        raise Http404("No such decision.")
    target = request.POST.get("target", "")
    try:
        attribution_candidate_decide(
            actor=Actor.from_request(request),
            candidate_id=candidate_id,
            decision=decision,
            target_id=int(target) if target.isdigit() else None,
            notes=request.POST.get("notes", "")[:10_000],
        )
        messages.success(request, f"Candidate {candidate_id} {PAST[decision]}.")
    except ApplicationError as exc:
        messages.error(request, exc.message)
    return redirect("console-attribution")
