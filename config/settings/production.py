"""Production settings: the base settings, with every unsafe default refused at start-up."""

import os

from django.core.exceptions import ImproperlyConfigured

# Production is never in debug mode by default; the base settings read this at import.
os.environ.setdefault("DEBUG", "false")

from . import base
from .base import *  # noqa: F403

env = base.env

if base.DEBUG:
    raise ImproperlyConfigured("DEBUG must be off in production (set DEBUG=false or leave it unset).")
if base.SECRET_KEY == base.INSECURE_DEV_SECRET_KEY or len(base.SECRET_KEY) < 50:
    raise ImproperlyConfigured("SECRET_KEY must be set to a random value of at least 50 characters.")
if not env.list("ALLOWED_HOSTS", default=[]):
    raise ImproperlyConfigured("ALLOWED_HOSTS must be set explicitly in production.")
if base.DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3" and not env.bool(
    "ALLOW_SQLITE_IN_PRODUCTION", default=False
):
    raise ImproperlyConfigured(
        "DATABASE_URL must point at PostgreSQL in production "
        "(ALLOW_SQLITE_IN_PRODUCTION=true overrides this for a single-node trial)."
    )

SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=True)
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=True)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=True)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0)
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
