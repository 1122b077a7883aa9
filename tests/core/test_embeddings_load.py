"""The local embedding model is loaded once per process, however many threads ask for it first."""

from __future__ import annotations

import threading
import time

from core import embeddings


def test_threads_asking_at_once_load_one_model(monkeypatch):
    loads = []

    class SlowModel:
        def __init__(self) -> None:
            loads.append(1)
            time.sleep(0.2)  # long enough for every thread below to ask while it loads

    monkeypatch.setattr(embeddings, "LocalEmbedder", SlowModel)
    monkeypatch.setattr(embeddings, "_loaded", None)
    got = []
    threads = [threading.Thread(target=lambda: got.append(embeddings._local())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert len(loads) == 1
    assert len(got) == 8
    assert all(model is got[0] for model in got)
