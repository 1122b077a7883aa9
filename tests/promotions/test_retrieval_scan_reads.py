"""How the retrieval scan reads what it judges: the evidence read through a cursor and summed per group
by numpy is what grouping every rollup row in Python gives (the read it replaced, kept here as the
oracle for the grouping and its order; what a group counts is the scanner's ``evidence_counts``)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from accounts.models import Project
from promotions.scanners.retrieval import _Evidence, _evidence, _group_order, evidence_counts
from retrieval.conf import retrieval_settings
from retrieval.models import TraceRollup
from retrieval.rollups import _ident

ROW = (
    *("chunk_id", "project_id", "terms", "rank", "explored"),
    *("shown", "skipped", "clicked", "helpful", "unhelpful", "unsupported"),
)


def rowwise(*querysets, k, only=None) -> _Evidence:
    """The scan's evidence as it was read before: every rollup row into Python, summed there."""
    found = [row for rows in querysets for row in rows.values_list(*ROW) if only is None or (row[1], row[2]) in only]
    keys = sorted({(row[0], row[1], row[2]) for row in found}, key=_group_order)
    index = {key: i for i, key in enumerate(keys)}
    group = np.array([index[(row[0], row[1], row[2])] for row in found], dtype=np.int64)
    values = np.array([row[3:] for row in found], dtype=np.int64).reshape(len(found), len(ROW) - 3)
    rank, _explored, _shown, skipped, clicked, *_ = values.T

    def total(column):
        out = np.zeros(len(keys), dtype=np.int64)
        np.add.at(out, group, column)
        return out

    by_rank = np.zeros((len(keys), k + 1), dtype=np.int64)
    np.add.at(by_rank, (group, np.where((rank >= 1) & (rank <= k), rank - 1, k)), skipped + clicked)
    counts = evidence_counts(total, values.T)
    return _Evidence(keys, by_rank, counts)


def same(a: _Evidence, b: _Evidence) -> None:
    assert a.keys == b.keys
    assert a.by_rank.dtype == b.by_rank.dtype
    assert np.array_equal(a.by_rank, b.by_rank)
    assert set(a.counts) == set(b.counts)
    for name in a.counts:
        assert np.array_equal(a.counts[name], b.counts[name]), name


@pytest.fixture
def rollups(world, settings):
    """Rollups over chunks, two projects and none, neighbourhoods whose order differs between byte
    and dictionary collations, displayed ranks within K (4 here), beyond it and 0, natural and explored."""
    settings.RETRIEVAL_MAX_K = 4
    other = Project.objects.create(name="Other", slug="other")
    rows = []
    counter = itertools.count(1)
    for chunk_id, project_id, terms, rank, explored in itertools.product(
        (3, 11, 200),
        (None, world.project.pk, other.pk),
        ("flutter wing", "Flutter", "flutter-wing", "b", "a b", "ä"),
        (0, 1, 2, 4, 5, 9),
        (False, True),
    ):
        n = next(counter)
        if n % 3 == 0:
            continue  # not every combination: some groups lack some ranks
        counts = [n % 5, n % 3, n % 2, (n // 2) % 3, n % 4 == 0, n % 7 == 0]
        rows.append(
            TraceRollup(
                ident=_ident(chunk_id, project_id, terms, rank, explored),
                chunk_id=chunk_id,
                project_id=project_id,
                terms=terms,
                rank=rank,
                explored=explored,
                shown=sum(counts),
                skipped=counts[0],
                clicked=counts[1],
                helpful=counts[2],
                unhelpful=counts[3],
                unsupported=int(counts[4]),
                stale=int(counts[5]),
            )
        )
    TraceRollup.objects.bulk_create(rows)
    return other


def test_the_evidence_summed_by_numpy_is_the_rows_summed_one_by_one(world, rollups):
    same(_evidence(TraceRollup.objects.all()), rowwise(TraceRollup.objects.all(), k=4))
    some = TraceRollup.objects.filter(chunk_id__in=[3, 200])
    same(_evidence(some), rowwise(some, k=4))


def test_the_evidence_of_some_neighbourhoods_read_in_batches_is_the_same(world, rollups):
    only = {(None, "Flutter"), (world.project.pk, "a b"), (rollups.pk, "ä"), (None, "b")}
    batches = [
        TraceRollup.objects.filter(terms__in=["Flutter", "a b"]),
        TraceRollup.objects.filter(terms__in=["ä", "b"]),
    ]
    expected = rowwise(*batches, k=4, only=only)
    assert len(expected.keys) == 12
    same(_evidence(*batches, only=only), expected)


def test_nothing_read_is_no_evidence(world):
    found = _evidence(TraceRollup.objects.all())
    assert found.keys == []
    assert found.by_rank.shape == (0, retrieval_settings.RETRIEVAL_MAX_K + 1)
    assert all(len(column) == 0 for column in found.counts.values())
