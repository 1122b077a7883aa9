"""Ranking many searches at once (the impact preview): the same ranking as one at a time, in a number
of queries that does not grow with the number of searches."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import Project
from retrieval.models import Chunk
from retrieval.selectors import Replay, rank_chunks, rank_chunks_many
from retrieval.services import DocumentInput, documents_import
from tests.factories import RetrievalWeightFactory

DOCS = {
    "flutter": "Flutter of aircraft wings: aeroelastic coupling of bending and torsion.",
    "tunnel": "Wind tunnel tests of wing flutter with control surfaces.",
    "shells": "Buckling of thin cylindrical shells under axial compression.",
    "heating": "Aerodynamic heating of blunt bodies in hypersonic flow.",
    "layers": "Laminar boundary layer transition on a flat plate.",
}
QUERIES = [
    "wing flutter experiments",
    "buckling of shells",
    "hypersonic heating",
    "boundary layer transition",
    "aeroelastic torsion",
]


@pytest.fixture
def corpus(world, embedder):
    documents_import(actor=world.actor("service"), items=[DocumentInput(id=k, raw_text=v) for k, v in DOCS.items()])
    documents_import(
        actor=world.actor("service"),
        items=[DocumentInput(id="apollo-flutter", project_slug="apollo", raw_text="Apollo's flutter test campaign.")],
    )
    chunks = {c.document_id: c for c in Chunk.objects.all()}
    # Weights of every scope, so that the batched path has something to multiply.
    RetrievalWeightFactory(chunk=chunks["shells"], scope="global", multiplier=1.5)
    RetrievalWeightFactory(chunk=chunks["heating"], scope="project", project=world.project, multiplier=0.65)
    return chunks


def replays(world, embedder, n):
    projects = [None, world.project, Project.objects.get_or_create(slug="zeus", defaults={"name": "Zeus"})[0]]
    return [
        Replay(
            query_vector=embedder.embed_one(QUERIES[i % len(QUERIES)]),
            project=projects[i % 3],
            k=3 + i % 3,
            query_text=QUERIES[i % len(QUERIES)],
        )
        for i in range(n)
    ]


def test_many_searches_rank_as_each_alone(world, corpus, embedder):
    batch = replays(world, embedder, 10)
    extra = {corpus["layers"].pk: 1.5}
    for boost in (None, extra):
        alone = [
            rank_chunks(query_vector=r.query_vector, project=r.project, k=r.k, query_text=r.query_text, extra=boost)
            for r in batch
        ]
        assert rank_chunks_many(replays=batch, extra=boost) == alone
    # A project's document is never ranked for a search within another project.
    apollo = corpus["apollo-flutter"].pk
    ranked = rank_chunks_many(replays=batch)
    assert all(
        apollo not in ranking
        for r, ranking in zip(batch, ranked, strict=True)
        if r.project and r.project.slug == "zeus"
    )
    assert any(apollo in ranking for r, ranking in zip(batch, ranked, strict=True) if r.project == world.project)
    assert rank_chunks_many(replays=[]) == []


def test_the_number_of_queries_does_not_grow_with_the_searches(world, corpus, embedder):
    few, many = replays(world, embedder, 2), replays(world, embedder, 40)
    rank_chunks_many(replays=few)  # the in-process index is built once, outside the count
    with CaptureQueriesContext(connection) as small:
        rank_chunks_many(replays=few)
    with CaptureQueriesContext(connection) as large:
        rank_chunks_many(replays=many)
    assert len(large) == len(small)
