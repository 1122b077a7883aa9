"""Health, the OpenAPI schema and docs, the home page, settings guards and the demo data command."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import override_settings
from rest_framework.test import APIClient

from accounts.models import ApiKey, User
from config.celery import app
from feedback.models import FeedbackEvent, TaskFeedback
from learning.models import LearnedWorkflow, Preference

ROOT = Path(__file__).resolve().parents[2]  # the repository (tests/config/ is two levels down)


def test_healthz_reports_database_and_eager_broker(db):
    response = APIClient().get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["checks"]["database"]["status"] == "ok"
    assert body["checks"]["broker"]["mode"] == "eager"


@override_settings(CELERY_TASK_ALWAYS_EAGER=False)
def test_healthz_is_503_when_the_broker_is_down(db, monkeypatch):
    # Celery reads CELERY_BROKER_URL from the environment before its own settings.
    monkeypatch.setenv("CELERY_BROKER_URL", "redis://127.0.0.1:1/0")
    monkeypatch.setattr(app.conf, "broker_url", "redis://127.0.0.1:1/0")
    response = APIClient().get("/healthz")
    assert response.status_code == 503
    assert response.json()["checks"]["broker"]["status"] == "down"


def test_schema_is_generated_without_warnings(db):
    out, err = io.StringIO(), io.StringIO()
    call_command("spectacular", "--validate", "--fail-on-warn", stdout=out, stderr=err)
    schema = out.getvalue()
    for path in ("/api/v1/feedback/events", "/api/v1/feedback/events/bulk", "/api/v1/feedback/tasks"):
        assert path in schema


def test_schema_and_docs_are_served(db):
    client = APIClient()
    assert client.get("/api/schema/").status_code == 200
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    assert b"swagger" in docs.content.lower()
    assert b"cdn.jsdelivr" not in docs.content  # assets are served locally


def test_home_page(db):
    response = APIClient().get("/")
    assert response.status_code == 200
    assert b"/api/docs/" in response.content


def test_admin_shows_events_read_only(world):
    client = world.session_client("admin")
    assert client.get("/admin/feedback/feedbackevent/").status_code == 200
    assert client.get("/admin/feedback/feedbackevent/add/").status_code == 403
    assert client.get("/admin/accounts/apikey/").status_code == 200


def test_seed_demo_is_repeatable(db):
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    events = FeedbackEvent.objects.count()
    call_command("seed_demo", stdout=out)
    assert User.objects.filter(username__in=["admin", "alice", "bob"]).count() == 3
    assert FeedbackEvent.objects.count() == events > 26  # 24 events, 2 task ratings, the analysis: not doubled
    alice = User.objects.get(username="alice")
    assert Preference.objects.filter(user=alice, axis="length:short").exists()
    assert LearnedWorkflow.objects.filter(user=alice).count() == 1
    assert TaskFeedback.objects.count() == 2
    assert ApiKey.objects.filter(name="demo", revoked_at__isnull=True).count() == 2
    assert "Service key llk_" in out.getvalue()


def _load_settings(module: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "DATABASE_URL"}}
    return subprocess.run(
        [sys.executable, "-c", f"import {module}"],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


GOOD_SECRET = "s" * 60


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({}, "SECRET_KEY must be set"),
        ({"SECRET_KEY": "short"}, "at least 50"),
        ({"SECRET_KEY": GOOD_SECRET, "DEBUG": "true"}, "DEBUG must be off"),
        ({"SECRET_KEY": GOOD_SECRET}, "ALLOWED_HOSTS"),
        ({"SECRET_KEY": GOOD_SECRET, "ALLOWED_HOSTS": "example.com"}, "PostgreSQL"),
    ],
)
def test_production_settings_refuse_unsafe_defaults(env, message):
    result = _load_settings("config.settings.production", **env)
    assert result.returncode != 0
    assert message in result.stderr


def test_production_settings_start_when_configured():
    result = _load_settings(
        "config.settings.production",
        SECRET_KEY=GOOD_SECRET,
        ALLOWED_HOSTS="example.com",
        DATABASE_URL="postgres://u@localhost/db",
    )
    assert result.returncode == 0, result.stderr


def test_base_settings_refuse_debug_off_without_a_secret():
    result = _load_settings("config.settings.base", DEBUG="false")
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr
