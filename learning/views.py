"""Server-rendered pages: the chat demo with its preferences modal, and the full preferences page."""

from __future__ import annotations

import uuid

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie

from learning.models import PREFERENCE_CATEGORIES

PANEL = {"api_base": "/api/v1/", "categories": PREFERENCE_CATEGORIES}


@login_required
@ensure_csrf_cookie
def chat(request: HttpRequest) -> HttpResponse:
    return render(request, "learning/chat.html", {**PANEL, "session_id": f"web-{uuid.uuid4().hex[:12]}"})


@login_required
@ensure_csrf_cookie
def preferences_page(request: HttpRequest) -> HttpResponse:
    return render(request, "learning/preferences.html", PANEL)
