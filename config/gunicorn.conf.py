"""gunicorn settings for production: ``gunicorn -c config/gunicorn.conf.py config.wsgi``.

gthread workers keep client connections alive (sync workers close each one), which the
assistant's backend, posting many small events, benefits from. Measured on 2 cores by
bench/ingest.py: 3 workers x 2 threads gave the best single-event throughput.
"""

import multiprocessing
import os

# Loopback by default: the service sits behind a TLS-terminating proxy on the same host. Listening
# on other interfaces is a deliberate choice (GUNICORN_BIND=0.0.0.0:8000, e.g. in a container).
bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("GUNICORN_WORKERS", multiprocessing.cpu_count() + 1))
threads = int(os.environ.get("GUNICORN_THREADS", "2"))
worker_class = "gthread"
keepalive = 5
timeout = 30
graceful_timeout = 30
max_requests = 5000
max_requests_jitter = 500
accesslog = os.environ.get("GUNICORN_ACCESSLOG") or None
loglevel = os.environ.get("GUNICORN_LOGLEVEL", "info")
