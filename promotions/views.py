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
from config.exceptions import ApplicationError
from core.paging import PAGE_SIZES, CountedPaginator, page_links, page_size, querystring
from promotions import scans, selectors, services
from promotions.filters import PromotionFilter
from promotions.previews import retrieval_weight_preview

ACTIONS = ("approve", "reject", "apply", "pause", "resume", "supersede")


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
