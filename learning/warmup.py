"""Loading what the first analysed message would otherwise wait for, before a server takes requests.

Loaded lazily, the embedding model (seconds), the local analyzer and its steering check (tens of
seconds to fit, a fraction of a second from ``learning.analyzer.store``) and the workflow detector's
background centres made the demo's first chat message wait about 40 s with nothing on the screen.
``scripts/demo`` warms them in the seed step (which fits and stores the analyzer once) and again in
the server process before it listens (``manage.py runserver_warm``), so nobody waits for them."""

from __future__ import annotations

import time


def models_warm() -> dict[str, float]:
    """Load the embedding model, the local analyzer (stored, or fitted and stored), the steering
    check and the workflow centres, and run one analysis through them; seconds per step."""
    from core.embeddings import get_embedder  # noqa: PLC0415  heavy: torch and the model
    from learning.analyzer import workflows  # noqa: PLC0415  heavy: scikit-learn
    from learning.analyzer.base import AnalyzerInput  # noqa: PLC0415
    from learning.analyzer.local import get_local_analyzer  # noqa: PLC0415  heavy: scikit-learn
    from learning.safety import steering_model  # noqa: PLC0415

    timings: dict[str, float] = {}
    start = time.perf_counter()

    def step(name: str) -> None:
        nonlocal start
        now = time.perf_counter()
        timings[name] = round(now - start, 2)
        start = now

    embedder = get_embedder()
    embedder.embed(["warm-up"])
    step("embedding model")
    # The local analyzer is warmed even beside the OpenAI one: it is its fallback, and the steering check.
    analyzer = get_local_analyzer()
    step("analyzer")
    steering_model()
    workflows.background_centre()
    workflows.background_word_centre()
    step("steering check and workflow centres")
    analyzer.analyze(AnalyzerInput(current_message="Could you keep your answers short, please?"))
    step("first analysis")
    return timings


def analyzer_stored() -> bool:
    """Whether the fitted analyzer of this code and data is on disk (loading it costs a fraction of a second)."""
    from learning.analyzer.store import store_path  # noqa: PLC0415

    path = store_path()
    return path is not None and path.exists()
