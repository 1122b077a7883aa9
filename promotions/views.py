"""The review console (staff only, server-rendered): the queue (search, filters, tabs, pages, bulk
review), metrics, scan, review and lifecycle actions."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from accounts.actors import Actor
from config.exceptions import ApplicationError, Conflict
from core.paging import PAGE_SIZES, CountedPaginator, page_links, page_size, querystring
from promotions import explain, scans, selectors, services
from promotions.filters import PromotionFilter
from promotions.models import LearningPromotion

ACTIONS = ("approve", "reject", "apply", "pause", "resume", "supersede")
# Actions that ask for confirmation first (they change behaviour, or close a promotion for good).
CONFIRMED = ("apply", "reject", "supersede")


TAB_LABELS = {"candidate": "Candidates"}
# What the list's links and the bulk form's way back keep: the filters, the tab, the page, its size.
KEPT = (*selectors.QUEUE_FILTERS, "status", "page", "per_page")


@staff_member_required
def promotion_list(request: HttpRequest) -> HttpResponse:
    """One status tab of the ledger under the search and filters, a page at a time, with the tabs'
    counts, the activity feed and bulk review of the candidates."""
    actor = Actor.from_request(request)
    queue = selectors.promotion_queue(actor=actor, params=request.GET)
    per_page, size_error = page_size(request.GET.get("per_page"))
    keep = {**queue.filters, "per_page": per_page if per_page != PAGE_SIZES[0] else None}
    here = {"status": queue.status, **keep}
    paginator = CountedPaginator(queue.rows, per_page, count=queue.counts[queue.status])
    pages = page_links(paginator, request.GET.get("page"), params=here)
    return render(
        request,
        "promotions/console_list.html",
        {
            "status": queue.status,
            "tabs": [
                {
                    "status": tab,
                    "label": TAB_LABELS.get(tab, tab.capitalize()),
                    "count": queue.counts[tab],
                    "url": querystring({**keep, "status": tab}),
                }
                for tab in selectors.QUEUE_TABS
            ],
            "filters": queue.filters,
            "filtering": bool(queue.filters),
            "filter_errors": [*queue.errors, *([size_error] if size_error else [])],
            "choices": {
                name: PromotionFilter.base_filters[name].extra["choices"]
                for name in ("promotion_type", "risk_level", "promotion_path")
            },
            "projects": queue.projects,
            "page_sizes": PAGE_SIZES,
            "per_page": per_page,
            "pages": pages,
            "items": selectors.promotion_lines(promotions=pages.page.object_list),
            "clear_url": querystring({"status": queue.status}),
            "back": querystring({**here, "page": pages.page.number})[1:],
            "total": sum(queue.counts.values()),
            "metrics": selectors.console_metrics(),
            "activity": selectors.promotion_feed(actor=actor),
            "scan": selectors.scan_run_latest(actor=actor),
            "schedule": selectors.scan_schedule(),
        },
    )


def _back_to_list(back: str) -> str:
    """The list as the reviewer left it (tab, filters, page), rebuilt from the known parameters only."""
    params = QueryDict(back[:2000])
    return reverse("console-promotions") + querystring({name: params.get(name, "") for name in KEPT})


@staff_member_required
@require_POST
def promotion_bulk(request: HttpRequest) -> HttpResponse:
    """Approve or reject the selected candidates with one note: all of them or, if one cannot be, none."""
    action = request.POST.get("action", "")
    try:
        done = services.promotions_review_bulk(
            actor=Actor.from_request(request),
            promotion_ids=request.POST.getlist("ids"),
            action=action,
            notes=request.POST.get("notes", "").replace("\x00", "")[:10_000],  # PostgreSQL stores no NUL
        )
        past = "approved" if action == "approve" else "rejected"
        if len(done) == 1:
            (line,) = selectors.promotion_lines(promotions=done)
            messages.success(request, f"1 promotion {past}: “{line.summary}”.")
        else:
            messages.success(request, f"{len(done)} promotions {past}.")
    except ApplicationError as exc:
        messages.error(request, exc.message)
    return redirect(_back_to_list(request.POST.get("back", "")))


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
