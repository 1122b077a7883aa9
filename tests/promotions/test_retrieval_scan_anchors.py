"""The anchors of a query-scoped weight: what ``_anchors`` picks (one query per batch of chunks; on
PostgreSQL the newest results of each (chunk, project) pair read through the index) is what reading
each pair's newest results one by one gives."""

from __future__ import annotations

import itertools
from collections import defaultdict

import pytest
from django.db import connection

from accounts.models import Project
from promotions.scanners import retrieval as scanner
from promotions.scanners.retrieval import Decision, _anchors
from retrieval.models import Chunk, RetrievalFeedback, RetrievalQuery
from retrieval.rollups import neighbourhood
from tests.factories import ChunkFactory, embedding

# Texts that differ only in case or spacing are one query; "flutter wing" and "wing flutter" are two
# queries of one neighbourhood.
TEXTS = [
    "wing flutter tests",
    "Wing  Flutter tests",
    "wing flutter TESTS ",
    "flutter wing tests",
    "boundary layer transition",
    "Boundary layer  transition",
    "heat transfer in hypersonic flow",
    "buckling of cylindrical shells",
    "shock wave boundary layer",
    "lift of slender bodies",
    "BUCKLING of cylindrical shells",
]


def oracle(decisions: list[Decision], expired_id: int, *, limit: int, results: int) -> dict[int, list]:
    """The anchors read one (chunk, project) pair at a time, row by row, newest first: a chunk's pairs
    by project, no project last; each pair's ``results`` newest results newer than ``expired_id``;
    the first result of each query (case and spacing aside) whose neighbourhood is wanted, until the
    chunk has ``limit``."""
    wanted = {(d.chunk_id, d.project_id): set(d.keys) for d in decisions if d.scope == "query"}
    found: dict[int, list] = {chunk_id: [] for chunk_id, _ in wanted}
    for chunk_id, project_id in sorted(wanted, key=lambda p: (p[0], p[1] is None, p[1] or 0)):
        rows = RetrievalFeedback.objects.filter(chunk_id=chunk_id, id__gt=expired_id)
        rows = rows.filter(project__isnull=True) if project_id is None else rows.filter(project_id=project_id)
        seen = set()
        for row in rows.order_by("-id")[:results]:
            normal = " ".join(row.query_text.lower().split())
            if len(found[chunk_id]) >= limit or normal in seen:
                continue
            seen.add(normal)
            terms = neighbourhood(row.query_text)
            if terms in wanted[(chunk_id, project_id)]:
                found[chunk_id].append((str(row.trace_id), terms.split()))
    return found


def record(rows: list[tuple[int, int | None, str]]) -> None:
    """One search per (chunk id, project id, query text), its result recorded in this order."""
    vector = embedding(0)
    traces = RetrievalQuery.objects.bulk_create(
        RetrievalQuery(query_text=text, project_id=project_id, embedding=vector, k=10) for _, project_id, text in rows
    )
    documents = dict(Chunk.objects.filter(pk__in={row[0] for row in rows}).values_list("pk", "document_id"))
    RetrievalFeedback.objects.bulk_create(
        RetrievalFeedback(
            trace=trace,
            project_id=project_id,
            query_text=text,
            document_id=documents[chunk_id],
            chunk_id=chunk_id,
            rank=1,
            score=0.5,
        )
        for trace, (chunk_id, project_id, text) in zip(traces, rows, strict=True)
    )


def query_decision(chunk_id: int, project_id: int | None, *texts: str) -> Decision:
    keys = sorted({neighbourhood(t) for t in texts})
    return Decision(chunk_id, project_id, "helpful", "query", 1.2, 3.0, [], keys=keys)


