"""Settings shared by every environment, read from the environment (as cookiecutter-django does).

Not used on its own: ``config.settings.local`` (development and the demo: DEBUG, no service
needed), ``config.settings.test`` (the test suite) and ``config.settings.production`` (the
default of wsgi, asgi and the Celery app, refusing unsafe values) build on it. Nothing here
is a secret: ``SECRET_KEY`` has no default in this module.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = BASE_DIR / "var"

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env")  # optional; real environment variables win

DEBUG = env.bool("DEBUG", default=False)

# No default: local and test settings supply one of their own, production requires it.
SECRET_KEY = env.str("SECRET_KEY", default="")

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=[])
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
    "intelligence",
    "promotions",
]

MIDDLEWARE = [
    "config.middleware.RequestIdMiddleware",  # first: every response carries X-Request-ID
    "config.middleware.ApiAliasMiddleware",  # /api/pdb/v1/reggie/ answers name their /api/v1/ path
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "config.middleware.CommonMiddleware",  # no slash-appending redirects under /api/
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "accounts.middleware.FirstWriteCreatesUserMiddleware",
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
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        # Django's backend, whose health check asks the server only when there is a reason to (see it).
        DATABASES["default"]["ENGINE"] = "config.postgresql"
        # PostgreSQL compiles (JIT) any statement its planner prices above jit_above_cost. It prices
        # the retrieval scan's reads by trace id far above what they read (62,635 rows estimated for
        # 10,000): 77 ms of compiling for a 13 ms statement, 0.30 s -> 0.035 s a read off (10M trace
        # rows). Nothing here runs long enough to repay compiling, so it is off on the connection
        # (a startup option: no round trip) unless DATABASE_JIT=true.
        if not env.bool("DATABASE_JIT", default=False):
            options = DATABASES["default"].setdefault("OPTIONS", {})
            if "jit" not in options.get("options", ""):
                options["options"] = f"{options.get('options', '')} -c jit=off".strip()
# Observations (an observed message, a search trace) commit without waiting for the disk on PostgreSQL
# (core.db.commit_without_waiting_for_disk): a database crash may lose the last 0.6 s of them.
OBSERVATIONS_ASYNC_COMMIT = env.bool("OBSERVATIONS_ASYNC_COMMIT", default=True)
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
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "config.schema.ApiAutoSchema",
    "EXCEPTION_HANDLER": "config.handlers.api_exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Learning layer API",
    "DESCRIPTION": """A self-hosted learning layer for LLM assistants: the unified feedback event stream,
preference, taste and retrieval learning, the promotion ledger and project intelligence.

