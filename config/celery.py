"""The Celery application.

Production settings by default: tasks go to ``CELERY_BROKER_URL`` and a worker
(``celery -A config worker``) runs them. Under ``config.settings.local`` without a broker,
tasks run eagerly in-process (development only; production refuses it).
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")

app = Celery("learninglayer")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
