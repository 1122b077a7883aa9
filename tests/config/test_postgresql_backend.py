"""config.postgresql: the health check asks the server only when there is a reason to doubt the
connection, and a connection the server ended is still replaced before a request uses it."""

from __future__ import annotations

import time

import psycopg
import pytest
from django.db import connection, connections

from config.postgresql import base as backend

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="the PostgreSQL backend")


@pytest.fixture
def wrapper(db):
    """A connection of its own (outside the test's transaction), with health checks on."""
    conn = connections.create_connection("default")
    assert isinstance(conn, backend.DatabaseWrapper)
    conn.settings_dict["CONN_HEALTH_CHECKS"] = True
    conn.settings_dict["CONN_MAX_AGE"] = 60
    yield conn
    conn.close()


def request(conn) -> int:
    """What Django does around one request that runs one query: the backend's process id."""
    conn.close_if_unusable_or_obsolete()  # request_started
    with conn.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()
    conn.close_if_unusable_or_obsolete()  # request_finished
    return pid


@pytest.fixture
def pings(wrapper, monkeypatch) -> list[bool]:
    """The results of every SELECT 1 health check the wrapper runs."""
    results: list[bool] = []
    real = wrapper.is_usable

    def is_usable() -> bool:
        results.append(real())
        return results[-1]

    monkeypatch.setattr(wrapper, "is_usable", is_usable)
    return results


def test_a_connection_in_steady_use_is_kept_without_a_ping(wrapper, pings):
    first = request(wrapper)
    assert [request(wrapper) for _ in range(3)] == [first] * 3
    assert pings == []


def test_a_connection_idle_for_longer_is_pinged(wrapper, pings):
    first = request(wrapper)
    wrapper.idle_since -= backend.PING_AFTER_IDLE_SECONDS + 1
    assert request(wrapper) == first
    assert pings == [True]
    assert request(wrapper) == first  # used again just now: no ping
    assert pings == [True]


def test_a_connection_the_server_ended_is_replaced_before_the_request_uses_it(wrapper, pings):
    first = request(wrapper)
    with psycopg.connect(**_params(wrapper)) as other:
        assert other.execute("SELECT pg_terminate_backend(%s)", [first]).fetchone()[0] is True
    deadline = time.monotonic() + 5
    while not backend._readable(wrapper.connection.pgconn.socket) and time.monotonic() < deadline:
        time.sleep(0.01)

    second = request(wrapper)  # no error: the check found the connection dead and reconnected
    assert second != first
    assert pings == [False]


def test_a_connection_in_a_failed_transaction_is_pinged_and_replaced(wrapper, pings):
    first = request(wrapper)
    wrapper.connection.autocommit = False  # behind Django's back, as a leaked transaction would be
    with pytest.raises(psycopg.errors.DivisionByZero):
        wrapper.connection.execute("SELECT 1 / 0")
    assert wrapper.connection.pgconn.transaction_status == psycopg.pq.TransactionStatus.INERROR

    assert request(wrapper) != first
    assert pings == [False]


def _params(conn) -> dict:
    """psycopg's connection arguments for the wrapper's database, without Django's own additions."""
    params = conn.get_connection_params()
    return {key: params[key] for key in ("dbname", "user", "password", "host", "port") if params.get(key)}


def test_connections_run_without_jit(db):
    """The settings' startup option reaches the server (config/settings/base.py says why)."""
    with connection.cursor() as cursor:
        cursor.execute("SHOW jit")
        assert cursor.fetchone()[0] == "off"
