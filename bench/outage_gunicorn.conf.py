"""gunicorn for bench/outage.py: the production configuration (config/gunicorn.conf.py), and every
worker, as it exits, appends the context-cache failures it counted
(``learning.context.cache.cache_failures``, per process) to the JSON-lines file named by
``BENCH_CACHE_FAILURES``."""

import json
import os
import runpy
from pathlib import Path

PRODUCTION = Path(__file__).resolve().parent.parent / "config" / "gunicorn.conf.py"
globals().update({name: value for name, value in runpy.run_path(str(PRODUCTION)).items() if not name.startswith("__")})


def worker_exit(server, worker) -> None:
    from learning.context.cache import cache_failures  # Django is set up by now

    path = os.environ.get("BENCH_CACHE_FAILURES")
    if path:
        with open(path, "a") as out:
            out.write(json.dumps({"pid": worker.pid, **cache_failures}) + "\n")
