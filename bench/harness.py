"""What the benchmarks share: a scratch PostgreSQL database, production settings (local ones with
DEBUG off when a bench runs without a broker), gunicorn,
a Celery worker, and the load generator (bench/loadgen.py) in its own process."""

from __future__ import annotations

import io
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
BIN = Path(PY).parent


def sh(args: list[str], env: dict) -> str:
    return subprocess.run(args, cwd=ROOT, env=env, check=True, capture_output=True, text=True).stdout


def scratch_environment(pg: str, database: str, broker: str | None = None, cache: str | None = None) -> dict[str, str]:
    """Create an empty database, migrate it, and return the environment to run on it: production
    settings with a broker (and a cache, by default the Redis database after the broker's), else the
    local settings with DEBUG off, whose tasks run in-process (production refuses eager mode)."""
    with psycopg.connect(f"{pg}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{database}"')
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.production" if broker else "config.settings.local",
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DATABASE_URL": f"{pg}/{database}",
        "SECURE_SSL_REDIRECT": "false",
        "LOG_LEVEL": "WARNING",
    }
    env.pop("CELERY_BROKER_URL", None)
    if broker:
        base, _, db = broker.rpartition("/")
        env["CELERY_BROKER_URL"] = broker
        env["CACHE_URL"] = cache or f"{base}/{(int(db or 0) + 1) % 16}"
        env["CELERY_QUEUE"] = f"bench-{secrets.token_hex(4)}"
    elif cache:
        env["CACHE_URL"] = cache
    sh([PY, "manage.py", "migrate", "--noinput"], env)
    sh(
        [PY, "manage.py", "createsuperuser", "--noinput", "--username", "bench", "--email", "bench@example.com"],
        {**env, "DJANGO_SUPERUSER_PASSWORD": secrets.token_urlsafe(16)},
    )
    return env


def django_in_scratch(pg: str, database: str, *, cache: str | None = None) -> None:
    """Run this process's Django on a new scratch database (production settings), optionally with a
    shared cache. A reused cache may hold an earlier run's context for the same user ids: new
    context generations make it unreachable."""
    env = scratch_environment(pg, database, cache=cache)
    keys = ("DJANGO_SETTINGS_MODULE", "DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "DATABASE_URL", "SECURE_SSL_REDIRECT")
    os.environ.update({key: env[key] for key in (*keys, "LOG_LEVEL")})
    if cache:
        os.environ["CACHE_URL"] = cache
    import django

    django.setup()
    from learning.context.cache import context_invalidate_all, context_invalidate_shared

    context_invalidate_all()
    context_invalidate_shared()


def wsgi_post(app, path: str, body: bytes, *, key: str, on_behalf_of: str, start_response) -> bytes:
    """POST a JSON body to a WSGI app in this process, as a service key acting for a user (the
    profiling scripts call the app directly: no server, no sockets, only the request path)."""
    environ = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": path,
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_HOST": "127.0.0.1",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        "HTTP_AUTHORIZATION": f"Bearer {key}",
        "HTTP_X_ON_BEHALF_OF": on_behalf_of,
        "wsgi.input": io.BytesIO(body),
        "wsgi.url_scheme": "http",
    }
    return b"".join(app(environ, start_response))


def service_key(env: dict) -> str:
    return sh([PY, "manage.py", "create_api_key", "--user", "bench", "--service", "--name", "bench"], env).split()[-1]


def _tree_cpu_seconds(pid: int) -> float:
    """CPU seconds used so far by a process and its children (Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        if int(entry.name) == pid or int(fields[1]) == pid:  # fields[1]: the parent's pid
            total += (int(fields[11]) + int(fields[12])) / tick  # utime + stime
    return total


def wait_until_idle(pid: int, *, below: float = 0.1, timeout: float = 240.0) -> float:
    """Wait until a server and its workers use less than ``below`` of a core over a second: each
    gunicorn worker loads the embedding model in the background when it starts (config/
    gunicorn.conf.py), seconds of CPU each that a measurement would otherwise share. The seconds
    waited."""
    start = time.monotonic()
    used = _tree_cpu_seconds(pid)
    while time.monotonic() - start < timeout:
        time.sleep(1.0)
        now = _tree_cpu_seconds(pid)
        if now - used < below:
            break
        used = now
    return round(time.monotonic() - start, 1)


@contextmanager
def gunicorn(
    env: dict,
    port: int,
    workers: int,
    threads: int,
    *,
    config: str = "config/gunicorn.conf.py",
    log: Path | None = None,
):
    output = open(log, "w") if log else None  # noqa: SIM115 - closed below
    server = subprocess.Popen(
        [
            str(BIN / "gunicorn"),
            "-c",
            config,
            "config.wsgi:application",
            "--workers",
            str(workers),
            "--threads",
            str(threads),
            "--bind",
            f"127.0.0.1:{port}",
            "--log-level",
            "warning",
            "--backlog",
            "2048",
        ],
        cwd=ROOT,
        env=env,
        stdout=output,
        stderr=subprocess.STDOUT if output else None,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(150):
            try:
                if urllib.request.urlopen(f"{base}/healthz", timeout=1).status == 200:  # noqa: S310 - loopback
                    break
            except OSError:
                time.sleep(0.2)
        else:
            raise SystemExit("gunicorn did not come up")
        print(f"gunicorn up; its workers idle after {wait_until_idle(server.pid)} s (models loaded)", flush=True)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=30)
        if output:
            output.close()


@contextmanager
def celery_worker(env: dict, concurrency: int, log_level: str = "warning"):
    (ROOT / "var").mkdir(exist_ok=True)
    log = open(ROOT / "var" / "bench-worker.log", "w")  # noqa: SIM115 - closed below
    worker = subprocess.Popen(
        [
            PY,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "-Q",
            env["CELERY_QUEUE"],
            "--concurrency",
            str(concurrency),
            "--without-gossip",
            "--without-mingle",
            "-l",
            log_level,
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        yield worker
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=60)
        except subprocess.TimeoutExpired:  # warm shutdown waits for the task at hand; cold shutdown ends it
            worker.send_signal(signal.SIGQUIT)
            worker.wait(timeout=60)
        log.close()


@contextmanager
def celery_beat(env: dict):
    """``celery beat``, the production schedule (config/settings/base.py: CELERY_BEAT_SCHEDULE),
    with a schedule file of its own under var/."""
    (ROOT / "var").mkdir(exist_ok=True)
    log = open(ROOT / "var" / "bench-beat.log", "w")  # noqa: SIM115 - closed below
    schedule = ROOT / "var" / f"bench-beat-{env['CELERY_QUEUE']}"
    beat = subprocess.Popen(
        [PY, "-m", "celery", "-A", "config", "beat", "-s", str(schedule), "-l", "warning"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        yield beat
    finally:
        beat.terminate()
        beat.wait(timeout=30)
        log.close()
        for leftover in schedule.parent.glob(f"{schedule.name}*"):
            leftover.unlink()


def load(base: str, key: str, mode: str, **options: object) -> dict:
    """Run bench/loadgen.py; ``name=value`` is ``--name value``, ``name=True`` the flag ``--name``."""
    args = [PY, str(ROOT / "bench" / "loadgen.py"), "--url", base, "--key", key, "--mode", mode]
    for name, value in options.items():
        flag = f"--{name.replace('_', '-')}"
        args += [flag] if value is True else [flag, str(value)]
    return json.loads(sh(args, dict(os.environ)).strip().splitlines()[-1])
