"""Test settings: the base settings, faster hashing, tasks eager unless a test says otherwise."""

import os
import secrets
import tempfile

os.environ.setdefault("LOG_LEVEL", "WARNING")

from .base import *  # noqa: F403
from .base import CELERY_BROKER_URL

DEBUG = False
# A new key for each test run: nothing signed in a test outlives it.
SECRET_KEY = secrets.token_urlsafe(64)
ALLOWED_HOSTS = ["localhost", "127.0.0.1", "[::1]", "testserver"]
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Tests that need a real broker and worker switch this off themselves (tests/integration).
CELERY_TASK_ALWAYS_EAGER = True
CELERY_BROKER_URL = CELERY_BROKER_URL or "memory://"
# One process, and a clean cache per test (tests/conftest.py clears it).
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "KEY_PREFIX": "test"}}

# Each test asks the fake model server afresh; tests of the breaker turn it on.
ANALYZER_BREAKER_SECONDS = 0.0
RETRIEVAL_INDEX_DIR = tempfile.mkdtemp(prefix="learninglayer-index-")
# Each test run fits the analyzer itself (the store's own tests give it a directory).
ANALYZER_CACHE_DIR = ""

# Rate limits far above what any test sends; the throttle tests lower them with override_settings.
THROTTLE_SERVICE_KEY_REQUESTS = 1_000_000
THROTTLE_USER_KEY_REQUESTS = 1_000_000
THROTTLE_USER_REQUESTS = 1_000_000
THROTTLE_ANON_REQUESTS = 1_000_000
THROTTLE_AUTH_FAILURES = 1_000_000
# No exploration unless a test turns it on: results stay in score order.
RETRIEVAL_EXPLORE_SHARE = 0.0
