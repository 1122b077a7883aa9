"""/healthz: is the database reachable, and the broker (or are tasks run in-process)?"""

from __future__ import annotations

import time

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse

from config.celery import app


def _check_database() -> dict:
    started = time.perf_counter()
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # noqa: BLE001 - any failure is "down", reported with its reason
        return {"status": "down", "vendor": connection.vendor, "error": str(exc)[:200]}
    return {"status": "ok", "vendor": connection.vendor, "ms": round((time.perf_counter() - started) * 1000, 2)}


def _check_broker() -> dict:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return {"status": "ok", "mode": "eager", "detail": "no broker configured; tasks run in-process"}
    started = time.perf_counter()
    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
    except Exception as exc:  # noqa: BLE001
        return {"status": "down", "mode": "broker", "error": str(exc)[:200]}
    return {"status": "ok", "mode": "broker", "ms": round((time.perf_counter() - started) * 1000, 2)}


def healthz(request: HttpRequest) -> JsonResponse:
    """200 when every dependency answers, 503 otherwise; the body says which."""
    checks = {"database": _check_database(), "broker": _check_broker()}
    healthy = all(c["status"] == "ok" for c in checks.values())
    return JsonResponse({"status": "ok" if healthy else "degraded", "checks": checks}, status=200 if healthy else 503)
