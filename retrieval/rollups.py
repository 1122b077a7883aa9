"""Trace rollups: the retrieval scan's evidence, summed per chunk, query neighbourhood, project,
displayed rank and exploration, and kept in step with the traces incrementally, so that a scan costs
what changed since the last one rather than the whole window.

Only searches that got feedback (a feedback call, even one that used nothing: the trace's
``feedback_at``) are evidence, so only their results are counted. Each such result (a
``RetrievalFeedback`` row) falls in one *category*: ``skipped`` (shown, not used, no outcome),
``clicked`` (cited, used or referenced) or its explicit outcome. A result's category changes after it
was counted when a mark changes, and a search's results start counting when its first feedback
arrives.

What was counted is always known, so it can be taken back exactly: every counted row has a
``TraceRollupMark`` holding the category it was counted under.

* new rows: those past the settled watermark without a mark row (ids are not committed in order, so
  a late-committed smaller id is found by its absence; the watermark only moves past rows older than
  the settling margin, which no search's transaction outlives);
* feedback updates rows in place, bumps their ``updated_at`` and the search's ``feedback_at``: the
  searches with either past the last refresh (less the settling margin) are re-counted, subtracting
  what was counted before;
* rows leaving the scan window, and rows erased (``trace_rollups_forget``, called before a deletion),
  are subtracted the same way; a deleted chunk takes its rollups with it (cascade);
* trace rows deleted any other way are noticed (the mark rows left must add up to the rollups) and
  the rollups are rebuilt from the traces. That check is an anti-join over every mark row (seconds at
  ten million traces), so it runs only when something could have put the rollups out of step: a
  statement that deleted trace rows or detached them from their passage leaves a
  ``TraceRollupOutside`` row (database triggers), and the next refresh checks then.

Readers that derive something from the rollups (the retrieval scan's judgements) follow their
*generation*: each refresh or erasure that changed a count adds one, and ``TraceRollupChange`` names the
query neighbourhoods it changed, so that a reader re-reads only those (``trace_rollups_changed``). A
rebuild, or rollups that went with a deleted passage (which neighbourhoods is not known then), resets:
everything counts as changed.

The watermark row is locked while the rollups change: two scans, or a scan and an erasure, never
count the same row twice. Counts are upserted (``INSERT ... ON CONFLICT DO UPDATE``: SQLite and
PostgreSQL alike), so a refresh writes one row per rollup that changed.
"""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.db.models import (
    Case,
    Count,
    Exists,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    Value,
    When,
)
from django.utils import timezone

from core.db import rows_insert
from retrieval.models import (
    RetrievalFeedback,
    RetrievalQuery,
    TraceRollup,
    TraceRollupChange,
    TraceRollupMark,
    TraceRollupOutside,
    TraceRollupState,
)
from retrieval.scope import query_terms

# The categories, in the order of the rollup's count columns (0: a search without feedback, not counted).
NO_FEEDBACK, SKIPPED, CLICKED, HELPFUL, UNHELPFUL, UNSUPPORTED, STALE, WRONG_PROJECT = range(8)
COUNTS = ("skipped", "clicked", "helpful", "unhelpful", "unsupported", "stale", "wrong_project")
_OUTCOME_CATEGORY = {
    "helpful": HELPFUL,
    "unhelpful": UNHELPFUL,
    "unsupported": UNSUPPORTED,
    "stale": STALE,
    "wrong_project": WRONG_PROJECT,
}
MARKED = Q(cited=True) | Q(used_in_answer=True) | Q(user_referenced=True) | ~Q(outcome="unknown")
# Texts whose keys fingerprint query_terms: when it changes (a better stemmer, a filler list), every
# rollup is re-keyed by a rebuild.
_PROBES = (
    "What are the known experimental studies of flutter in swept wings?",
    "papers on heat transfer to blunt bodies in hypersonic flows",
    "Boundary-layer transition, work done on flat plates; effects of roughness",
    "how do cylindrical shells buckle under axial compression loads",
    "please help me with supersonic flutter in detail, thanks",
)
BATCH = 2000
# Searches re-counted per read (about ten results each): fewer, larger reads cost less per row
# (bench/search_scan.py --part scan, ~27,000 searches re-counted after 100k new rows and 10k marks).
RECOUNT_TRACES = 1000
logger = logging.getLogger(__name__)
CHANGE_LOG_GENERATIONS = 100  # generations whose changed neighbourhoods are kept; a reader further behind starts over