**Authenticate** with `Authorization: Bearer <api key>` ("Authorize" above). A *service* key (the
assistant's backend) acts as itself, or for a user named by `X-On-Behalf-Of: <external user id>` with
exactly that user's rights; operations about a user's own data (messages, context, preferences...)
require it with a service key.

**Paths** are all under `/api/v1/` and never end with a slash: `/api/v1/promotions/` is a 404 whose
message names `/api/v1/promotions` (never a redirect, which would drop a POST's body in many clients).
The source design's `/api/pdb/v1/reggie/` still serves the preference management routes for existing
clients; it is an alias of the same routes here, not documented separately, and its answers carry
`Deprecation: true` and `Link: </api/v1/...>; rel="successor-version"`.

**Creates** answer 201 with the new resource. A retry with the same `Idempotency-Key` (or the body's
`idempotency_key`/`client_message_id`) answers 200 with the original and `Idempotent-Replayed: true`.

**Errors** always have one shape, `{"error": {"code", "message", "fields", "request_id"}}`: `fields`
names each offending field, parameter or header (a value outside an enumeration lists the accepted
ones), and `request_id` is the request's `X-Request-ID` header, which every response carries (send your
own to correlate). Quote it to support: it is in every log line of that request.""",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # PATCH bodies are validated whole (their serializers say what is required), not as partial updates.
    "COMPONENT_SPLIT_PATCH": False,
    # Operation ids and tags are read after /api/v1/ (config/schema.py tags by resource).
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    "PREPROCESSING_HOOKS": ["config.schema.exclude_alias_paths"],
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "config.schema.describe_tags"],
    "ENUM_NAME_OVERRIDES": {
        "TaskRatingEnum": ["good", "bad"],
        "ResponseRatingEnum": ["down", "up"],
    },
    "SWAGGER_UI_SETTINGS": {
        "deepLinking": True,
        "filter": True,  # a box that narrows the operations by tag
        "displayRequestDuration": True,
        "defaultModelsExpandDepth": 0,
    },
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# The cache behind context assembly: per-process memory unless CACHE_URL names a shared one (Redis in
# production, a database of its own: never the broker's). An outage of it degrades context to uncached
# reads (learning/context/cache.py), so a Redis cache fails fast instead of hanging the request.
CACHE_URL = env.str("CACHE_URL", default="locmemcache://")
CACHES = {"default": env.cache_url_config(CACHE_URL)}
CACHES["default"].setdefault("KEY_PREFIX", "learninglayer")
if CACHES["default"]["BACKEND"] == "django.core.cache.backends.redis.RedisCache":
    CACHES["default"].setdefault("OPTIONS", {}).update(
        {
            "socket_connect_timeout": env.float("CACHE_CONNECT_TIMEOUT", default=0.5),
            "socket_timeout": env.float("CACHE_TIMEOUT", default=0.5),
            # After a failure the server is not asked again for this long (core/cache.py).
            "breaker_seconds": env.float("CACHE_BREAKER_SECONDS", default=5.0),
        }
    )

# Celery: the broker comes from the environment. Eager mode (tasks run in-process, in the request)
# is for local development and tests only: config.settings.local turns it on when no broker is set,
# config.settings.production refuses it.
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="")
CELERY_TASK_ALWAYS_EAGER = False
CELERY_TASK_EAGER_PROPAGATES = True
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
# Celery's formats with the id of the request that queued the task (config/celery.py).
CELERY_WORKER_LOG_FORMAT = "[%(asctime)s: %(levelname)s/%(processName)s] [%(request_id)s] %(message)s"
CELERY_WORKER_TASK_LOG_FORMAT = (
    "[%(asctime)s: %(levelname)s/%(processName)s] [%(request_id)s] %(task_name)s[%(task_id)s]: %(message)s"
)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # Each record names the request it was written for (its X-Request-ID; "-" outside a request).
    "filters": {"request_id": {"()": "config.request_id.RequestIdLogFilter"}},
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s [%(request_id)s] %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["request_id"]}},
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
# After a failed call the model server is not asked again for this long (the local analyzer answers).
ANALYZER_BREAKER_SECONDS = env.float("ANALYZER_BREAKER_SECONDS", default=30.0)
EMBEDDING_BACKEND = env.str("EMBEDDING_BACKEND", default="local")  # local | openai
EMBEDDING_MODEL = env.str("EMBEDDING_MODEL", default="text-embedding-3-small")
if EMBEDDING_BACKEND not in ("local", "openai"):
    raise ImproperlyConfigured("EMBEDDING_BACKEND must be 'local' or 'openai'.")
# The local model's arithmetic (core/embeddings.py): auto = bfloat16 where the CPU has it natively.
EMBEDDING_PRECISION = env.str("EMBEDDING_PRECISION", default="auto")
if EMBEDDING_PRECISION not in ("auto", "float32", "bfloat16"):
    raise ImproperlyConfigured("EMBEDDING_PRECISION must be 'auto', 'float32' or 'bfloat16'.")
# Calls with at most this many texts run on ONNX Runtime (core/embeddings.py); 0 turns it off; auto: one text
# where torch runs in bfloat16, every call where it runs in float32.
EMBEDDING_ONNX_MAX_TEXTS = env.str("EMBEDDING_ONNX_MAX_TEXTS", default="auto")
if EMBEDDING_ONNX_MAX_TEXTS != "auto" and not EMBEDDING_ONNX_MAX_TEXTS.isdigit():
    raise ImproperlyConfigured("EMBEDDING_ONNX_MAX_TEXTS must be 'auto' or a number of texts (0: off).")
CELERY_BEAT_SCHEDULE = {
    "preference-decay": {"task": "learning.preferences_decay", "schedule": 6 * 3600.0},
    "analysis-sweep": {"task": "learning.analyze_pending_messages", "schedule": 60.0},
    "undo-purge": {"task": "learning.undo_purge", "schedule": 300.0},
    "promotion-expiry": {"task": "promotions.expire_candidates", "schedule": 3600.0},
    "retrieval-scan": {"task": "promotions.retrieval_scan", "schedule": 3600.0},
    "agent-learning-scan": {"task": "promotions.agent_learning_scan", "schedule": 3600.0},
    "task-example-scan": {"task": "promotions.task_example_scan", "schedule": 6 * 3600.0},
    "intelligence-jobs-sweep": {"task": "intelligence.jobs_sweep", "schedule": 120.0},
}

# Retrieval.
RETRIEVAL_INDEX_DIR = env.path("RETRIEVAL_INDEX_DIR", default=str(VAR_DIR / "index"))
# The local analyzer's fitted models, kept for the next process (learning/analyzer/store.py); empty: off.
ANALYZER_CACHE_DIR = env.str("ANALYZER_CACHE_DIR", default=str(VAR_DIR / "analyzer"))
# The embedding model exported for ONNX Runtime, once per machine (core/embeddings.py); empty: not used.
EMBEDDING_ONNX_DIR = env.str("EMBEDDING_ONNX_DIR", default=str(VAR_DIR / "onnx"))

# --- Rate limits and login lockout (issue 11; owned by accounts/throttling.py) ---------------------
# API: DRF throttles per API key, per user and per anonymous address, counted in the shared cache;
# their budgets are tunables (accounts/conf.py: THROTTLE_*, from settings or the environment).
REST_FRAMEWORK["DEFAULT_THROTTLE_CLASSES"] = ["accounts.throttling.ApiRateThrottle"]
# Proxies in front of the service whose X-Forwarded-For is trusted (0: none, REMOTE_ADDR is the
# client). The per-address limits and the login lockout read the client's address by this rule.
REST_FRAMEWORK["NUM_PROXIES"] = env.int("NUM_PROXIES", default=0)
# Password sign-in (the demo login page, the admin, the browsable API's login): django-axes locks a
# username from an address after AXES_FAILURE_LIMIT failures, for AXES_COOLOFF_MINUTES; an admin
# lifts it sooner in the admin (Axes › Access attempts) or with `manage.py axes_reset`.
INSTALLED_APPS += ["axes"]
MIDDLEWARE += ["axes.middleware.AxesMiddleware"]  # last, as axes requires
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env.int("AXES_FAILURE_LIMIT", default=10)
AXES_COOLOFF_TIME = timedelta(minutes=env.int("AXES_COOLOFF_MINUTES", default=60))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_CLIENT_IP_CALLABLE = "accounts.throttling.client_ip"
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
# Throttles and key lookups hit the cache on every API request: with Redis, use the backend that
# reuses its Redis clients (core/cache.py) instead of building one per operation.
for _cache in CACHES.values():
    if _cache.get("BACKEND") == "django.core.cache.backends.redis.RedisCache":
        _cache["BACKEND"] = "core.cache.RedisCache"
# --- end of rate limits and login lockout ------------------------------------------------------------
