"""Chunk embeddings become a pgvector ``vector(384)`` column with an HNSW index on PostgreSQL.

SQLite keeps the bytes (its search is exact, in process): only the field's state changes there.
On PostgreSQL the extension is created (a superuser, once per database), the existing float32
bytes are converted in SQL (little-endian IEEE 754, decoded bit by bit: exact, normal and
subnormal values alike), and the HNSW index is built for inner product on the normalised vectors
(search orders by ``<#>``, the negative inner product).
"""

from django.db import migrations
from pgvector.django import VectorExtension

import core.fields
from core.migrations_ops import PostgresOnlySQL

HNSW_INDEX = "chunk_embedding_hnsw"

BYTES_TO_VECTOR = """
CREATE OR REPLACE FUNCTION pg_temp.ll_bytes_to_vector(b bytea) RETURNS vector LANGUAGE sql IMMUTABLE AS $$
  SELECT array_agg(
    CASE WHEN s = 1 THEN -1.0::float8 ELSE 1.0::float8 END
    * CASE WHEN e = 0 THEN m * 2.0::float8 ^ (-149) ELSE (1 + m * 2.0::float8 ^ (-23)) * 2.0::float8 ^ (e - 127) END
    ORDER BY i)::real[]::vector
  FROM (
    SELECT i,
      get_byte(b, 4 * i + 3) >> 7 AS s,
      ((get_byte(b, 4 * i + 3) & 127) << 1) | (get_byte(b, 4 * i + 2) >> 7) AS e,
      ((get_byte(b, 4 * i + 2) & 127) << 16) | (get_byte(b, 4 * i + 1) << 8) | get_byte(b, 4 * i) AS m
    FROM generate_series(0, length(b) / 4 - 1) AS i
  ) AS f
$$;
ALTER TABLE document_chunks ALTER COLUMN embedding TYPE vector(384) USING pg_temp.ll_bytes_to_vector(embedding);
DROP FUNCTION pg_temp.ll_bytes_to_vector(bytea);
"""

VECTOR_TO_BYTES = """
CREATE OR REPLACE FUNCTION pg_temp.ll_vector_to_bytes(v vector) RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
  SELECT string_agg(
    substring(f FROM 4 FOR 1) || substring(f FROM 3 FOR 1) || substring(f FROM 2 FOR 1) || substring(f FROM 1 FOR 1),
    ''::bytea ORDER BY i)
  FROM (SELECT i, float4send(x) AS f FROM unnest(v::real[]) WITH ORDINALITY AS u(x, i)) AS g
$$;
ALTER TABLE document_chunks ALTER COLUMN embedding TYPE bytea USING pg_temp.ll_vector_to_bytes(embedding);
DROP FUNCTION pg_temp.ll_vector_to_bytes(vector);
"""

# m 32, ef_construction 128: pgvector's defaults (16, 64) found the true top 10 of 1M chunks around real
# text embeddings only 0.90-0.93 of the time, these 0.95 (bench/search_scan.py); search sets ef_search.
CREATE_INDEX = (
    f"CREATE INDEX {HNSW_INDEX} ON document_chunks USING hnsw (embedding vector_ip_ops) "
    "WITH (m = 32, ef_construction = 128)"
)


class CreateVectorExtension(VectorExtension):
    """pgvector's extension, created on PostgreSQL when missing (a superuser, once per database; an
    existing one needs no rights), skipped elsewhere, and kept when migrating back: dropping it
    needs a superuser and may break other users of it."""

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        pass


class Migration(migrations.Migration):
    dependencies = [
        ("retrieval", "0005_weights_and_traces_outlive_their_passage"),
    ]

    operations = [
        CreateVectorExtension(),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="chunk",
                    name="embedding",
                    field=core.fields.VectorEmbeddingField(dimensions=384),
                ),
            ],
            database_operations=[PostgresOnlySQL(BYTES_TO_VECTOR, VECTOR_TO_BYTES)],
        ),
        PostgresOnlySQL(CREATE_INDEX, f"DROP INDEX {HNSW_INDEX}"),
    ]
