"""The learning dashboard page (staff only, server-rendered SVG): /console/dashboard/."""

from __future__ import annotations

from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from accounts.actors import Actor
from promotions import dashboard
from promotions.charts import dashboard_charts


@staff_member_required
def learning_dashboard(request: HttpRequest) -> HttpResponse:
    window, notice = dashboard.dashboard_window(value=request.GET.get("window"))
    figures = dashboard.dashboard_figures(actor=Actor.from_request(request), window=window)
    return render(
        request,
        "promotions/dashboard.html",
        {
            "window": window,
            "windows": dashboard.WINDOWS,
            "notice": notice,
            "charts": dashboard_charts(figures),
            "time_zone": timezone.get_current_timezone_name(),
        },
    )
