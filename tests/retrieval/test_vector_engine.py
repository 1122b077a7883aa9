"""The vector engines: pgvector's HNSW index on PostgreSQL and the exact in-process index elsewhere
rank exactly as the ranking rule says (checked against brute force), for every kind of reader and
every weight scope; import builds nothing on PostgreSQL; migration 0006 keeps stored embeddings."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from accounts.actors import Actor
from accounts.models import ApiKey
from accounts.services import api_key_create
from retrieval import index as index_module
from retrieval.conf import clamp_multiplier
from retrieval.models import Chunk, Document, RetrievalWeight
from retrieval.scope import near_paraphrase, query_terms
from retrieval.selectors import _candidates_exact, _candidates_hnsw, chunks_ranked
from retrieval.services import DocumentInput, documents_import
from tests.factories import ProjectFactory

on_postgresql = pytest.mark.skipif(connection.vendor != "postgresql", reason="pgvector runs on PostgreSQL")
MIGRATION = importlib.import_module("retrieval.migrations.0006_chunk_embedding_vector")

SIZE = 450  # more than the over-fetch (200 for k <= 10): the cut before weights matters
QUERY_TEXT = "flutter of swept wings"


def _unit(vector: np.ndarray) -> np.ndarray:
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def _query() -> np.ndarray:
    return _unit(np.random.default_rng(5).standard_normal(384))


@pytest.fixture
def ranked_world(world):
    """450 chunks, a third organisation-wide, a third in apollo (owner and member), a third in zeus
    (nobody's); each chunk's similarity to the query is fixed and distinct (-0.3 .. 0.95), and
    weights of every scope sit on chunks near the top, two of them on one chunk."""
    zeus = ProjectFactory(slug="zeus")
    query = _query()
    rng = np.random.default_rng(9)
    similarities = rng.permutation(np.linspace(-0.3, 0.95, SIZE))
    projects = [None, world.project, zeus]
    Document.objects.bulk_create(
        Document(id=f"d{i}", raw_text="x", content_hash=str(i), project=projects[i % 3]) for i in range(SIZE)
    )
    chunks = []
    for i, similarity in enumerate(similarities):
        other = rng.standard_normal(384).astype(np.float32)
        other = _unit(other - (other @ query) * query)
        vector = _unit(similarity * query + np.sqrt(1 - similarity**2) * other)
        chunks.append(Chunk(chunk_id=f"c{i}", document_id=f"d{i}", position=0, content="x", content_hash=str(i)))
        chunks[-1].embedding = vector
    Chunk.objects.bulk_create(chunks)
    index_module.bump_generation()
    pks = list(Chunk.objects.order_by("pk").values_list("pk", flat=True))
    by_rank = [pks[i] for i in np.argsort(-similarities)]
    near = _unit(query + 0.05 * _unit(rng.standard_normal(384)))
    far = _unit(rng.standard_normal(384))
    terms = query_terms(QUERY_TEXT)

    def weight(rank: int, scope: str, multiplier: float, **fields) -> None:
        chunk = Chunk.objects.get(pk=by_rank[rank])
        RetrievalWeight.objects.create(
            chunk=chunk, document_id=chunk.document_id, scope=scope, multiplier=multiplier, **fields
        )

    for rank in range(0, 30, 3):  # every third chunk near the top, alternately up and down
        weight(rank, "global", 1.5 if rank % 2 else 0.65)
    weight(1, "project", 1.5, project=world.project)
    weight(4, "project", 1.5, project=zeus)
    weight(5, "query", 1.5, query_anchors=near, min_similarity=0.9, query_terms=terms)  # applies
    weight(7, "query", 1.5, query_anchors=far, min_similarity=0.9, query_terms=terms)  # too far
    weight(8, "query", 1.5, query_anchors=near, min_similarity=0.9, query_terms=["buckling"])  # other words
    weight(10, "global", 1.4)
    weight(10, "query", 1.4, query_anchors=near, min_similarity=0.9, query_terms=terms)  # product clamped
    weight(11, "global", 1.5, status="paused")
    weight(190, "global", 1.5)  # near the cut
    weight(SIZE - 1, "global", 1.5)  # negative similarity: stays at 0
    return world, zeus, query


def _readers(world, zeus) -> dict[str, Actor]:
    limited, _ = api_key_create(owner=world.admin, name="zeus only", kind=ApiKey.Kind.SERVICE, projects=[zeus])
    return {
        "admin": world.actor("admin"),
        "member": world.actor("owner"),
        "non-member": world.actor("other"),
        "service limited to zeus": Actor(user=None, api_key=limited, project_ids=frozenset({zeus.pk})),
        "service": world.actor("service"),
    }


def _brute_force(actor_name: str, world, zeus, project, query: np.ndarray, k: int) -> list[tuple[int, float, float]]:
    """The ranking rule written out over every chunk: the 200 (or 20 k) most similar chunks the
    reader may see, each similarity (at least 0) times its active weights' clamped product."""
    readable = {
        "admin": {None, world.project.pk, zeus.pk},
        "service": {None, world.project.pk, zeus.pk},
        "member": {None, world.project.pk},
        "non-member": {None},
        "service limited to zeus": {None, zeus.pk},
    }[actor_name]
    if project is not None:
        readable &= {None, project.pk}
    rows = [
        (pk, float(np.asarray(vector) @ query))
        for pk, vector, project_id in Chunk.objects.values_list("pk", "embedding", "document__project_id")
        if project_id in readable
    ]
    rows = sorted(rows, key=lambda row: -row[1])[: max(200, 20 * k)]
    terms = set(query_terms(QUERY_TEXT))
    multipliers: dict[int, float] = {}
    for weight in RetrievalWeight.objects.filter(chunk_id__in=[pk for pk, _ in rows], status="active").order_by("pk"):
        if weight.scope == "project" and (project is None or weight.project_id != project.pk):
            continue
        if weight.scope == "query" and not near_paraphrase(
            query, terms, weight.query_anchors, weight.query_terms, weight.min_similarity
        ):
            continue
        multipliers[weight.chunk_id] = clamp_multiplier(multipliers.get(weight.chunk_id, 1.0) * weight.multiplier)
    scored = sorted(((max(s, 0.0) * multipliers.get(pk, 1.0), s, pk) for pk, s in rows), reverse=True)[:k]
    return [(pk, weighted, multipliers.get(pk, 1.0)) for weighted, _, pk in scored]


@pytest.mark.parametrize("exact", [False, True], ids=["engine of the database", "exact in process"])
def test_search_ranks_as_brute_force_for_every_reader_and_weight_scope(ranked_world, settings, exact):
    world, zeus, query = ranked_world
    settings.RETRIEVAL_EXACT_SEARCH = exact
    for name, actor in _readers(world, zeus).items():
        for project in (None, world.project, zeus):
            for k in (5, 12):
                got = chunks_ranked(actor=actor, query_vector=query, project=project, k=k, query_text=QUERY_TEXT)
                expected = _brute_force(name, world, zeus, project, query, k)
                where = f"{name}, project {project}, k={k}"
                assert [hit.chunk_id for hit in got] == [pk for pk, _, _ in expected], where
                assert [hit.score for hit in got] == pytest.approx([s for _, s, _ in expected], abs=1e-5), where
                assert [hit.weight for hit in got] == pytest.approx([w for _, _, w in expected]), where


def test_the_weights_change_the_ranking_in_this_corpus(ranked_world):
    """The comparison above is not vacuous: weights reorder, and readers see different results."""
    world, zeus, query = ranked_world
    readers = _readers(world, zeus)
    admin = chunks_ranked(actor=readers["admin"], query_vector=query, project=None, k=12, query_text=QUERY_TEXT)
    assert any(hit.weight != 1.0 for hit in admin)
    assert [hit.score for hit in admin] != sorted(hit.score / hit.weight for hit in admin)[::-1]
    outsider = chunks_ranked(actor=readers["non-member"], query_vector=query, project=None, k=12, query_text="")
    assert {hit.chunk_id for hit in outsider} != {hit.chunk_id for hit in admin}


@on_postgresql
def test_the_index_is_walked_until_the_overfetch_is_filled_for_a_filtered_reader(ranked_world, settings):
    """ef_search 10, but the non-member's 200 candidates are all found (the 150 it may read):
    pgvector's iterative scan goes on past the first candidate list."""
    world, _zeus, query = ranked_world
    with connection.cursor() as cursor:  # without the entries earlier tests' rolled-back chunks left in the graph
        cursor.execute("REINDEX INDEX chunk_embedding_hnsw")
    settings.RETRIEVAL_HNSW_EF_SEARCH = 10
    candidates, _ = _candidates_hnsw(actor=world.actor("other"), project=None, query_vector=query, n=200)
    assert len(candidates) == SIZE // 3


@on_postgresql
def test_import_and_search_build_no_index_in_process_on_postgresql(world, embedder, monkeypatch):
    def refuse(self):
        pytest.fail("an in-process index was built or read on PostgreSQL")

    monkeypatch.setattr(index_module.VectorIndex, "ready", refuse)
    generation = index_module.current_generation()[1]
    documents_import(
        actor=world.actor("service"),
        items=[DocumentInput(id="blunt", raw_text="Stagnation point heating of blunt bodies at hypersonic speeds.")],
    )
    assert index_module.current_generation()[1] == generation + 1  # still counted, read by nobody here
    body = (
        world.client("admin")
        .post("/api/v1/retrieval/search", {"query": "hypersonic heating of blunt bodies"}, format="json")
        .json()
    )
    assert body["results"][0]["document_id"] == "blunt"


@pytest.mark.django_db(transaction=True)
def test_migration_0006_keeps_the_stored_embeddings_bit_for_bit():
    """Rows stored as float32 bytes before the migration (zero, negative zero and a subnormal among
    them) read back identical after it: on PostgreSQL converted to vector(384), elsewhere kept."""
    executor = MigrationExecutor(connection)
    executor.migrate([("retrieval", "0005_weights_and_traces_outlive_their_passage")])
    vectors = np.random.default_rng(3).standard_normal((5, 384)).astype(np.float32)
    vectors[0, :3] = [0.0, -0.0, 1e-40]
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO document_metadata (id, source_type, source_system, title, url, participants, raw_text, "
            "metadata, content_hash, imported_at, updated_at) VALUES ('old', 'text', '', '', '', '[]', 'x', '{}', "
            "'h', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"
        )
        for i, vector in enumerate(vectors):
            cursor.execute(
                "INSERT INTO document_chunks (chunk_id, document_id, position, content, content_hash, embedding, "
                "metadata, created_at) VALUES (%s, 'old', %s, 'x', 'h', %s, '{}', CURRENT_TIMESTAMP)",
                [f"old#{i}", i, vector.tobytes()],
            )
    # Forward to every app's latest migration: going back to retrieval 0005 also unapplied the other
    # apps' migrations that depend on later retrieval ones, and later tests need the whole schema.
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    stored = np.vstack(list(Chunk.objects.order_by("position").values_list("embedding", flat=True)))
    assert stored.dtype == np.float32
    assert stored.view(np.uint32).tolist() == vectors.view(np.uint32).tolist()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attname = 'embedding' "
                "AND attrelid = 'document_chunks'::regclass"
            )
            assert cursor.fetchone()[0] == "vector(384)"
            cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [MIGRATION.HNSW_INDEX])
            assert "hnsw (embedding vector_ip_ops)" in cursor.fetchone()[0]


