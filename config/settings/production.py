"""Production: the default of config/wsgi.py, config/asgi.py and config/celery.py.

Every unsafe value is refused at start-up, before a request is served: DEBUG, a missing or weak
``SECRET_KEY``, implicit ``ALLOWED_HOSTS``, SQLite (unless explicitly allowed for a trial), no
broker or eager tasks (a request would wait for the model), and a cache that is not set or that is
the broker's Redis database (an outage of one would take the other with it).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

from .base import *  # noqa: F403
from .base import CACHES, CELERY_BROKER_URL, DATABASES, DEBUG, SECRET_KEY, env


def _refuse(message: str) -> None:
    raise ImproperlyConfigured(f"config.settings.production: {message}")


if DEBUG:
    _refuse("DEBUG must be off (unset DEBUG, or set DEBUG=false).")
# What Django's deployment check asks of a key, enforced rather than warned about.
if not SECRET_KEY:
    _refuse("SECRET_KEY must be set (python -c 'import secrets; print(secrets.token_urlsafe(64))').")
if len(SECRET_KEY) < 50 or len(set(SECRET_KEY)) < 5 or SECRET_KEY.startswith("django-insecure"):
    _refuse("SECRET_KEY must be a random value of at least 50 characters.")
if not env.list("ALLOWED_HOSTS", default=[]):
    _refuse("ALLOWED_HOSTS must be set explicitly.")
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3" and not env.bool(
    "ALLOW_SQLITE_IN_PRODUCTION", default=False
):
    _refuse("DATABASE_URL must point at PostgreSQL (ALLOW_SQLITE_IN_PRODUCTION=true overrides this for a trial).")

# A broker, never eager mode: POST /api/v1/messages must not wait for the analyzer.
if not CELERY_BROKER_URL or CELERY_BROKER_URL.startswith("memory://"):
    _refuse("CELERY_BROKER_URL must name a broker (e.g. redis://127.0.0.1:6379/0); eager tasks are local/test only.")
if env.bool("CELERY_TASK_ALWAYS_EAGER", default=False):
    _refuse("CELERY_TASK_ALWAYS_EAGER is for local development and tests only.")
CELERY_TASK_ALWAYS_EAGER = False


def _redis_database(url: str) -> tuple[str, int, str] | None:
    """(host, port, database) of a Redis URL, None for anything else."""
    parts = urlsplit(url)
    if parts.scheme not in ("redis", "rediss"):
        return None
    database = parts.path.strip("/") or "0"
    return (parts.hostname or "localhost", parts.port or 6379, database)


if not env.str("CACHE_URL", default=""):
    _refuse("CACHE_URL must be set (a Redis database other than the broker's, e.g. redis://127.0.0.1:6379/1).")
_cache_database = _redis_database(str(CACHES["default"].get("LOCATION", "")))
if _cache_database is not None and _cache_database == _redis_database(CELERY_BROKER_URL):
    _refuse("CACHE_URL must not be the broker's Redis database: give the cache a database (or server) of its own.")

SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=True)
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=True)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=True)
# HSTS: start low, raise to a year (31536000) once HTTPS is known to work for every subdomain.
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=3600)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=True)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=True)
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
