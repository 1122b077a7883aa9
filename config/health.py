"""/healthz: is the database reachable, and the broker (or are tasks run in-process)? And the cache?

Anyone may ask whether the service is healthy; only staff see the details (database vendor,
timings, error text), which would otherwise tell an anonymous caller what runs behind it.
A cache outage degrades context assembly to uncached reads, so it is reported but does not make
the service unhealthy (503); the database and the broker do.
"""

from __future__ import annotations

import time
import uuid

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest, JsonResponse

from config.celery import app

REQUIRED = ("database", "broker")


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


def _check_cache() -> dict:
    started = time.perf_counter()
    key = f"healthz:{uuid.uuid4().hex}"
    try:
        cache.set(key, 1, timeout=5)
        cache.delete(key)
    except Exception as exc:  # noqa: BLE001
        return {"status": "down", "error": str(exc)[:200]}
    return {"status": "ok", "ms": round((time.perf_counter() - started) * 1000, 2)}


def healthz(request: HttpRequest) -> JsonResponse:
    """200 when the database and the broker answer, 503 otherwise; the body says which check failed
    (and, to staff, how)."""
    checks = {"database": _check_database(), "broker": _check_broker(), "cache": _check_cache()}
    healthy = all(checks[name]["status"] == "ok" for name in REQUIRED)
    degraded = not healthy or any(c["status"] != "ok" for c in checks.values())
    if not getattr(request.user, "is_staff", False):
        checks = {name: {"status": check["status"]} for name, check in checks.items()}
    return JsonResponse({"status": "degraded" if degraded else "ok", "checks": checks}, status=200 if healthy else 503)
