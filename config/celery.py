"""The Celery application.

With no ``CELERY_BROKER_URL`` set, tasks run eagerly in-process (see settings), so the
default configuration needs no broker. With it set, tasks go to that broker and a
worker (``celery -A config worker``) runs them.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")

app = Celery("learninglayer")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
