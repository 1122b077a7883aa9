"""What the worker does when its Redis broker goes away or stalls (config/celery.py)."""

from __future__ import annotations

from contextlib import contextmanager
from types import SimpleNamespace

import pytest
import redis
from kombu.transport import redis as kombu_redis
from kombu.transport import virtual

import config.celery  # noqa: F401 - applies the QoS fix


class _StalledBroker:
    """The channel of a Redis that does not answer: every pipeline times out."""

    do_restore = False
    unacked_key, unacked_index_key = "unacked", "unacked_index"

    @contextmanager
    def conn_or_acquire(self, client=None):
        yield self

    def pipeline(self):
        return self

    def zrem(self, *args):
        return self

    def hdel(self, *args):
        return self

    def execute(self):
        raise redis.TimeoutError("Timeout reading from socket")


def test_a_failed_ack_still_frees_the_prefetch_slot():
    """With one prefetch slot, a leaked slot would stop the worker taking tasks for good."""
    qos = kombu_redis.QoS(_StalledBroker(), prefetch_count=1)
    message = SimpleNamespace(delivery_info={"exchange": "", "routing_key": "q"})
    virtual.QoS.append(qos, message, "tag-1")
    assert not qos.can_consume()  # the slot is taken until the task is acknowledged
    with pytest.raises(redis.TimeoutError):  # Celery logs it ("Couldn't ack")
        qos.ack("tag-1")
    assert qos.can_consume()
