"""gunicorn's threaded worker, answering a request line over ``limit_request_line`` with the API's JSON
error instead of gunicorn's HTML page.

gunicorn refuses such a request before Django sees it, so Django's error handlers cannot shape the
answer; the worker writes the same envelope as ``config.exceptions.error_body`` (built here by hand:
the worker class is loaded before Django is set up). Every other error gunicorn answers itself keeps
gunicorn's handling.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from gunicorn import util
from gunicorn.http.errors import LimitRequestLine
from gunicorn.workers.gthread import ThreadWorker

# config/gunicorn.conf.py's limit_request_line (a test holds them equal); the schema documents it.
REQUEST_LINE_LIMIT = 8190


def uri_too_long_error(limit: int, request_id: str) -> dict[str, Any]:
    """The body of the 414 for a request line over ``limit`` bytes."""
    message = (
        f"The request line (method, path and query string) is over {limit} bytes; "
        "send long values in a request body instead."
    )
    return {
        "error": {"code": "uri_too_long", "message": message, "fields": {"url": [message]}, "request_id": request_id}
    }


def uri_too_long_response(limit: int, request_id: str) -> bytes:
    """The raw HTTP 414 answer (status line, headers, JSON body) for a request line over ``limit`` bytes.
    The request was never read, so its id is always a new one (as ``config.request_id`` makes them)."""
    body = json.dumps(uri_too_long_error(limit, request_id))
    head = (
        "HTTP/1.1 414 URI Too Long\r\n"
        "Connection: close\r\n"
        "Content-Type: application/json\r\n"
        f"X-Request-ID: {request_id}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return (head + body).encode("ascii")


class ApiThreadWorker(ThreadWorker):
    """``worker_class`` of config/gunicorn.conf.py: gthread, with a JSON 414."""

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        if not isinstance(exc, LimitRequestLine):
            super().handle_error(req, client, addr, exc)
            return
        # What gunicorn does for this error, but for the body: the request line was never parsed, so
        # there is no request to write to the access log.
        request_id = uuid.uuid4().hex
        self.log.warning(f"Invalid request from ip={(addr or ('',))[0]} (request id {request_id}): {exc}")
        try:
            util.write_nonblock(client, uri_too_long_response(self.cfg.limit_request_line, request_id))
        except Exception:  # noqa: BLE001 - the client may be gone; gunicorn ignores this failure too
            self.log.debug("Failed to send error message.")
