"""The fitted analyzer kept on disk: loaded when it was fitted for this code, data and libraries,
fitted again (and the old file dropped) when any of them changed or the file cannot be read."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from learning.analyzer import model, store, workflows
from learning.analyzer.base import AnalyzerInput
from learning.analyzer.local import LocalAnalyzer, get_local_analyzer

MESSAGES = ("From now on, always answer me in Spanish.", "I follow a strict gluten-free diet", "thanks!")


class Refit(Exception):
    pass


def no_fit(*args, **kwargs):
    raise Refit


@pytest.fixture
def cache_dir(settings, tmp_path):
    settings.ANALYZER_CACHE_DIR = str(tmp_path / "analyzer")
    return tmp_path / "analyzer"


@pytest.fixture
def stored(cache_dir, embedder):
    """The process's analyzer, saved as a fit for the current code and data would be."""
    fitted = get_local_analyzer()
    bundle = store.FittedBundle(
        models=fitted.models, centre=workflows.background_centre(), word_centre=workflows.background_word_centre()
    )
    store.bundle_save(store.store_path(), bundle)
    return fitted


def test_a_stored_fit_is_loaded_and_analyses_as_the_fitted_one(stored, embedder, monkeypatch):
    monkeypatch.setattr(model, "fit_models", no_fit)
    loaded = LocalAnalyzer(models=store.fitted_models(embedder), embedder=embedder)
    assert loaded.models is not stored.models
    assert loaded.models.steering.embedder is embedder
    assert loaded.models.tuned is not None
    assert loaded.models.tuned.embedder is embedder  # the process's own transformer, not a pickled copy
    for text in MESSAGES:
        assert loaded.analyze(AnalyzerInput(current_message=text)) == stored.analyze(
            AnalyzerInput(current_message=text)
        )


# The analyzer's labelled set, and the workflow matcher's background set (the centres kept in the bundle).
@pytest.mark.parametrize("source", [model.DATA, workflows._BACKGROUND], ids=["labelled", "workflow background"])
def test_a_changed_data_file_is_another_digest_and_is_fitted_again(
    source, stored, cache_dir, embedder, monkeypatch, tmp_path
):
    before = store.fit_digest()
    data = tmp_path / source.name
    shutil.copy(source, data)
    sources = tuple(data if p.resolve() == source.resolve() else p for p in store._SOURCES)
    assert data in sources
    monkeypatch.setattr(store, "_SOURCES", sources)
    assert store.fit_digest() == before  # the same bytes elsewhere: the same fit
    with data.open("a") as handle:
        handle.write('{"text": "Use British spelling.", "type": "preference", "category": "output"}\n')
    assert store.fit_digest() != before
    monkeypatch.setattr(model, "fit_models", lambda *args, **kwargs: "refitted")
    assert store.fitted_models(embedder) == "refitted"
    # The new fit is stored under the new digest; the stale file is gone.
    assert [p.name for p in cache_dir.iterdir()] == [f"local-{store.fit_digest()}.pickle"]


def test_an_unreadable_file_is_fitted_over(cache_dir, embedder, monkeypatch):
    path = store.store_path()
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not a pickle")
    monkeypatch.setattr(model, "fit_models", lambda *args, **kwargs: "refitted")
    assert store.fitted_models(embedder) == "refitted"
    assert store.bundle_load(path).models == "refitted"


def test_the_store_off_or_another_embedder_always_fits(stored, settings, embedder, monkeypatch):
    monkeypatch.setattr(model, "fit_models", no_fit)

    class OtherEmbedder:
        dimensions = 384

    with pytest.raises(Refit):
        store.fitted_models(OtherEmbedder())  # vectors of another model: the stored fit does not apply
    settings.ANALYZER_CACHE_DIR = ""
    with pytest.raises(Refit):
        store.fitted_models(embedder)


def test_a_fit_that_cannot_be_pickled_is_kept_not_raised(cache_dir, caplog):
    """The process keeps what it fitted when the bundle cannot be written, whatever the reason."""

    def local():  # a local function cannot be pickled
        return None

    path = cache_dir / "local-x.pickle"
    store.bundle_save(path, store.FittedBundle(models=local, centre=np.zeros(2), word_centre=np.zeros(2)))
    assert not path.exists()
    assert not list(cache_dir.glob("*.tmp"))
    assert "could not save the fitted analyzer" in caplog.text
