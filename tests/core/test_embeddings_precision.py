"""The local model's precision (core.embeddings, EMBEDDING_PRECISION): resolved per CPU, validated,
and bfloat16 vectors indistinguishable from float32 ones for what reads them."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

from core import embeddings
from core.embeddings import LocalEmbedder, resolved_precision

TEXTS = [
    "From now on answer me in Spanish.",
    "Not like that. Sort them by start time.",
    "Extract the vehicle assignments from this roster and put them in a table.",
    "wing flutter at transonic speeds",
    "I'm allergic to penicillin.",
    "k",
]


@pytest.mark.parametrize("choice", ["float32", "bfloat16"])
def test_an_explicit_precision_is_kept(choice):
    assert resolved_precision(choice) == choice


@pytest.mark.parametrize(("native", "expected"), [(True, "bfloat16"), (False, "float32")])
def test_auto_follows_the_cpu(monkeypatch, native, expected):
    monkeypatch.setattr(embeddings, "native_bfloat16", lambda: native)
    assert resolved_precision("auto") == expected


def test_auto_is_the_default_setting(settings, monkeypatch):
    monkeypatch.setattr(embeddings, "native_bfloat16", lambda: False)
    del settings.EMBEDDING_PRECISION
    assert resolved_precision() == "float32"


def test_an_unknown_precision_is_refused():
    with pytest.raises(ValueError, match="EMBEDDING_PRECISION"):
        resolved_precision("float16")


def _vectors(model: LocalEmbedder, precision: str, texts: list[str] = TEXTS) -> np.ndarray:
    """The texts' vectors from the session's model, run in the given precision."""
    original = (model.precision, model._autocast, model.onnx_max_texts)
    import torch  # noqa: PLC0415 - the session's model already loaded it

    model.onnx_max_texts = 0  # torch's own modules, whatever ONNX Runtime would take (test_embeddings_onnx.py)
    model.precision = precision
    model._autocast = (
        (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if precision == "bfloat16" else contextlib.nullcontext
    )
    try:
        return model.embed(texts)
    finally:
        model.precision, model._autocast, model.onnx_max_texts = original


def test_bfloat16_vectors_match_float32_ones(embedder):
    if not isinstance(embedder, LocalEmbedder):
        pytest.skip("the local model only")
    full = _vectors(embedder, "float32")
    half = _vectors(embedder, "bfloat16")
    assert half.dtype == np.float32
    assert half.shape == full.shape
    np.testing.assert_allclose(np.linalg.norm(half, axis=1), 1.0, atol=1e-5)
    cosines = (full * half).sum(axis=1)
    assert cosines.min() > 0.9995, cosines
    # Not the same computation: the vectors do differ (the check above is not comparing a thing with itself).
    assert np.abs(full - half).max() > 0


def test_the_analyzer_store_digest_names_the_precision(monkeypatch):
    from learning.analyzer import store  # noqa: PLC0415

    monkeypatch.setattr(store, "resolved_precision", lambda: "float32")
    full = store.fit_digest()
    monkeypatch.setattr(store, "resolved_precision", lambda: "bfloat16")
    assert store.fit_digest() != full


@pytest.mark.one_backend  # the model alone; bfloat16 is slow where the CPU only emulates it
def test_the_vectors_are_sentence_transformers_own(embedder):
    """embed() calls the model's modules directly: in float32, the same vectors as
    SentenceTransformer.encode, for short and long texts (truncated at the model's 256 tokens) and
    across batches; in bfloat16, within the precision's own spread (encode pads other batches)."""
    if not isinstance(embedder, LocalEmbedder):
        pytest.skip("the local model only")
    texts = [*TEXTS, "word " * 400, *(f"passage {i} about the lift of slender bodies" for i in range(70))]
    expected = embedder.model.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
    got = _vectors(embedder, "float32", texts)
    assert got.shape == (len(texts), 384)
    np.testing.assert_allclose(got, expected, atol=2e-6)
    assert (_vectors(embedder, "bfloat16", texts) * expected).sum(axis=1).min() > 0.9995