@dataclass
class RollupReport:
    """What one refresh did (the scan report carries it)."""

    rebuilt: bool = False
    new_rows: int = 0
    rechecked_rows: int = 0  # re-counted: their search got feedback, or they are within the settling margin
    expired_rows: int = 0
    rollups_written: int = 0
    checked: bool = False  # checked against the mark rows (trace rows were deleted or detached since the last refresh)
    generation: int = 0


def keying_fingerprint() -> str:
    return hashlib.blake2b(repr([query_terms(text) for text in _PROBES]).encode(), digest_size=20).hexdigest()


def neighbourhood(text: str) -> str:
    """The rollup key of a query: its content words (``retrieval.scope.query_terms``), space-separated."""
    return " ".join(query_terms(text))


def _ident(chunk_id: int, project_id: int | None, terms: str, rank: int, explored: bool) -> str:
    return hashlib.blake2b(
        f"{chunk_id}|{project_id or ''}|{terms}|{rank}|{int(explored)}".encode(), digest_size=20
    ).hexdigest()


def _result_whens() -> list[When]:
    """A counted row's category from its own columns: its explicit outcome, else clicked, else skipped."""
    return [
        *[When(outcome=outcome, then=Value(category)) for outcome, category in _OUTCOME_CATEGORY.items()],
        When(Q(cited=True) | Q(used_in_answer=True) | Q(user_referenced=True), then=Value(CLICKED)),
    ]


def _category() -> Case:
    """A row's category now (see the module docstring), in SQL. Whether its search got feedback is
    recorded on the trace (``feedback_at``; the migration that added it filled it in for searches
    marked before): a join, not a look at the search's other rows."""
    return Case(
        When(trace__feedback_at__isnull=True, then=Value(NO_FEEDBACK)),
        *_result_whens(),
        default=Value(SKIPPED),
        output_field=IntegerField(),
    )


def _result_category() -> Case:
    """``_category`` for a row whose search got feedback: read without joining the trace."""
    return Case(*_result_whens(), default=Value(SKIPPED), output_field=IntegerField())


def _with_category(rows: QuerySet) -> QuerySet:
    return rows.annotate(category_now=_category())


def _counted_category() -> Subquery:
    """The category a row was counted under, if it has a mark row (else: no feedback, or not counted)."""
    return Subquery(TraceRollupMark.objects.filter(feedback_id=OuterRef("pk")).values("category")[:1])


class _Deltas:
    """Count changes per rollup, summed in memory, then upserted."""

    def __init__(self) -> None:
        self.rows: dict[tuple, list] = {}  # by (chunk, project, terms, rank, explored)
        self._terms: dict[str, str] = {}
        self.negative = False
        self.neighbourhoods: set[tuple[int | None, str]] = set()  # (project, terms) of the rollups changed

    def add(self, grouped: Iterable[dict], *, category_field: str, sign: int) -> int:
        """Add (``sign`` 1) or take back (-1) ``n`` rows per group: query text, chunk, project, rank,
        exploration and category, from the group's ``category_field``."""
        return self.add_counts(
            (
                ((g["query_text"], g["chunk_id"], g["project_id"], g["rank"], g["explored"]), g[category_field], g["n"])
                for g in grouped
            ),
            sign=sign,
        )

    def add_counts(self, counts: Iterable[tuple[tuple, int, int]], *, sign: int) -> int:
        """``add`` for (``_GROUP`` values, category, n) triples. Rows are kept by their key and
        given their ident when written (a search's rows repeat keys: hashed once each)."""
        total = 0
        rows, known = self.rows, self._terms
        for (text, chunk_id, project_id, rank, explored), category, count in counts:
            terms = known.get(text)
            if terms is None:
                terms = known[text] = neighbourhood(text)
            key = (chunk_id, project_id, terms, rank, explored)
            row = rows.get(key)
            if row is None:
                row = rows[key] = [*key, 0, *([0] * len(COUNTS))]
            n = sign * count
            row[5] += n
            row[5 + category] += n
            total += count
        if sign < 0 and total:
            self.negative = True
        return total

    def apply(self) -> int:
        """Upsert the summed changes; rollups left with nothing shown are deleted."""
        columns = ("ident", "chunk_id", "project_id", "terms", "rank", "explored", "shown", *COUNTS)
        types = ("varchar", "bigint", "bigint", "text", "smallint", "boolean", *["integer"] * (1 + len(COUNTS)))
        table = TraceRollup._meta.db_table
        updates = ", ".join(f"{c} = {table}.{c} + excluded.{c}" for c in ("shown", *COUNTS))
        values = [(_ident(*key), *row) for key, row in self.rows.items() if any(row[5:])]  # cancelled out: nothing
        self.neighbourhoods = {(row[2], row[3]) for row in values}
        rows_insert(
            table=table,
            columns=columns,
            types=types,
            rows=values,
            suffix=f"ON CONFLICT (ident) DO UPDATE SET {updates}",
        )
        if self.negative:
            touched = [v[0] for v in values]
            for start in range(0, len(touched), BATCH):
                TraceRollup.objects.filter(ident__in=touched[start : start + BATCH], shown__lte=0).delete()
        return len(values)


