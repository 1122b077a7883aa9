"""Server-rendered pages: a project's intelligence (its packet, cards, evidence and the readers' marks,
for the project's members and staff), and the console's card-review and attribution queues (staff)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.auth.decorators import login_required
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_POST

from accounts.actors import Actor
from config.exceptions import ApplicationError
from core.paging import PAGE_SIZES, CountedPaginator, page_links, page_size, querystring
from intelligence import selectors
from intelligence.models import AttributionStatus, ReviewStatus
from intelligence.services.attribution_reviews import DECISIONS as ATTRIBUTION_DECISIONS
from intelligence.services.attribution_reviews import attribution_candidate_decide
from intelligence.services.reviews import DECISIONS, review_decide

REVIEW_TABS = tuple(ReviewStatus.values)


@login_required
@ensure_csrf_cookie
def project_intelligence(request: HttpRequest, project_slug: str) -> HttpResponse:
    """The packet of a project's target by section; cards open, with evidence, from the API."""
    actor = Actor.from_request(request)
    project = selectors.project_readable(actor=actor, slug=project_slug)
    if project is None:
        raise Http404("No such project.")
    target_slug = request.GET.get("target") or None
    target = selectors.target_of_project(project=project, target_slug=target_slug)
    if target is None and target_slug:
        raise Http404("No such target.")
    return render(
        request,
        "intelligence/project.html",
        {
            "project": project,
            "target": target,
            "targets": list(selectors.targets_of_project(project=project)),
            # No target yet: nothing was compiled for this project so far.
            "view": selectors.packet_view(target=target) if target is not None else None,
            "api_base": "/api/v1/intelligence/",
        },
    )


@login_required
def project_document(request: HttpRequest, project_slug: str, document_id: str) -> HttpResponse:
    """A document's text, for the members of a project one of whose cards it backs (a source link)."""
    project = selectors.project_readable(actor=Actor.from_request(request), slug=project_slug)
    document = selectors.document_of_project(project=project, document_id=document_id) if project else None
    if document is None:
        raise Http404("No such document.")
    return render(request, "intelligence/document.html", {"project": project, "document": document})


def _queue(
    request: HttpRequest,
    *,
    tabs: Sequence[str],
    default: str,
    rows_of: Callable[[str], QuerySet],
    counts: dict[str, int],
) -> dict[str, Any]:
    """What a console queue shows: the tab asked for (an unknown one is the default, with a notice),
    each tab with its count and link, and one page of that tab's rows ("Showing 21–40 of 57") with
    the page links, which keep the tab and the page size."""
    status = request.GET.get("status") or default
    notices = []
    if status not in tabs:
        notices.append(f"There is no {status[:40]!r} tab; showing {default}. Tabs: {', '.join(tabs)}.")
        status = default
    per_page, size_error = page_size(request.GET.get("per_page"))
    if size_error:
        notices.append(size_error)
    keep = {"per_page": per_page if per_page != PAGE_SIZES[0] else None}
    paginator = CountedPaginator(rows_of(status), per_page, count=counts[status])
    pages = page_links(paginator, request.GET.get("page"), params={"status": status, **keep})
    return {
        "status": status,
        "tabs": [{"status": tab, "count": counts[tab], "url": querystring({"status": tab, **keep})} for tab in tabs],
        "pages": pages,
        "rows": list(pages.page.object_list),
        "notices": notices,
    }


@staff_member_required
def review_queue(request: HttpRequest) -> HttpResponse:
    """The card-review queue: each review with its card and evidence as text, approve or reject."""
    actor = Actor.from_request(request)
    queue = _queue(
        request,
        tabs=REVIEW_TABS,
        default=ReviewStatus.OPEN,
        rows_of=lambda status: selectors.reviews_list(actor=actor).filter(status=status),
        counts=selectors.reviews_counts(actor=actor),
    )
    return render(request, "intelligence/console_reviews.html", {**queue, "reviews": queue["rows"]})


@staff_member_required
@require_POST
def review_action(request: HttpRequest, review_id: str, decision: str) -> HttpResponse:
    if decision not in DECISIONS:
        raise Http404("No such decision.")
    try:
        review_decide(
            actor=Actor.from_request(request),
            review_id=review_id,
            decision=decision,
            notes=request.POST.get("notes", "")[:10_000],
        )
        messages.success(request, "Review approved." if decision == "approve" else "Review rejected.")
    except ApplicationError as exc:
        messages.error(request, exc.message)
    return redirect("console-intelligence-reviews")


# --- the attribution queue -----------------------------------------------------------------------

ATTRIBUTION_TABS = AttributionStatus.values
ATTRIBUTION_PAST = {"approve": "approved", "reject": "rejected", "correct": "corrected"}


def _attribution_rows(actor: Actor, status: str) -> QuerySet:
    rows = selectors.attribution_candidates(actor=actor, status=status)
    return rows if status == AttributionStatus.CANDIDATE else rows.order_by("-decided_at", "-pk")


@staff_member_required
def attribution_queue(request: HttpRequest) -> HttpResponse:
    actor = Actor.from_request(request)
    queue = _queue(
        request,
        tabs=ATTRIBUTION_TABS,
        default=AttributionStatus.CANDIDATE,
        rows_of=lambda status: _attribution_rows(actor, status),
        counts=selectors.attribution_counts(actor=actor),
    )
    return render(
        request,
        "intelligence/console_attribution.html",
        {
            **queue,
            "targets": list(selectors.attribution_queue_targets()),
            "activity": selectors.attribution_activity(),
        },
    )


@staff_member_required
@require_POST
def attribution_decide(request: HttpRequest, candidate_id: int, decision: str) -> HttpResponse:
    if decision not in ATTRIBUTION_DECISIONS:
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
        messages.success(request, f"Candidate {candidate_id} {ATTRIBUTION_PAST[decision]}.")
    except ApplicationError as exc:
        messages.error(request, exc.message)
    return redirect("console-attribution")
