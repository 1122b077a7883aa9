"""Django's PostgreSQL backend, with a connection health check that costs no round trip while the
connection is in steady use.

With ``CONN_HEALTH_CHECKS`` Django sends ``SELECT 1`` before the first query of every request that
reuses a persistent connection: on the single-event ingest path, one of its two statements. This
backend asks the server only when there is a reason to doubt the connection:

- libpq says it is not OK, or it is in a failed or unknown transaction state;
- the server sent something while the connection sat idle between requests. An idle connection
  is not spoken to, so this is almost always the server ending it (a restart, a failover,
  ``pg_terminate_backend``, ``idle_session_timeout``: each sends a FATAL error, then closes), and
  otherwise a notice that the ping reads and the connection survives;
- the connection was idle for more than ``PING_AFTER_IDLE_SECONDS`` (pgxpool's rule): a link
  that broke silently (a firewall or NAT dropping an idle flow) shows nothing locally.

In each of those cases it runs Django's own check (``SELECT 1``, closing the connection if that
fails, so the request opens a new one). The one case it trusts without asking, a connection used
within the last second whose socket is quiet, is one that a ping would not save either: a link
that dropped silently in that second makes ``SELECT 1`` wait for the TCP timeout just as the
request's own query does. After a request that raised a database error Django still checks with
``SELECT 1`` (``close_if_unusable_or_obsolete``), and ``CONN_MAX_AGE`` still retires connections.
"""

from __future__ import annotations

import select
import time
from typing import Any

import psycopg
from django.db.backends.postgresql import base
from psycopg import pq

PING_AFTER_IDLE_SECONDS = 1.0
_USABLE_STATES = (pq.TransactionStatus.IDLE, pq.TransactionStatus.INTRANS)


def _readable(fd: int) -> bool:
    """Has the peer sent anything (data, or the end of the stream) that nobody has read yet?"""
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLPRI)
        return bool(poller.poll(0))
    return bool(select.select([fd], [], [], 0)[0])


class DatabaseWrapper(base.DatabaseWrapper):
    idle_since: float | None = None

    def quiet_since_last_use(self) -> bool:
        """Nothing suggests that the connection broke since its last request (no round trip)."""
        if self.idle_since is None or time.monotonic() - self.idle_since > PING_AFTER_IDLE_SECONDS:
            return False
        try:
            pgconn = self.connection.pgconn
            if pgconn.status != pq.ConnStatus.OK or pgconn.transaction_status not in _USABLE_STATES:
                return False
            return not _readable(pgconn.socket)
        except (psycopg.Error, OSError, ValueError):  # closed, or its socket gone: the real check decides
            return False

    def close_if_health_check_failed(self) -> None:
        django: Any = self  # attributes of Django's that its type stubs do not declare
        if (
            self.connection is not None
            and django.health_check_enabled
            and not django.health_check_done
            and not self.pool
            and self.quiet_since_last_use()
        ):
            django.health_check_done = True  # trusted without a round trip
            return
        super().close_if_health_check_failed()  # Django's: SELECT 1 when a check is due

    def close_if_unusable_or_obsolete(self) -> None:
        # Called as a request starts and as it ends. health_check_done is set once a request has
        # used the connection (checked, or opened by it), and cleared here: if it is set, a request
        # just used the connection, which is idle from now on.
        used = getattr(self, "health_check_done", False)
        super().close_if_unusable_or_obsolete()
        if self.connection is None:
            self.idle_since = None
        elif used:
            self.idle_since = time.monotonic()

    def connect(self) -> None:
        self.idle_since = None
        super().connect()