@pytest.fixture
def varied(world):
    """Four chunks with results in two projects and in none, in interleaved order (ids of one pair
    are not contiguous), texts repeating exactly and up to case and spacing; and the decisions: one
    chunk with a pair in a project and one without, a pair without results, a decision that is not
    query-scoped, a chunk with results but no decision."""
    other = Project.objects.create(name="Other", slug="other")
    chunks = [ChunkFactory().pk for _ in range(4)]
    projects = [world.project.pk, other.pk, None]
    rows = []
    for i in range(12):
        for j, (chunk_id, project_id) in enumerate(itertools.product(chunks, projects)):
            if (i + j) % 5 != 4:  # not every pair in every round
                rows.append((chunk_id, project_id, TEXTS[(i * 7 + j * 3) % len(TEXTS)]))
    record(rows)
    a, b, c, d = chunks
    decisions = [
        query_decision(a, world.project.pk, *TEXTS),
        query_decision(a, None, *TEXTS[:4]),
        query_decision(b, other.pk, TEXTS[0], TEXTS[4], TEXTS[7]),
        query_decision(b, None, TEXTS[6]),
        query_decision(c, None, *TEXTS[4:]),
        query_decision(d, 10**9, *TEXTS),  # no such project: no results
        Decision(d, None, "stale", "global", 0.8, 5.0, [], keys=[]),
    ]
    return decisions, sorted(RetrievalFeedback.objects.values_list("id", flat=True))


@pytest.mark.parametrize("limit", [2, 5, 200])
@pytest.mark.parametrize("results", [3, 9, 2000])
@pytest.mark.parametrize("expired", [0, 0.5, 0.9])
def test_the_anchors_are_each_pairs_newest_results_read_row_by_row(
    world, varied, settings, monkeypatch, limit, results, expired
):
    decisions, ids = varied
    expired_id = ids[int(expired * len(ids)) - 1] if expired else 0
    settings.RETRIEVAL_SCAN_MAX_ANCHORS = limit
    monkeypatch.setattr(scanner, "ANCHOR_RESULTS", results)
    monkeypatch.setattr(scanner, "ANCHOR_BATCH", 2)  # the two pairs of a chunk in one batch, chunks in two
    expected = oracle(decisions, expired_id, limit=limit, results=results)
    assert _anchors(decisions, expired_id) == expected
    assert any(expected.values())


def test_the_window_limit_and_expiry_change_what_is_picked(world, varied, settings, monkeypatch):
    """The data above is not too easy: the limits it is read with change the anchors."""
    decisions, ids = varied
    settings.RETRIEVAL_SCAN_MAX_ANCHORS = 200
    every = oracle(decisions, 0, limit=200, results=2000)
    assert oracle(decisions, 0, limit=200, results=3) != every
    assert oracle(decisions, ids[len(ids) // 2], limit=200, results=2000) != every
    assert oracle(decisions, 0, limit=2, results=2000) != every
    by_chunk = defaultdict(list)
    for d in decisions:
        by_chunk[d.chunk_id].append(d.project_id)
    assert any(len(projects) == 2 for projects in by_chunk.values())


def test_results_beyond_the_two_thousand_newest_of_a_pair_are_not_read(world):
    """At the real window: the 2,000 newest results of a pair hide its older ones; another pair of the
    chunk keeps its own 2,000."""
    chunk = ChunkFactory().pk
    old, new, elsewhere = "buckling of cylindrical shells", "lift of slender bodies", "heat transfer in hypersonic flow"
    rows = [(chunk, world.project.pk, old), (chunk, None, elsewhere)]
    rows += [(chunk, world.project.pk, new if i % 2 else new.upper()) for i in range(scanner.ANCHOR_RESULTS)]
    record(rows)
    decisions = [query_decision(chunk, world.project.pk, old, new)]
    expected = oracle(decisions, 0, limit=20, results=scanner.ANCHOR_RESULTS)
    found = _anchors(decisions, 0)
    assert found == expected
    assert [terms for _, terms in found[chunk]] == [neighbourhood(new).split()]
    newest = RetrievalFeedback.objects.filter(chunk_id=chunk, project=world.project).order_by("-id").first()
    assert found[chunk][0][0] == str(newest.trace_id)
    decisions = [query_decision(chunk, None, elsewhere)]
    assert _anchors(decisions, 0) == oracle(decisions, 0, limit=20, results=scanner.ANCHOR_RESULTS)


def test_no_query_scoped_decision_reads_nothing(world, django_assert_num_queries):
    with django_assert_num_queries(0):
        assert _anchors([Decision(1, None, "stale", "global", 0.8, 5.0, [])], 0) == {}


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL reads the anchors with bitmap scans off")
def test_bitmap_scans_are_off_for_the_anchors_read_only(world, varied):
    decisions, _ = varied
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('enable_bitmapscan', 'on', true)")
        assert _anchors(decisions, 0)
        cursor.execute("SHOW enable_bitmapscan")
        assert cursor.fetchone() == ("on",)