_GROUP = ("query_text", "chunk_id", "project_id", "rank", "explored")


def _grouped(rows: QuerySet, category_field: str) -> Iterable[dict]:
    return rows.values(*_GROUP, category_field).annotate(n=Count("id")).order_by().iterator(chunk_size=BATCH)


def _counted(rows: QuerySet, state: TraceRollupState) -> QuerySet:
    """The rows of ``rows`` the rollups count now, each with the category it was counted under."""
    return (
        rows.filter(id__gt=state.expired_id, chunk__isnull=False)
        .annotate(counted_category=_counted_category())
        .filter(counted_category__isnull=False)
    )


def _subtract(rows: QuerySet, state: TraceRollupState, deltas: _Deltas) -> int:
    """Take back what ``rows`` contributed, and forget their mark rows."""
    counted = _counted(rows, state)
    n = deltas.add(_grouped(counted, "counted_category"), category_field="counted_category", sign=-1)
    TraceRollupMark.objects.filter(feedback_id__in=rows.values("id")).delete()
    return n


def _count(rows: QuerySet, deltas: _Deltas) -> int:
    """Add what ``rows`` contribute now (those of searches with feedback), and record how each was counted.

    What is counted and what is recorded must be the same rows in the same categories: a search that got
    its first feedback (or a row a new mark) between two reads would be recorded without being counted,
    and the next refresh would take back what was never added. On PostgreSQL (READ COMMITTED: each
    statement sees its own snapshot) one statement reads the rows once, records them and returns their
    groups; SQLite serialises writers, so its two statements in the refresh's transaction see the same
    rows."""
    # A result whose passage a re-import changed or removed (chunk NULL) is evidence about no chunk.
    # .order_by(): the rows' default ordering (by search, then rank) would sort every counted row.
    rows = _with_category(rows.filter(trace__feedback_at__isnull=False, chunk__isnull=False)).order_by()
    table = TraceRollupMark._meta.db_table
    if connection.vendor == "postgresql":
        sql, params = rows.values_list("id", "category_now", *_GROUP).query.sql_with_params()
        group = ", ".join(_GROUP)
        with connection.cursor() as cursor:
            cursor.execute(
                f"WITH counted AS MATERIALIZED ({sql}), "  # noqa: S608 - table and column names are the models'
                f"recorded AS (INSERT INTO {table} (feedback_id, category) SELECT id, category_now FROM counted) "
                f"SELECT {group}, category_now, count(*) FROM counted GROUP BY {group}, category_now",
                params,
            )
            fields = (*_GROUP, "category_now", "n")
            return deltas.add(
                (dict(zip(fields, row, strict=True)) for row in cursor), category_field="category_now", sign=1
            )
    n = deltas.add(_grouped(rows, "category_now"), category_field="category_now", sign=1)
    if not n:
        return 0  # nothing counted, nothing to record (the same read again cost a second anti-join)
    sql, params = rows.values_list("id", "category_now").query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {table} (feedback_id, category) SELECT * FROM ({sql}) AS counted", params)  # noqa: S608
    return n


