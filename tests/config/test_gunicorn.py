"""gunicorn as configured in config/gunicorn.conf.py: the request-line limit and its JSON 414 (answered by
the worker before Django runs, so only a real gunicorn shows it), and the models a worker loads before it
takes requests."""

from __future__ import annotations

import json
import os
import runpy
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from config.gunicorn_worker import REQUEST_LINE_LIMIT, uri_too_long_error

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "config" / "gunicorn.conf.py"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    """gunicorn with the project's configuration, one worker; the test settings, and the OpenAI embedder and
    analyzer (nothing is analysed here: the worker's warm-up builds clients instead of loading models)."""
    port = _free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "EMBEDDING_BACKEND": "openai",
        "OPENAI_API_KEY": "unused",
        "GUNICORN_BIND": f"127.0.0.1:{port}",
        "GUNICORN_WORKERS": "1",
        "GUNICORN_LOGLEVEL": "warning",
    }
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "gunicorn"), "-c", str(CONF), "config.wsgi:application"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while _request(port, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")[0] is None:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"gunicorn did not come up: {process.communicate(timeout=5)[1].decode()[-2000:]}")
            time.sleep(0.2)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=30)


def _request(port: int, raw: bytes) -> tuple[int | None, dict[str, str], bytes]:
    """Send one raw HTTP/1.1 request (``Connection: close``) and return the status, headers and body."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(raw.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n", 1))
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
    except OSError:
        return None, {}, b""
    head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
    return int(status_line.split()[1]), headers, body


def _get(port: int, target: str) -> tuple[int | None, dict[str, str], bytes]:
    return _request(port, f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())


def test_the_configured_limit_is_the_documented_one():
    assert runpy.run_path(str(CONF))["limit_request_line"] == REQUEST_LINE_LIMIT == 8190


def test_a_request_line_over_the_limit_is_the_documented_json_414(server):
    status, headers, body = _get(server, "/api/v1/me?message=" + "x" * REQUEST_LINE_LIMIT)
    assert status == 414
    assert headers["content-type"] == "application/json"
    request_id = headers["x-request-id"]
    assert len(request_id) == 32
    assert json.loads(body) == uri_too_long_error(REQUEST_LINE_LIMIT, request_id)


def test_a_request_line_over_gunicorns_default_limit_reaches_django(server):
    # 6,000 bytes: over gunicorn's default of 4094, under the configured limit. Django answers (a JSON 401).
    status, headers, body = _get(server, "/api/v1/me?message=" + "x" * 6000)
    assert headers["content-type"] == "application/json"
    assert status == 401
    assert json.loads(body)["error"]["code"] == "not_authenticated"
    assert json.loads(body)["error"]["request_id"] == headers["x-request-id"]


def test_the_worker_loads_the_embedding_model_as_it_starts_and_fits_no_analyzer(monkeypatch):
    import core.embeddings  # noqa: PLC0415 - patched below, where the hook looks them up
    import learning.analyzer  # noqa: PLC0415

    loaded = []
    monkeypatch.setattr(core.embeddings, "get_embedder", lambda: loaded.append("embedder"))
    monkeypatch.setattr(learning.analyzer, "get_analyzer", lambda: loaded.append("analyzer"))
    runpy.run_path(str(CONF))["post_worker_init"](None)
    for thread in threading.enumerate():
        if thread.name == "load-models":
            thread.join(timeout=30)
    assert loaded == ["embedder"]
