"""Controlled exploration: a share of searches shows a random draw below the protected top results,
and the trace says so."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from django.test import override_settings

from accounts.models import ProjectMembership
from config.exceptions import AccessDenied, ApplicationError
from retrieval import exploration
from retrieval.models import RetrievalFeedback, RetrievalProjectSettings, RetrievalQuery
from retrieval.selectors import chunks_ranked
from retrieval.services import DocumentInput, documents_import, project_settings_set

TOPICS = [
    "flutter of swept wings at transonic speed",
    "laminar boundary layer transition on a flat plate",
    "heat transfer in hypersonic stagnation flow",
    "buckling of thin cylindrical shells under axial load",
    "shock wave interaction with a turbulent boundary layer",
    "supersonic flow around a slender cone",
    "creep of metals at high temperature",
    "vibration of cantilever plates",
    "wind tunnel interference on wing models",
    "panel flutter in supersonic flow",
    "ablation of re-entry heat shields",
    "unsteady lift of an oscillating airfoil",
    "jet noise of a subsonic nozzle",
    "compressible mixing layers",
    "stability of a rotating shaft",
    "aerodynamic heating of wing leading edges",
    "wake of a bluff body",
    "elastic deformation of swept wings under load",
    "skin friction in turbulent pipe flow",
    "sonic boom propagation",
]


@pytest.fixture
def library(world, embedder):
    documents_import(
        actor=world.actor("service"),
        items=[
            DocumentInput(id=f"doc-{i}", title=topic, raw_text=f"A study of {topic}.") for i, topic in enumerate(TOPICS)
        ],
    )
    # Project documents close to the query: exploration must never show them to outsiders.
    documents_import(
        actor=world.actor("service"),
        items=[
            DocumentInput(
                id=f"apollo-{i}", project_slug="apollo", title="Apollo", raw_text=f"Apollo wing flutter test {i}."
            )
            for i in range(5)
        ],
    )


QUERY = "wing flutter and aeroelastic loads"


def search(client, **body):
    response = client.post("/api/v1/retrieval/search", {"query": QUERY, "k": 10, **body}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def page(body) -> list[str]:
    return [r["chunk_id"] for r in body["results"]]


def traced(body) -> list[RetrievalFeedback]:
    return list(RetrievalFeedback.objects.filter(trace_id=body["trace_id"]).select_related("chunk").order_by("rank"))


def test_arrange_keeps_the_top_and_draws_the_rest_from_the_pool():
    ranked = list("abcdefghijklmnopqrst")  # 20 in score order; a page of 10
    shown_at_4 = set()
    for seed in range(200):
        arranged = exploration.arrange(ranked, k=10, first=4, seed=seed)
        assert [item for item, _, _ in arranged[:3]] == ["a", "b", "c"]
        assert [flag for _, _, flag in arranged] == [False] * 3 + [True] * 7
        assert all(ranked[natural - 1] == item for item, natural, _ in arranged)
        items = [item for item, _, _ in arranged]
        assert len(set(items)) == 10
        assert set(items[3:]) <= set(ranked[3:])
        shown_at_4.add(items[3])
        assert arranged == exploration.arrange(ranked, k=10, first=4, seed=seed)  # deterministic
    assert shown_at_4 == set(ranked[3:])  # every candidate reaches the first explored rank


def test_arrange_with_a_short_result_list():
    assert exploration.arrange(list("ab"), k=10, first=4, seed=1) == [("a", 1, False), ("b", 2, False)]
    arranged = exploration.arrange(list("abcde"), k=10, first=4, seed=1)
    assert [item for item, _, _ in arranged[:3]] == ["a", "b", "c"]
    assert len(arranged) == 5


@override_settings(RETRIEVAL_EXPLORE_SHARE=0.0)
def test_share_zero_never_explores(world, library):
    first = search(world.client("owner"))
    for _ in range(5):
        body = search(world.client("owner"))
        assert page(body) == page(first)
        trace = RetrievalQuery.objects.get(pk=body["trace_id"])
        assert (trace.explored, trace.exploration_share, trace.exploration_seed) == (False, 0.0, None)
        assert (trace.exploration_first, trace.exploration_pool) == (None, None)
        assert all(not row.explored and row.natural_rank == row.rank for row in traced(body))


@override_settings(RETRIEVAL_EXPLORE_SHARE=1.0, RETRIEVAL_EXPLORE_POOL=10)
def test_share_one_always_explores_below_the_top_three(world, library):
    with override_settings(RETRIEVAL_EXPLORE_SHARE=0.0):
        natural = page(search(world.client("owner")))
    pages = []
    for _ in range(8):
        body = search(world.client("owner"))
        shown = page(body)
        pages.append(tuple(shown))
        assert shown[:3] == natural[:3]  # the top 3 never move
        assert [r["rank"] for r in body["results"]] == list(range(1, 11))  # as displayed
        trace = RetrievalQuery.objects.get(pk=body["trace_id"])
        assert trace.explored
        assert trace.exploration_share == 1.0
        assert trace.exploration_seed is not None
        assert (trace.exploration_first, trace.exploration_pool) == (4, 10)
        rows = traced(body)
        assert [row.chunk.chunk_id for row in rows] == shown  # the trace is the displayed order
        assert [row.explored for row in rows] == [False] * 3 + [True] * 7
        assert all(natural[row.natural_rank - 1] == row.chunk.chunk_id for row in rows if row.natural_rank <= 10)
        assert any(row.natural_rank != row.rank for row in rows)
    assert len(set(pages)) > 1
    assert any(set(p) - set(natural) for p in pages)  # results past the page were shown


@override_settings(RETRIEVAL_EXPLORE_SHARE=1.0)
def test_the_recorded_seed_reproduces_the_page(world, library):

    body = search(world.client("owner"))
    trace = RetrievalQuery.objects.get(pk=body["trace_id"])

    ranked = chunks_ranked(
        actor=world.actor("owner"),
        query_vector=np.frombuffer(bytes(trace.embedding), dtype=np.float32),
        project=None,
        k=20,
        query_text=QUERY,
    )
    arranged = exploration.arrange(ranked, k=10, first=4, seed=trace.exploration_seed)
    assert [hit.chunk_id for hit, _, _ in arranged] == [row.chunk_id for row in traced(body)]


@override_settings(RETRIEVAL_EXPLORE_SHARE=0.5, RETRIEVAL_EXPLORE_SEED=7)
def test_a_configured_seed_makes_the_draws_repeat(world, library):
    def run() -> list[list[str]]:
        exploration.reseed()
        return [page(search(world.client("owner"))) for _ in range(8)]

    first = run()
    assert run() == first
    explored = RetrievalQuery.objects.filter(explored=True).count()
    assert 0 < explored < 16  # a share, not all or nothing


@override_settings(RETRIEVAL_EXPLORE_SHARE=1.0)
def test_exploration_never_shows_what_the_caller_may_not_read(world, library):
    for _ in range(10):
        assert not any(cid.startswith("apollo") for cid in page(search(world.client("other"))))
    shown = set()
    for _ in range(10):
        shown |= set(page(search(world.client("member"), project="apollo")))
    assert any(cid.startswith("apollo") for cid in shown)


def test_a_project_overrides_the_default_share(world, library):
    with override_settings(RETRIEVAL_EXPLORE_SHARE=0.0):
        project_settings_set(actor=world.actor("admin"), project_slug="apollo", exploration_share=1.0)
        body = search(world.client("member"), project="apollo")
        assert RetrievalQuery.objects.get(pk=body["trace_id"]).explored
        body = search(world.client("member"))  # no project: the default
        assert not RetrievalQuery.objects.get(pk=body["trace_id"]).explored
    with override_settings(RETRIEVAL_EXPLORE_SHARE=1.0):
        project_settings_set(actor=world.actor("admin"), project_slug="apollo", exploration_share=0.0)
        body = search(world.client("member"), project="apollo")
        assert not RetrievalQuery.objects.get(pk=body["trace_id"]).explored
        project_settings_set(actor=world.actor("admin"), project_slug="apollo", exploration_share=None)
        body = search(world.client("member"), project="apollo")
        assert RetrievalQuery.objects.get(pk=body["trace_id"]).explored  # back to the default


def test_who_may_set_a_projects_share(world):
    for role in ("member", "other"):
        with pytest.raises(AccessDenied):
            project_settings_set(actor=world.actor(role), project_slug="apollo", exploration_share=0.2)
    ProjectMembership.objects.filter(user=world.member).update(role=ProjectMembership.Role.ADMIN)
    project_settings_set(actor=world.actor("member"), project_slug="apollo", exploration_share=0.2)
    project_settings_set(actor=world.actor("service"), project_slug="apollo", exploration_share=0.3)
    assert RetrievalProjectSettings.objects.get(project=world.project).exploration_share == 0.3
    with pytest.raises(ApplicationError) as error:
        project_settings_set(actor=world.actor("admin"), project_slug="apollo", exploration_share=1.5)
    assert "exploration_share" in error.value.fields
    with pytest.raises(ApplicationError):
        project_settings_set(actor=world.actor("admin"), project_slug="nowhere", exploration_share=0.1)
    assert RetrievalProjectSettings.objects.get(project=world.project).exploration_share == 0.3


def test_the_share_is_drawn_per_search():
    with override_settings(RETRIEVAL_EXPLORE_SEED=3):
        exploration.reseed()
        coins = [exploration._draw()[0] for _ in range(1000)]
    assert 0.4 < sum(c < 0.5 for c in coins) / len(coins) < 0.6
    assert random.Random(3).random() == pytest.approx(coins[0])


def put_settings(client, body, slug="apollo"):
    return client.put(f"/api/v1/retrieval/projects/{slug}/settings", body, format="json")


def test_the_settings_endpoint_sets_and_clears_the_share(world):
    with override_settings(RETRIEVAL_EXPLORE_SHARE=0.05):
        response = put_settings(world.client("admin"), {"exploration_share": 0.25})
        assert response.status_code == 200, response.content
        assert response.json() == {"project": "apollo", "exploration_share": 0.25, "effective_exploration_share": 0.25}
        ProjectMembership.objects.filter(user=world.owner).update(role=ProjectMembership.Role.ADMIN)
        response = put_settings(world.client("owner"), {"exploration_share": None})
        assert response.status_code == 200, response.content
        assert response.json()["effective_exploration_share"] == 0.05


@pytest.mark.parametrize(
    ("body", "slug", "field"),
    [
        ({"exploration_share": 1.5}, "apollo", "exploration_share"),
        ({"exploration_share": -0.1}, "apollo", "exploration_share"),
        ({"exploration_share": "lots"}, "apollo", "exploration_share"),
        ({}, "apollo", "exploration_share"),
        ({"exploration_share": 0.1, "share": 1}, "apollo", "share"),
        ({"exploration_share": 0.1}, "nowhere", "project"),
    ],
)
def test_the_settings_endpoint_refuses_bad_input(world, body, slug, field):
    response = put_settings(world.client("admin"), body, slug=slug)
    assert response.status_code == 400, response.content
    assert field in json.dumps(response.json())
    assert not RetrievalProjectSettings.objects.exists()
