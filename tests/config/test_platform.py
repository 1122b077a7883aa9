"""Health, the OpenAPI schema and docs, the home page, settings guards and the demo data command."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection
from django.test import override_settings
from rest_framework.test import APIClient

from config.celery import app

ROOT = Path(__file__).resolve().parents[2]  # the repository (tests/config/ is two levels down)


def test_healthz_shows_anonymous_callers_only_the_states(db):
    response = APIClient().get("/healthz")
    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "checks": {"database": {"status": "ok"}, "broker": {"status": "ok"}, "cache": {"status": "ok"}},
    }


def test_healthz_shows_staff_the_details(world):
    response = world.session_client("admin").get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["checks"]["database"]["vendor"] == connection.vendor  # sqlite, or postgresql in the PG run
    assert body["checks"]["broker"]["mode"] == ("eager" if settings.CELERY_TASK_ALWAYS_EAGER else "broker")


@override_settings(CELERY_TASK_ALWAYS_EAGER=False)
def test_healthz_is_503_when_the_broker_is_down(world, monkeypatch):
    # Celery reads CELERY_BROKER_URL from the environment before its own settings.
    monkeypatch.setenv("CELERY_BROKER_URL", "redis://127.0.0.1:1/0")
    monkeypatch.setattr(app.conf, "broker_url", "redis://127.0.0.1:1/0")
    anonymous = APIClient().get("/healthz")
    assert anonymous.status_code == 503
    assert anonymous.json()["checks"]["broker"] == {"status": "down"}  # no error text for anyone
    staff = world.session_client("admin").get("/healthz")
    assert staff.status_code == 503
    assert "error" in staff.json()["checks"]["broker"]


def test_healthz_reports_a_cache_outage_without_failing(db, broken_cache):
    response = APIClient().get("/healthz")
    assert response.status_code == 200  # the service degrades (uncached context), it does not fail
    assert response.json() == {
        "status": "degraded",
        "checks": {"database": {"status": "ok"}, "broker": {"status": "ok"}, "cache": {"status": "down"}},
    }


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


SETTINGS_ENV = {
    "DEBUG",
    "SECRET_KEY",
    "ALLOWED_HOSTS",
    "DATABASE_URL",
    "DATABASE_JIT",
    "CELERY_BROKER_URL",
    "CACHE_URL",
    "CELERY_TASK_ALWAYS_EAGER",
    "DJANGO_SETTINGS_MODULE",
    "GUNICORN_BIND",
    "DJANGO_ALLOW_ASYNC_UNSAFE",  # set by the browser tests' fixtures; never in a deployment
}


def _run(code: str, **env: str) -> subprocess.CompletedProcess:
    """Run Python code in a fresh process, with none of the settings' variables but ``env``."""
    clean = {k: v for k, v in os.environ.items() if k not in SETTINGS_ENV}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env={**clean, **env}, capture_output=True, text=True, timeout=60
    )


def _load_settings(module: str, **env: str) -> subprocess.CompletedProcess:
    return _run(f"import {module}", **env)


GOOD_SECRET = "Zq3" + "k9Vw-" * 12  # 63 characters, not a repeated one
PRODUCTION = {
    "SECRET_KEY": GOOD_SECRET,
    "ALLOWED_HOSTS": "learning.example.com",
    "DATABASE_URL": "postgres://u@localhost/db",
    "CELERY_BROKER_URL": "redis://127.0.0.1:6379/0",
    "CACHE_URL": "redis://127.0.0.1:6379/1",
}


def _without(name: str) -> dict[str, str]:
    return {k: v for k, v in PRODUCTION.items() if k != name}


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (_without("SECRET_KEY"), "SECRET_KEY must be set"),
        ({**PRODUCTION, "SECRET_KEY": "short"}, "at least 50"),
        ({**PRODUCTION, "SECRET_KEY": "s" * 60}, "random value"),
        ({**PRODUCTION, "SECRET_KEY": "django-insecure-" + GOOD_SECRET}, "random value"),
        ({**PRODUCTION, "DEBUG": "true"}, "DEBUG must be off"),
        (_without("ALLOWED_HOSTS"), "ALLOWED_HOSTS"),
        (_without("DATABASE_URL"), "PostgreSQL"),
        (_without("CELERY_BROKER_URL"), "CELERY_BROKER_URL must name a broker"),
        ({**PRODUCTION, "CELERY_BROKER_URL": "memory://"}, "CELERY_BROKER_URL must name a broker"),
        ({**PRODUCTION, "CELERY_TASK_ALWAYS_EAGER": "true"}, "local development and tests only"),
        (_without("CACHE_URL"), "CACHE_URL must be set"),
        ({**PRODUCTION, "CACHE_URL": "redis://127.0.0.1:6379/0"}, "not be the broker's Redis database"),
        ({**PRODUCTION, "CACHE_URL": "redis://127.0.0.1:6379"}, "not be the broker's Redis database"),  # db 0 too
    ],
    ids=[
        "no-secret",
        "short-secret",
        "repeated-secret",
        "insecure-secret",
        "debug",
        "no-hosts",
        "sqlite",
        "no-broker",
        "memory-broker",
        "eager",
        "no-cache",
        "cache-is-broker-db",
        "cache-is-broker-db-implicit",
    ],
)
def test_production_settings_refuse_unsafe_values(env, message):
    result = _load_settings("config.settings.production", **env)
    assert result.returncode != 0
    assert message in result.stderr


