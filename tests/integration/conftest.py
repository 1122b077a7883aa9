"""Real services: PostgreSQL, a Redis broker and a Celery worker process.

Locally these tests skip when a service is missing. With ``REQUIRE_SERVICES=1`` (set by
``scripts/test`` in CI) a missing service is a failure, never a skip.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest
import redis
from django.db import connection

from config.celery import app

ROOT = Path(__file__).resolve().parents[2]
REQUIRED = os.environ.get("REQUIRE_SERVICES") == "1"


def need(ok: bool, what: str) -> None:
    if ok:
        return
    if REQUIRED:
        pytest.fail(f"{what} is required (REQUIRE_SERVICES=1) but not available")
    pytest.skip(f"{what} not available")


def _redis_up(url: str) -> bool:
    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=2).ping())
    except redis.RedisError:
        return False


@pytest.fixture(scope="session")
def broker_url() -> str:
    url = os.environ.get("CELERY_BROKER_URL", "")
    need(url.startswith("redis://"), "a Redis broker (CELERY_BROKER_URL=redis://...)")
    need(_redis_up(url), f"the Redis broker at {url}")
    return url


@pytest.fixture(scope="session")
def postgres(django_db_setup, django_db_blocker) -> dict:
    need(connection.vendor == "postgresql", "PostgreSQL (DATABASE_URL=postgres://...)")
    return dict(connection.settings_dict)


def _database_url(settings_dict: dict) -> str:
    user = quote(settings_dict.get("USER") or "")
    password = settings_dict.get("PASSWORD") or ""
    auth = f"{user}:{quote(password)}@" if password else (f"{user}@" if user else "")
    host = settings_dict.get("HOST") or "127.0.0.1"
    port = settings_dict.get("PORT") or 5432
    return f"postgres://{auth}{host}:{port}/{settings_dict['NAME']}"


@pytest.fixture(scope="session")
def celery_worker(postgres, broker_url):
    """A real ``celery worker`` process on the test database, consuming a queue of its own."""
    queue = f"test-{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        # The production settings, as a deployed worker runs them (a cache of its own: one process).
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "SECRET_KEY": secrets.token_urlsafe(64),
        "ALLOWED_HOSTS": "localhost",
        "CACHE_URL": "locmemcache://",
        "DATABASE_URL": _database_url(postgres),
        "CELERY_BROKER_URL": broker_url,
        "CELERY_QUEUE": queue,
    }
    log_path = ROOT / "var" / f"celery-{queue}.log"
    log_path.parent.mkdir(exist_ok=True)
    log = log_path.open("w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "-P",
            "solo",
            "-Q",
            queue,
            "-n",
            f"{queue}@%h",
            "--without-gossip",
            "--without-mingle",
            "-l",
            "info",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if process.poll() is not None:
                pytest.fail(f"the celery worker exited with {process.returncode}:\n{log_path.read_text()[-3000:]}")
            if app.control.ping(destination=[f"{queue}@{os.uname().nodename}"], timeout=1):
                break
        else:
            pytest.fail(f"the celery worker did not answer within 60 s:\n{log_path.read_text()[-3000:]}")
        yield {"queue": queue, "log": log_path}
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


@pytest.fixture
def real_broker(celery_worker, settings):
    """Send tasks to the real broker (not eagerly), on the worker's queue, for one test."""
    # Read the app's configuration before the setting changes: it is loaded lazily from the settings,
    # and read afterwards it would save "not eager" for every later test of the session.
    saved = (app.conf.task_always_eager, app.conf.task_default_queue)
    settings.CELERY_TASK_ALWAYS_EAGER = False
    app.conf.task_always_eager = False
    app.conf.task_default_queue = celery_worker["queue"]
    try:
        yield celery_worker
    finally:
        app.conf.task_always_eager, app.conf.task_default_queue = saved
