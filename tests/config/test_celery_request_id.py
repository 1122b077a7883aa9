"""A task carries the id of the request that queued it, and the worker's log lines name it
(config/celery.py). The real worker's lines are checked in tests/integration/test_worker.py."""

from __future__ import annotations

import logging

from celery.app.task import Context
from celery.signals import before_task_publish, task_postrun, task_prerun

import config.celery
from config import request_id


class _Task:
    def __init__(self, headers: dict) -> None:
        self.request = Context(headers)


def _published_headers() -> dict:
    headers: dict = {}
    before_task_publish.send(sender="learning.analyze_message", headers=headers, body=(), exchange="", routing_key="")
    return headers


def test_a_task_queued_while_serving_a_request_carries_its_id():
    token = request_id.bind("req-123")
    try:
        assert _published_headers() == {config.celery.REQUEST_ID_HEADER: "req-123"}
    finally:
        request_id.unbind(token)


def test_a_task_queued_outside_a_request_carries_none():
    assert _published_headers() == {}


def test_the_worker_makes_the_id_current_while_the_task_runs():
    task = _Task({config.celery.REQUEST_ID_HEADER: "req-456"})
    assert request_id.current_request_id() is None
    task_prerun.send(sender=task, task_id="t1", task=task, args=(), kwargs={})
    assert request_id.current_request_id() == "req-456"
    task_postrun.send(sender=task, task_id="t1", task=task, args=(), kwargs={}, retval=None, state="SUCCESS")
    assert request_id.current_request_id() is None


def test_an_unsafe_header_is_not_made_current():
    """Only ids the web server would have echoed are logged (no newlines or markup from a message)."""
    task = _Task({config.celery.REQUEST_ID_HEADER: "evil\nFAKE LOG LINE"})
    task_prerun.send(sender=task, task_id="t2", task=task, args=(), kwargs={})
    assert request_id.current_request_id() is None
    task_postrun.send(sender=task, task_id="t2", task=task, args=(), kwargs={}, retval=None, state="SUCCESS")


def test_an_eager_task_keeps_the_request_s_id():
    """Run in-process (no message, no header), a task logs under the request it runs in."""
    token = request_id.bind("req-789")
    try:
        task = _Task({})
        task_prerun.send(sender=task, task_id="t3", task=task, args=(), kwargs={})
        assert request_id.current_request_id() == "req-789"
        task_postrun.send(sender=task, task_id="t3", task=task, args=(), kwargs={}, retval=None, state="SUCCESS")
        assert request_id.current_request_id() == "req-789"
    finally:
        request_id.unbind(token)


def test_the_worker_s_formats_name_the_request(settings):
    logger = logging.getLogger("test.celery.request_id")
    handler = logging.StreamHandler()
    logger.addHandler(handler)
    try:
        config.celery._log_the_request_id(logger=logger)
        config.celery._log_the_request_id(logger=logger)  # set up twice: one filter
        assert sum(isinstance(f, request_id.RequestIdLogFilter) for f in handler.filters) == 1
        record = logger.makeRecord(logger.name, logging.INFO, __file__, 1, "done", (), None)
        token = request_id.bind("req-abc")
        try:
            handler.filter(record)
        finally:
            request_id.unbind(token)
        formatted = logging.Formatter(settings.CELERY_WORKER_LOG_FORMAT).format(record)
        assert "[req-abc] done" in formatted
    finally:
        logger.removeHandler(handler)
