"""Erasing a user from retrieval: their search traces (queries in their words) and marks."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Q

from accounts.models import User
from retrieval.models import RetrievalFeedback, RetrievalQuery
from retrieval.rollups import trace_rollups_forget


def retrieval_user_trace_ids(*, user: User) -> set[str]:
    return {str(pk) for pk in RetrievalQuery.objects.filter(user=user).values_list("pk", flat=True)}


def retrieval_erase_user(*, user: User, counts: dict[str, int]) -> None:
    """Delete the user's search traces and their results' marks (weights already learned stay:
    they hold no query text and no user, see the README's erasure section)."""
    with transaction.atomic():
        # The scan's rollups stop counting them in the same transaction (nothing else knows they went).
        trace_rollups_forget(rows=RetrievalFeedback.objects.filter(Q(user=user) | Q(trace__user=user)))
        counts[RetrievalFeedback._meta.db_table], _ = RetrievalFeedback.objects.filter(user=user).delete()
        _, per_model = RetrievalQuery.objects.filter(user=user).delete()
        counts[RetrievalQuery._meta.db_table] = per_model.get("retrieval.RetrievalQuery", 0)
        counts[RetrievalFeedback._meta.db_table] += per_model.get("retrieval.RetrievalFeedback", 0)