def test_production_settings_start_when_configured():
    result = _run(
        "from config.settings import production as s\n"
        "print(s.DEBUG, s.CELERY_TASK_ALWAYS_EAGER, s.SECURE_HSTS_SECONDS)",
        **PRODUCTION,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "False", "3600"]
    # Another server, or another database on the broker's server, is a cache of its own.
    assert (
        _load_settings("config.settings.production", **{**PRODUCTION, "CACHE_URL": "redis://cache:6379/0"}).returncode
        == 0
    )


def test_the_deployment_check_is_clean_with_the_documented_environment():
    result = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "check",
            "--deploy",
            "--fail-level",
            "WARNING",
            "--settings=config.settings.production",
        ],
        cwd=ROOT,
        env={**{k: v for k, v in os.environ.items() if k not in SETTINGS_ENV}, **PRODUCTION},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_hsts_is_configurable():
    result = _run(
        "from config.settings import production as s; print(s.SECURE_HSTS_SECONDS, s.SECURE_HSTS_PRELOAD)",
        **PRODUCTION,
        SECURE_HSTS_SECONDS="31536000",
        SECURE_HSTS_PRELOAD="false",
    )
    assert result.stdout.split() == ["31536000", "False"], result.stderr


@pytest.mark.parametrize("entry", ["config.wsgi", "config.asgi", "config.celery"])
def test_the_servers_and_the_worker_default_to_production_settings(entry):
    # Started without DJANGO_SETTINGS_MODULE and without configuration, they refuse: no DEBUG, no published key.
    refused = _run(f"import {entry}; from django.conf import settings; settings.DEBUG")  # the app loads them lazily
    assert refused.returncode != 0
    assert "config.settings.production" in refused.stderr
    configured = _run(
        f"import {entry}; from django.conf import settings; print(settings.SETTINGS_MODULE, settings.DEBUG)",
        **PRODUCTION,
    )
    assert configured.returncode == 0, configured.stderr
    assert configured.stdout.split()[-2:] == ["config.settings.production", "False"]


def test_manage_py_defaults_to_local_settings_with_a_key_not_in_the_repository():
    code = (
        "import sys; sys.argv = ['manage.py', 'shell', '-c', "
        "'from django.conf import settings as s; print(s.SETTINGS_MODULE, s.DEBUG, s.CELERY_TASK_ALWAYS_EAGER, "
        's.SECRET_KEY == open("var/secret_key").read().strip())\']; import manage; manage.main()'
    )
    result = _run(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-4:] == ["config.settings.local", "True", "True", "True"]
    tracked = subprocess.run(["git", "ls-files", "var"], cwd=ROOT, capture_output=True, text=True).stdout
    assert tracked == ""  # the generated key stays on this machine


def test_base_settings_carry_no_secret():
    result = _run("from config.settings import base; print(repr(base.SECRET_KEY), base.DEBUG)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["''", "False"]


def test_gunicorn_listens_on_loopback_unless_told_otherwise():
    code = "import runpy; print(runpy.run_path('config/gunicorn.conf.py')['bind'])"
    assert _run(code).stdout.strip() == "127.0.0.1:8000"
    assert _run(code, GUNICORN_BIND="0.0.0.0:8000").stdout.strip() == "0.0.0.0:8000"


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "-c jit=off"),
        (
            {"DATABASE_URL": "postgres://u@localhost/db?options=-c%20statement_timeout%3D5000"},
            "-c statement_timeout=5000 -c jit=off",
        ),
        ({"DATABASE_JIT": "true"}, None),
        ({"DATABASE_URL": "postgres://u@localhost/db?options=-c%20jit%3Don"}, "-c jit=on"),
    ],
)
def test_postgresql_connections_start_without_jit_unless_asked(env, expected):
    """The retrieval scan's reads were compiled for longer than they ran: JIT is off by a startup
    option, added to any options the URL gives, left alone when the URL sets it or DATABASE_JIT=true."""
    result = _run(
        "from config.settings import production as s; print(s.DATABASES['default'].get('OPTIONS', {}).get('options'))",
        **{**PRODUCTION, **env},
    )
    assert result.stdout.strip() == str(expected), result.stderr
