"""The id of the request being served: in the ``X-Request-ID`` header of every response, in every error
body (``error.request_id``) and in the log records written while serving it, so that a failing call
reported by an integrator can be found in the logs.

A client (or the proxy in front) may send its own ``X-Request-ID``; it is kept when it is 1 to
``MAX_LENGTH`` characters of letters, digits and ``.`` ``_`` ``:`` ``-`` (a UUID, a trace id), since it
is echoed in headers and written to logs. Anything else is replaced by a generated id. The middleware
that sets it is ``config.middleware.RequestIdMiddleware``.
"""

from __future__ import annotations

import logging
import re
import uuid
from contextvars import ContextVar

HEADER = "X-Request-ID"
META_KEY = "HTTP_X_REQUEST_ID"
MAX_LENGTH = 128
_SAFE = re.compile(rf"[A-Za-z0-9._:-]{{1,{MAX_LENGTH}}}")

_current: ContextVar[str | None] = ContextVar("request_id", default=None)


def new_request_id() -> str:
    """A fresh id: 32 hexadecimal characters."""
    return uuid.uuid4().hex


def request_id_from(incoming: str | None) -> str:
    """The client's id if it is safe to echo and log, else a fresh one."""
    if incoming is not None and _SAFE.fullmatch(incoming):
        return incoming
    return new_request_id()


def current_request_id() -> str | None:
    """The id of the request this thread (or task) is serving, if any."""
    return _current.get()


def bind(request_id: str) -> object:
    """Make ``request_id`` current; returns the token ``unbind`` takes."""
    return _current.set(request_id)


def unbind(token: object) -> None:
    _current.reset(token)  # type: ignore[arg-type]


class RequestIdLogFilter(logging.Filter):
    """Adds ``record.request_id``: the current request's id, else the id of the request the record is
    about (Django logs a 4xx/5xx after the middleware returned, with ``extra={"request": ...}``), else
    ``-``. Attached to the handlers in ``LOGGING``, so ``%(request_id)s`` works in every format."""

    def filter(self, record: logging.LogRecord) -> bool:
        request_id = current_request_id()
        if request_id is None:
            request_id = getattr(getattr(record, "request", None), "request_id", None)
        record.request_id = request_id or "-"
        return True
