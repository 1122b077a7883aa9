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
