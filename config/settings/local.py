"""Local development and the demo (``manage.py`` and ``scripts/demo`` default to it).

DEBUG is on, the hosts are the loopback ones, and with no ``CELERY_BROKER_URL`` tasks run
eagerly, in-process, after commit, so nothing but Python is needed. The secret key comes from
``SECRET_KEY`` or, unset, from ``var/secret_key``, generated on first use: no key is in the
repository, and this one never leaves the machine it was made on.
"""

from __future__ import annotations

import os
import secrets

from .base import *  # noqa: F403
from .base import CELERY_BROKER_URL, REST_FRAMEWORK, VAR_DIR, env

DEBUG = env.bool("DEBUG", default=True)
if DEBUG:  # the browsable API, for development only
    REST_FRAMEWORK = {
        **REST_FRAMEWORK,
        "DEFAULT_RENDERER_CLASSES": [
            *REST_FRAMEWORK["DEFAULT_RENDERER_CLASSES"],
            "rest_framework.renderers.BrowsableAPIRenderer",
        ],
    }


def _local_secret_key() -> str:
    path = VAR_DIR / "secret_key"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        # Created readable by its owner only; a concurrent first start keeps whichever key won.
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(fd, "w") as handle:
                handle.write(secrets.token_urlsafe(64))
    return path.read_text().strip()


SECRET_KEY = env.str("SECRET_KEY", default="") or _local_secret_key()

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"])

# No broker: tasks run in-process after commit (the request waits for them: development only).
if not CELERY_BROKER_URL:
    CELERY_BROKER_URL = "memory://"
    CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=True)
else:
    CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)