def _recount(traces: list, state: TraceRollupState, deltas: _Deltas) -> int:
    """``_subtract`` then ``_count`` for the rows of the searches ``traces`` past the expired
    watermark, reading the rows once: what each was counted as is taken back, what it is now is
    counted, and its mark row replaced (or dropped: a search without feedback, a result whose passage
    a re-import removed). Returns the rows counted now."""
    if connection.vendor == "postgresql":
        return _recount_in_sql(traces, state, deltas)
    # Which of the searches got feedback is read first, by primary key, and the rows on their own,
    # unordered: a join to the traces (or the traces' default ordering) made PostgreSQL hash the
    # whole trace table for every batch.
    with_feedback = set(
        RetrievalQuery.objects.filter(pk__in=traces, feedback_at__isnull=False).order_by().values_list("pk", flat=True)
    )
    found = list(
        RetrievalFeedback.objects.filter(trace_id__in=traces, id__gt=state.expired_id)
        .annotate(category_now=_result_category(), counted_category=_counted_category())
        .order_by()
        .values_list(
            "id",
            "trace_id",
            "query_text",
            "chunk_id",
            "project_id",
            "rank",
            "explored",
            "category_now",
            "counted_category",
        )
    )
    taken: Counter[tuple] = Counter()
    counted: Counter[tuple] = Counter()
    marks = []
    forgotten = []  # counted before, not now: their mark rows go
    for feedback_id, trace_id, text, chunk_id, project_id, rank, explored, category, before in found:
        if chunk_id is None:
            if before is not None:
                forgotten.append(feedback_id)
            continue  # a result whose passage a re-import removed: evidence about no chunk
        if before is not None:
            taken[(text, chunk_id, project_id, rank, explored, before)] += 1
        if trace_id in with_feedback:
            counted[(text, chunk_id, project_id, rank, explored, category)] += 1
            if category != before:  # a mark row that already says so stays as it is
                marks.append((feedback_id, category))
        elif before is not None:
            forgotten.append(feedback_id)
    fields = (*_GROUP, "category")
    deltas.add(
        ({**dict(zip(fields, key, strict=True)), "n": n} for key, n in taken.items()),
        category_field="category",
        sign=-1,
    )
    n = deltas.add(
        ({**dict(zip(fields, key, strict=True)), "n": n} for key, n in counted.items()),
        category_field="category",
        sign=1,
    )
    for start in range(0, len(forgotten), BATCH):
        TraceRollupMark.objects.filter(feedback_id__in=forgotten[start : start + BATCH]).delete()
    # A row counted again has its mark row replaced in place (one upsert, not a delete and an insert).
    rows_insert(
        table=TraceRollupMark._meta.db_table,
        columns=("feedback_id", "category"),
        types=("bigint", "smallint"),
        rows=marks,
        suffix="ON CONFLICT (feedback_id) DO UPDATE SET category = excluded.category",
    )
    return n


def _recount_in_sql(traces: list, state: TraceRollupState, deltas: _Deltas) -> int:
    """``_recount`` on PostgreSQL in one statement: the rows are read once with how each was counted
    (its mark row, looked up by key: the planner, expecting six times the rows, hashed every mark
    row for a join), the mark rows are replaced where the category changed or dropped (a row re-counted
    unchanged, as most in the settling margin are, writes nothing), and what comes back is the
    rows' groups (by query text, chunk, project, rank, exploration, category before and now), not
    the rows: at ten million traces, re-counting ~100,000 rows a scan cost 44-55 us a row with the
    rows read into Python and the mark rows written back from there."""
    rows = (
        RetrievalFeedback.objects.filter(trace_id__in=traces, id__gt=state.expired_id)
        .annotate(category_now=_result_category())
        .order_by()
        .values_list("id", "trace_id", "category_now", *_GROUP)
    )
    sql, params = rows.query.sql_with_params()
    marks, group = TraceRollupMark._meta.db_table, ", ".join(_GROUP)
    traced = RetrievalQuery._meta.db_table
    # Composed of the models' table and column names and the ORM's SQL; values are parameters.
    statement = (
        f"WITH found AS MATERIALIZED (SELECT r.*, "  # noqa: S608
        f"(SELECT m.category FROM {marks} m WHERE m.feedback_id = r.id) AS before, "
        f"r.trace_id IN (SELECT t.id FROM {traced} t WHERE t.id = ANY(%s) AND t.feedback_at IS NOT NULL) AS counts "
        f"FROM ({sql}) r), "
        f"dropped AS (DELETE FROM {marks} WHERE feedback_id IN (SELECT id FROM found "
        "WHERE before IS NOT NULL AND (chunk_id IS NULL OR NOT counts))), "
        f"recorded AS (INSERT INTO {marks} (feedback_id, category) SELECT id, category_now FROM found "
        "WHERE counts AND chunk_id IS NOT NULL AND before IS DISTINCT FROM category_now "
        "ON CONFLICT (feedback_id) DO UPDATE SET category = excluded.category) "
        f"SELECT {group}, before, category_now, counts, count(*) FROM found WHERE chunk_id IS NOT NULL "
        f"GROUP BY {group}, before, category_now, counts"
    )
    taken: list[tuple[tuple, int, int]] = []
    counted: list[tuple[tuple, int, int]] = []
    with connection.cursor() as cursor:
        cursor.execute(statement, [list(traces), *params])
        for *key, before, category, counts, n in cursor.fetchall():
            if before is not None:
                taken.append((tuple(key), before, n))
            if counts:
                counted.append((tuple(key), category, n))
    deltas.add_counts(taken, sign=-1)
    return deltas.add_counts(counted, sign=1)


