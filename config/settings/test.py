"""Test settings: the base settings, faster hashing, tasks eager unless a test says otherwise."""

from .base import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Tests that need a real broker and worker switch this off themselves (tests/integration).
CELERY_TASK_ALWAYS_EAGER = True
LOGGING["root"]["level"] = "WARNING"  # noqa: F405
