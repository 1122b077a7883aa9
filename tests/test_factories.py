"""Every factory builds a row its model accepts: a model change that breaks one fails here, loudly."""

from __future__ import annotations

import numpy as np
import pytest
from django.apps import apps

from accounts.selectors import api_key_get_for_raw
from core.fields import EmbeddingField
from feedback.models import AppendOnlyError
from retrieval.index import DIMENSIONS, current_generation
from tests import factories

FACTORIES = [
    value
    for value in vars(factories).values()
    if isinstance(value, type)
    and issubclass(value, factories.factory.django.DjangoModelFactory)
    and value is not factories.factory.django.DjangoModelFactory
]
OUR_APPS = ("accounts", "feedback", "learning", "retrieval", "intelligence", "promotions")
# Rows only the code writes (bookkeeping, not data a test sets up).
# Derived bookkeeping written only by its services (the vector index generation, the scan's trace rollups).
NO_FACTORY = {
    "promotions.RetrievalScanJudgement",
    "promotions.RetrievalScanState",
    "retrieval.IndexGeneration",
    "retrieval.TraceRollup",
    "retrieval.TraceRollupChange",
    "retrieval.TraceRollupMark",
    "retrieval.TraceRollupOutside",
    "retrieval.TraceRollupState",
}


@pytest.mark.parametrize("factory_class", FACTORIES, ids=lambda f: f.__name__)
def test_each_factory_saves_a_valid_row(db, factory_class):
    row = factory_class()
    # Field validation too (choices, lengths); an embedding is a numpy array, which Django's
    # empty-value check cannot compare, so it is checked by the chunk test below instead.
    row.full_clean(exclude=["password", *(f.name for f in row._meta.fields if isinstance(f, EmbeddingField))])
    model = factory_class._meta.model
    assert model.objects.filter(pk=row.pk).exists()
    factory_class()  # a second row: sequences keep unique fields unique


def test_every_model_of_our_apps_has_a_factory():
    covered = {f"{f._meta.model._meta.app_label}.{f._meta.model.__name__}" for f in FACTORIES}
    models = {
        f"{m._meta.app_label}.{m.__name__}"
        for label in OUR_APPS
        for m in apps.get_app_config(label).get_models()
        if not m._meta.auto_created
    }
    assert models - covered - NO_FACTORY == set()


def test_the_feedback_event_factory_respects_append_only(db):
    event = factories.FeedbackEventFactory()
    event.signal = "negative"
    with pytest.raises(AppendOnlyError):
        event.save()


def test_a_chunk_has_an_index_sized_embedding_and_moves_the_generation(db):
    before = current_generation()[1]
    chunk = factories.ChunkFactory()
    chunk.refresh_from_db()
    assert chunk.embedding.shape == (DIMENSIONS,)
    assert np.isclose(np.linalg.norm(chunk.embedding), 1.0)
    assert current_generation()[1] == before + 1


def test_an_api_key_factory_key_authenticates(db):
    key = factories.ApiKeyFactory(raw="llk_raw-for-this-test")
    assert api_key_get_for_raw(raw_key="llk_raw-for-this-test").pk == key.pk
