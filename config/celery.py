"""The Celery application.

Production settings by default: tasks go to ``CELERY_BROKER_URL`` and a worker
(``celery -A config worker``) runs them. Under ``config.settings.local`` without a broker,
tasks run eagerly in-process (development only; production refuses it).

A broker outage: the worker retries its connection (``broker_connection_max_retries``, with
kombu's back-off of 2, 4, 6, ... up to 30 s between attempts) and, once connected again, asks for
the analysis sweep at once (:class:`SweepOnConnect`): a Redis broker that restarts without
persistence has lost every task queued before it went down, and the messages stored during the
outage had none (their enqueue failed, or a lost task's coalescing mark held it back), so without
it they would wait for beat's next sweep.

A task queued while a request was served carries that request's id (``X-Request-ID``) in a message
header; the worker makes it current while the task runs, so the task's log lines (and Celery's own
"succeeded"/"failed" lines for it) name the request that caused them, as the web server's do.
"""

import logging
import os
from typing import Any

from celery import Celery, bootsteps
from celery.signals import (
    after_setup_logger,
    after_setup_task_logger,
    before_task_publish,
    task_postrun,
    task_prerun,
    worker_process_init,
)
from kombu.transport import redis as kombu_redis
from kombu.transport import virtual

from config import request_id

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")

logger = logging.getLogger(__name__)

app = Celery("learninglayer")
app.config_from_object("django.conf:settings", namespace="CELERY")
# On a lost connection a running analysis finishes: its writes go to PostgreSQL, and a redelivery
# of its task is a no-op (the messages are analysed). Cancelling it would keep its claim held for
# ANALYSIS_CLAIM_SECONDS. Explicit: Celery 6 turns it on by default (5 warns of it at every connection loss).
app.conf.worker_cancel_long_running_tasks_on_connection_loss = False
app.autodiscover_tasks()

# The sweep a worker asks for when it (re)connects: every message still waiting, whatever its age.
SWEEP_TASK = "learning.analyze_pending_messages"


class SweepOnConnect(bootsteps.StartStopStep):
    """A consumer step: it starts whenever the worker's connection to the broker does, at start-up
    and after every reconnection, and queues the analysis sweep (learning.analyze_pending_messages
    with ``older_than_seconds=0``). Claims keep it from analysing anything twice."""

    requires = ("celery.worker.consumer.tasks:Tasks",)

    def start(self, c) -> None:
        try:
            c.app.send_task(SWEEP_TASK, kwargs={"older_than_seconds": 0})
        except Exception:  # the broker went again: the next connection (or beat) sweeps
            logger.warning("could not queue the analysis sweep after connecting to the broker", exc_info=True)


app.steps["consumer"].add(SweepOnConnect)

_redis_ack = kombu_redis.QoS.ack


def _ack_frees_the_prefetch_slot(self: Any, delivery_tag: Any) -> None:
    """kombu's Redis ``QoS.ack`` drops the message from the broker's unacked index, then frees the
    consumer's prefetch slot; when the broker call fails (a Redis that stalls past ``socket_timeout``
    while the consumer's own connection survives, so no reconnection follows), the slot is never
    freed, and at ``CELERY_WORKER_PREFETCH_MULTIPLIER`` 1 the worker stops taking tasks for good
    (bench/outage.py --how pause: "Couldn't ack", then nothing analysed). The slot is freed either
    way; the message left in the unacked index is redelivered after the visibility timeout, which
    analyses nothing twice (a delivery of an analysed message is a no-op). The error still reaches
    Celery, which logs it."""
    try:
        _redis_ack(self, delivery_tag)
    except Exception:
        virtual.QoS.ack(self, delivery_tag)
        raise


kombu_redis.QoS.ack = _ack_frees_the_prefetch_slot  # type: ignore[method-assign]


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


# The message header that carries the id of the request that queued a task.
REQUEST_ID_HEADER = "request_id"


@before_task_publish.connect
def _send_the_request_id(headers: dict | None = None, **_kwargs) -> None:
    current = request_id.current_request_id()
    if current is not None and headers is not None:
        headers.setdefault(REQUEST_ID_HEADER, current)


@task_prerun.connect
def _bind_the_request_id(task: Any = None, **_kwargs) -> None:
    """Runs in the worker before the task. Eagerly run tasks have no header and keep the id already
    current (the request's own)."""
    sent = task.request.get(REQUEST_ID_HEADER) if task is not None else None
    if isinstance(sent, str) and request_id.request_id_from(sent) == sent:
        task.request.request_id_token = request_id.bind(sent)


@task_postrun.connect
def _unbind_the_request_id(task: Any = None, **_kwargs) -> None:
    token = task.request.get("request_id_token") if task is not None else None
    if token is not None:
        request_id.unbind(token)
        task.request.request_id_token = None


@after_setup_logger.connect
@after_setup_task_logger.connect
def _log_the_request_id(logger: logging.Logger, **_kwargs) -> None:
    """The worker's handlers get the filter that ``CELERY_WORKER_LOG_FORMAT`` and
    ``CELERY_WORKER_TASK_LOG_FORMAT``'s ``%(request_id)s`` need ("-" outside a request's task)."""
    for handler in logger.handlers:
        if not any(isinstance(f, request_id.RequestIdLogFilter) for f in handler.filters):
            handler.addFilter(request_id.RequestIdLogFilter())
