"""Base settings, read from the environment.

The defaults need no external service: a SQLite file under ``var/`` and Celery tasks
run eagerly in-process. PostgreSQL (``DATABASE_URL``) and Redis (``CELERY_BROKER_URL``)
are the production path; ``config.settings.production`` refuses unsafe defaults.
"""

from __future__ import annotations

from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = BASE_DIR / "var"

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env")  # optional; real environment variables win

DEBUG = env.bool("DEBUG", default=True)

# A throwaway key is only acceptable while DEBUG is on (the developer default).
INSECURE_DEV_SECRET_KEY = "django-insecure-dev-only-key-never-use-in-production"  # noqa: S105
SECRET_KEY = env.str("SECRET_KEY", default="")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off.")
    SECRET_KEY = INSECURE_DEV_SECRET_KEY

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI assets served locally: the docs work offline
    "core",
    "accounts",
    "feedback",
    "learning",
    "retrieval",
    "promotions",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "config.middleware.CommonMiddleware",  # no slash-appending redirects under /api/
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# Database: a SQLite file by default, created on first run.
DEFAULT_SQLITE_PATH = VAR_DIR / "db.sqlite3"
DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{DEFAULT_SQLITE_PATH}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    Path(DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)
    # Concurrent readers and a writer without "database is locked" under runserver.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"transaction_mode": "IMMEDIATE", "init_command": "PRAGMA journal_mode=WAL;"}
    )
else:
    DATABASES["default"]["CONN_MAX_AGE"] = env.int("DB_CONN_MAX_AGE", default=60)
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_USER_MODEL = "accounts.User"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/chat/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = env.path("STATIC_ROOT", default=str(VAR_DIR / "static"))

# A bulk request of 1,000 events with snapshots fits; anything larger is refused (413).
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("DATA_UPLOAD_MAX_MEMORY_SIZE", default=16 * 1024 * 1024)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.authentication.ApiKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": ["config.parsers.StrictJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"]
    + (["rest_framework.renderers.BrowsableAPIRenderer"] if DEBUG else []),
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "config.schema.ApiAutoSchema",
    "EXCEPTION_HANDLER": "config.handlers.api_exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Learning layer API",
    "DESCRIPTION": (
        "A self-hosted learning layer for LLM assistants: the unified feedback event "
        "stream, preference, taste and retrieval learning, and the promotion ledger. "
        "Authenticate with `Authorization: Bearer <api key>`; service keys may act for a "
        "user named by `X-On-Behalf-Of: <external user id>`."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # PATCH bodies are validated whole (their serializers say what is required), not as partial updates.
    "COMPONENT_SPLIT_PATCH": False,
    "ENUM_NAME_OVERRIDES": {
        "TaskRatingEnum": ["good", "bad"],
        "ResponseRatingEnum": ["down", "up"],
    },
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# The cache: shared between processes in production (Redis). Unset, it is the broker's Redis
# when there is one, else per-process memory (fine for one process, e.g. runserver).
_cache_url = env.str("CACHE_URL", default="")
if not _cache_url:
    _broker = env.str("CELERY_BROKER_URL", default="")
    _cache_url = _broker if _broker.startswith(("redis://", "rediss://")) else "locmemcache://"
CACHES = {"default": env.cache_url_config(_cache_url)}
CACHES["default"].setdefault("KEY_PREFIX", "learninglayer")

# Celery: no broker configured means tasks run eagerly, in-process, after commit.
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="")
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
if not CELERY_BROKER_URL:
    CELERY_BROKER_URL = "memory://"
CELERY_TASK_DEFAULT_QUEUE = env.str("CELERY_QUEUE", default="learninglayer")
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=300)
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=240)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A request must not hang on a broker that is down: fail the publish fast.
CELERY_BROKER_CONNECTION_TIMEOUT = env.float("CELERY_BROKER_CONNECTION_TIMEOUT", default=2.0)
CELERY_BROKER_TRANSPORT_OPTIONS = {"socket_connect_timeout": 2, "socket_timeout": 5}
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.2}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}, "faiss.loader": {"level": "WARNING"}},
}

# Preference learning: the analyzer's model and the OpenAI client (shared with core's embeddings).
# The learning app's own tunables are declared in learning/conf.py.
OPENAI_API_KEY = env.str("OPENAI_API_KEY", default="")
OPENAI_BASE_URL = env.str("OPENAI_BASE_URL", default="") or None
ANALYZER_MODEL = env.str("ANALYZER_MODEL", default="gpt-4.1-nano")
ANALYZER_TIMEOUT_SECONDS = env.float("ANALYZER_TIMEOUT_SECONDS", default=10.0)
ANALYZER_MAX_RETRIES = env.int("ANALYZER_MAX_RETRIES", default=2)
EMBEDDING_BACKEND = env.str("EMBEDDING_BACKEND", default="local")  # local | openai
EMBEDDING_MODEL = env.str("EMBEDDING_MODEL", default="text-embedding-3-small")
if EMBEDDING_BACKEND not in ("local", "openai"):
    raise ImproperlyConfigured("EMBEDDING_BACKEND must be 'local' or 'openai'.")
CELERY_BEAT_SCHEDULE = {
    "preference-decay": {"task": "learning.preferences_decay", "schedule": 6 * 3600.0},
    "analysis-sweep": {"task": "learning.analyze_pending_messages", "schedule": 60.0},
    "promotion-expiry": {"task": "promotions.expire_candidates", "schedule": 3600.0},
    "retrieval-scan": {"task": "promotions.retrieval_scan", "schedule": 3600.0},
    "agent-learning-scan": {"task": "promotions.agent_learning_scan", "schedule": 3600.0},
    "task-example-scan": {"task": "promotions.task_example_scan", "schedule": 6 * 3600.0},
}

# Retrieval.
RETRIEVAL_INDEX_DIR = env.path("RETRIEVAL_INDEX_DIR", default=str(VAR_DIR / "index"))