def _in_step() -> tuple[bool, int]:
    """Every counted row has its mark row, and the rollups sum exactly those: after dropping the mark
    rows of deleted trace rows, the marks left must add up to the rollups. A deleted chunk takes
    its rollups and its trace rows together, so it stays in step; trace rows deleted on their own
    (not through ``trace_rollups_forget``) do not. Returns whether they are in step, and how many
    mark rows were dropped (counted rows that went together with their rollups)."""
    # Also the mark rows of results whose chunk a re-import removed: the chunk's rollups went with it.
    dropped, _ = TraceRollupMark.objects.exclude(
        Exists(RetrievalFeedback.objects.filter(pk=OuterRef("feedback_id"), chunk__isnull=False))
    ).delete()
    shown = TraceRollup.objects.aggregate(total=Sum("shown"))["total"] or 0
    return shown == TraceRollupMark.objects.count(), dropped


def _log_changes(state: TraceRollupState, deltas: _Deltas, *, reset: bool = False) -> None:
    """A new generation if the rollups changed: the neighbourhoods it changed (or, on a reset, that
    everything may have), and the log trimmed to the last CHANGE_LOG_GENERATIONS."""
    if not (reset or deltas.neighbourhoods):
        return
    state.generation += 1
    if reset:
        state.reset_generation = state.generation
        TraceRollupChange.objects.all().delete()
        return
    TraceRollupChange.objects.bulk_create(
        [
            TraceRollupChange(generation=state.generation, project_id=project_id, terms=terms)
            for project_id, terms in sorted(deltas.neighbourhoods, key=str)
        ],
        batch_size=BATCH,
    )
    TraceRollupChange.objects.filter(generation__lte=state.generation - CHANGE_LOG_GENERATIONS).delete()


def _locked_state() -> TraceRollupState:
    state = TraceRollupState.objects.select_for_update().filter(pk=1).first()
    if state is None:  # a database migrated before the row was seeded, or emptied by a test
        TraceRollupState.objects.get_or_create(pk=1)
        state = TraceRollupState.objects.select_for_update().get(pk=1)
    return state


