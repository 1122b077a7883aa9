"""Run the same call from several threads at once, each on its own database connection."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from django.db import connection


def at_once(call: Callable[[], Any], *, times: int = 2) -> list[Any]:
    """Start ``call`` in ``times`` threads released together; their results (or the exceptions
    they raised), in the order they finished."""
    results: list[Any] = []
    barrier = threading.Barrier(times)

    def run() -> None:
        barrier.wait()
        try:
            results.append(call())
        except Exception as exc:  # noqa: BLE001 - returned to the test, which asserts on it
            results.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(times)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results