def test_exact_search_looks_past_the_chunks_the_reader_may_not_see(ranked_world):
    """The 24 chunks nearest this query are all in zeus: the non-member's 3 candidates come from a
    search restricted to what it may read, and are the 3 nearest of those."""
    world, zeus, _ = ranked_world
    rng = np.random.default_rng(21)
    query = _unit(rng.standard_normal(384))
    Document.objects.create(id="zeus-doc", raw_text="x", content_hash="z", project=zeus)
    for i, similarity in enumerate(np.linspace(0.99, 0.9, 30)):
        other = rng.standard_normal(384).astype(np.float32)
        other = _unit(other - (other @ query) * query)
        chunk = Chunk(chunk_id=f"z{i}", document_id="zeus-doc", position=i, content="x", content_hash=f"z{i}")
        chunk.embedding = _unit(similarity * query + np.sqrt(1 - similarity**2) * other)
        chunk.save()
    index_module.bump_generation()
    readable = [
        (float(np.asarray(vector) @ query), pk)
        for pk, vector in Chunk.objects.filter(document__project__isnull=True).values_list("pk", "embedding")
    ]
    expected = [pk for _, pk in sorted(readable, reverse=True)[:3]]
    got = _candidates_exact(actor=world.actor("other"), project=None, query_vector=query, n=3)
    assert [pk for pk, _ in got] == expected
