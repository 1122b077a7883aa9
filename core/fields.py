"""Model fields shared by the apps that store embeddings."""

from __future__ import annotations

import numpy as np
from django.db import models


class EmbeddingField(models.BinaryField):
    """A float32 vector stored as bytes: portable across SQLite and PostgreSQL."""

    # What the django-stubs mypy plugin reads as this field's Python types.
    _pyi_private_set_type: np.ndarray | bytes | None
    _pyi_private_get_type: np.ndarray  # type: ignore[assignment]

    def from_db_value(self, value, expression, connection):
        if value is None:
            return None
        return np.frombuffer(bytes(value), dtype=np.float32)

    def get_db_prep_value(self, value, connection, prepared=False):
        if isinstance(value, np.ndarray):
            value = value.astype(np.float32).tobytes()
        return super().get_db_prep_value(value, connection, prepared)


def _vector_text(value: np.ndarray | bytes | memoryview) -> str:
    """pgvector's text input for a float32 vector: each value's shortest exact repr."""
    if not isinstance(value, np.ndarray):
        value = np.frombuffer(bytes(value), dtype=np.float32)
    return "[" + ",".join(map(repr, value.astype(np.float32).tolist())) + "]"


class VectorEmbeddingField(EmbeddingField):
    """A float32 vector that PostgreSQL can index: a pgvector ``vector(dimensions)`` column there
    (searched with an HNSW index, see ``retrieval.index``), bytes like ``EmbeddingField`` elsewhere
    (SQLite searches in process). Python sees a float32 array on both.

    Not pgvector's own ``VectorField``: its column type is ``vector`` on every backend, and SQLite,
    the embedded default, has none. Values are passed as pgvector's text input (exact: each float32
    as its shortest repr), so no type adapter has to be registered on the connection, which would
    fail before the migration creates the extension."""

    def __init__(self, *args, dimensions: int, **kwargs) -> None:
        self.dimensions = dimensions
        super().__init__(*args, **kwargs)

    def deconstruct(self):
        name, path, args, kwargs = super().deconstruct()
        kwargs["dimensions"] = self.dimensions
        return name, path, args, kwargs

    def db_type(self, connection) -> str | None:
        if connection.vendor == "postgresql":
            return f"vector({self.dimensions})"
        return super().db_type(connection)

    def from_db_value(self, value, expression, connection):
        if isinstance(value, str):  # pgvector's text output: "[0.1,0.2,...]"
            return np.array(value[1:-1].split(","), dtype=np.float32)
        return super().from_db_value(value, expression, connection)

    def get_db_prep_value(self, value, connection, prepared=False):
        if connection.vendor == "postgresql" and value is not None:
            return _vector_text(value)
        return super().get_db_prep_value(value, connection, prepared)
