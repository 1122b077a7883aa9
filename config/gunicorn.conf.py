"""gunicorn settings for production: ``gunicorn -c config/gunicorn.conf.py config.wsgi``.

gthread workers keep client connections alive (sync workers close each one), which the
assistant's backend, posting many small events, benefits from. Measured on 2 cores by
bench/ingest.py: 3 workers x 2 threads gave the best single-event throughput.
"""

import multiprocessing
import os
import threading

# Loopback by default: the service sits behind a TLS-terminating proxy on the same host. Listening
# on other interfaces is a deliberate choice (GUNICORN_BIND=0.0.0.0:8000, e.g. in a container).
bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("GUNICORN_WORKERS", multiprocessing.cpu_count() + 1))
threads = int(os.environ.get("GUNICORN_THREADS", "2"))
# gthread, answering an over-long request line with the API's JSON error (config/gunicorn_worker.py).
worker_class = "config.gunicorn_worker.ApiThreadWorker"
keepalive = 5
timeout = 30
graceful_timeout = 30
# gunicorn's largest finite request line (its default is 4094), the size of nginx's default header
# buffer: a URL the proxy passes reaches Django, and a longer one is the documented JSON 414 (config/
# gunicorn_worker.py); never 0, which lifts the limit that keeps one request from holding megabytes.
limit_request_line = 8190
max_requests = 5000
max_requests_jitter = 500
accesslog = os.environ.get("GUNICORN_ACCESSLOG") or None
loglevel = os.environ.get("GUNICORN_LOGLEVEL", "info")


def post_worker_init(worker) -> None:
    """Load the embedding model as soon as this worker starts, in the background. It loads lazily, per
    process, in a second or two on a quiet machine (a minute on a busy one), and search, context and
    manual preferences need it: loaded on demand, the first such request of every worker, and again
    after each ``max_requests`` recycling, waited for all of it (20-60 s, and timeouts, under
    bench/fuzz.py). In the background the worker serves at once (loading before serving stalled every
    request whenever all workers were loading at once), and a request that needs the model waits only
    for what is left of its loading.

    The local analyzer is not fitted here: fitting costs tens of seconds of CPU per process, which
    every worker would pay again at each recycling while it serves (bench/ingest.py: 466 -> 231
    single events/s, p95 24 -> 52 ms). Web processes need it only for a preference added by hand,
    which waits for the fit once per worker; the Celery worker analyses messages."""
    threading.Thread(target=_load_models, name="load-models", daemon=True).start()


def _load_models() -> None:
    # Django is set up once the worker has loaded the app.
    from core.embeddings import get_embedder  # noqa: PLC0415

    get_embedder()
