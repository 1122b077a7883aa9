"""The Celery application.

Production settings by default: tasks go to ``CELERY_BROKER_URL`` and a worker
(``celery -A config worker``) runs them. Under ``config.settings.local`` without a broker,
tasks run eagerly in-process (development only; production refuses it).
"""

import os

from celery import Celery
from celery.signals import worker_process_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")

app = Celery("learninglayer")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_process_init.connect
def _background_work(**_kwargs) -> None:
    """A worker process does background work: on a machine it shares with the web server, the
    requests come first (``CELERY_WORKER_NICE``, default 10; 0 keeps the priority), and its numeric
    libraries use one thread each (the process count is the worker's parallelism)."""
    nice = int(os.environ.get("CELERY_WORKER_NICE", "10"))
    if nice > 0:
        os.nice(nice)
    from threadpoolctl import threadpool_limits  # noqa: PLC0415 - only in worker processes

    threadpool_limits(limits=1)