def trace_rollups_refresh(*, days: int, settle_seconds: int, rebuild: bool = False) -> RollupReport:
    """Bring the rollups up to date with the traces of the last ``days`` days: count new rows,
    re-count searches marked since the last refresh, drop rows that left the window. ``rebuild``
    (or a change of how queries are keyed) counts everything again from nothing."""
    now = timezone.now()
    report = RollupReport()
    with transaction.atomic():
        state = _locked_state()
        fingerprint = keying_fingerprint()
        reset = False
        outside = TraceRollupOutside.objects.order_by("-id").values_list("id", flat=True).first()
        if outside is not None:
            # Trace rows were deleted or detached since the last refresh: by erasure (taken out
            # already), with their passage (its rollups went with it), or by another path.
            if not rebuild and state.keying == fingerprint:
                in_step, dropped = _in_step()
                report.checked = True
                if not in_step:
                    # Counted rows were deleted by a path that did not take them out (an ORM delete
                    # of traces outside erasure): the counts can no longer be corrected row by row.
                    logger.warning("trace rollups out of step with the traces: rebuilding them")
                    rebuild = True
                elif dropped:
                    reset = True  # a passage's rollups went with it: which neighbourhoods, unknown
            TraceRollupOutside.objects.filter(id__lte=outside).delete()
        if rebuild or state.keying != fingerprint:
            TraceRollup.objects.all().delete()
            TraceRollupMark.objects.all().delete()
            state.settled_id = state.expired_id = 0
            state.changed_since = None
            state.keying = fingerprint
            report.rebuilt = reset = True
        deltas = _Deltas()
        # 1. Rows older than the window: ids grow with time, so the window starts at the first id in it.
        first_in_window = (
            RetrievalFeedback.objects.filter(id__gt=state.expired_id, created_at__gte=now - timedelta(days=days))
            .order_by("id")
            .values_list("id", flat=True)
            .first()
        )
        if first_in_window is None:
            first_in_window = (RetrievalFeedback.objects.order_by("-id").values_list("id", flat=True).first() or 0) + 1
        if first_in_window - 1 > state.expired_id:
            leaving = RetrievalFeedback.objects.filter(id__gt=state.expired_id, id__lt=first_in_window)
            report.expired_rows = _subtract(leaving, state, deltas)
            state.expired_id = first_in_window - 1
            state.settled_id = max(state.settled_id, state.expired_id)
        # 2. Searches that got feedback since the last refresh (or had a row marked): take back what
        # their rows were counted as, count them as they are now.
        if state.changed_since is not None:
            since = state.changed_since - timedelta(seconds=settle_seconds)
            touched = sorted(
                {
                    *RetrievalQuery.objects.filter(feedback_at__gte=since).values_list("pk", flat=True),
                    # .order_by(): the traces' default ordering would join (and sort) every search.
                    *RetrievalFeedback.objects.filter(updated_at__gte=since, id__gt=state.expired_id)
                    .order_by()
                    .values_list("trace_id", flat=True),
                }
            )
            for start in range(0, len(touched), RECOUNT_TRACES):
                report.rechecked_rows += _recount(touched[start : start + RECOUNT_TRACES], state, deltas)
        # 3. Rows not counted yet: past the watermark, without a mark row.
        fresh = RetrievalFeedback.objects.filter(id__gt=state.settled_id).exclude(
            Exists(TraceRollupMark.objects.filter(feedback_id=OuterRef("pk")))
        )
        report.new_rows = _count(fresh, deltas)
        report.rollups_written = deltas.apply()
        _log_changes(state, deltas, reset=reset)
        # 4. Settle: a row created before now - settle_seconds is committed by now (no search holds
        # its transaction that long), so every id up to the newest such row has been counted.
        settled = (
            RetrievalFeedback.objects.filter(
                id__gt=state.settled_id, created_at__lt=now - timedelta(seconds=settle_seconds)
            )
            .order_by("-id")
            .values_list("id", flat=True)
            .first()
        )
        if settled is not None:
            state.settled_id = settled
        state.changed_since = now
        state.save()
        report.generation = state.generation
    return report


def trace_rollups_forget(*, rows: QuerySet) -> int:
    """Take the given trace rows out of the rollups; call it in the transaction that deletes them
    (erasure, retention), before the delete. Returns how many counted rows were taken out."""
    with transaction.atomic():
        state = _locked_state()
        deltas = _Deltas()
        n = _subtract(rows, state, deltas)
        deltas.apply()
        if deltas.neighbourhoods:
            _log_changes(state, deltas)
            state.save(update_fields=["generation", "reset_generation", "updated_at"])
    return n


def trace_rollups_changed(*, since: int) -> tuple[int, set[tuple[int | None, str]] | None]:
    """The rollups' generation now, and the (project, terms) neighbourhoods whose rollups changed
    after generation ``since``; None when that is not known (a reset since, ``since`` 0, or further
    back than the log keeps): everything may have changed. Read the generation before the rollups:
    what is read after is at least that new."""
    state = TraceRollupState.objects.filter(pk=1).first()
    if state is None:
        return 0, None
    if since <= 0 or since > state.generation or since < state.reset_generation:
        return state.generation, None
    if since < state.generation - CHANGE_LOG_GENERATIONS:  # the log no longer reaches back
        return state.generation, None
    changed = TraceRollupChange.objects.filter(generation__gt=since, generation__lte=state.generation)
    return state.generation, set(changed.values_list("project_id", "terms").distinct())


def trace_rollups_full(*, days: int, now: datetime | None = None) -> dict[str, list]:
    """The rollups as a from-scratch count of the traces in the window would make them (by ident):
    what the incremental refresh must equal. For tests and the consistency check; reads every row."""
    state = TraceRollupState.objects.filter(pk=1).first()
    rows = RetrievalFeedback.objects.filter(
        id__gt=state.expired_id if state else 0, trace__feedback_at__isnull=False, chunk__isnull=False
    )
    deltas = _Deltas()
    deltas.add(_grouped(_with_category(rows), "category_now"), category_field="category_now", sign=1)
    return {_ident(*key): row for key, row in deltas.rows.items() if any(row[5:])}
