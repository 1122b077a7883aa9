import django_filters
from django.db.models import BigIntegerField, CharField, Q, QuerySet
from django.db.models.functions import Cast

from config.api import IsoDateTimeFilter
from promotions.destinations import WRITERS
from promotions.models import (
    LearningPromotion,
    PromotionPath,
    PromotionStatus,
    RiskLevel,
    Scanner,
    ScanRun,
    ScanStatus,
)
from promotions.summaries import type_label
from retrieval.models import Chunk

# A search reads at most this many words of the query (each must match somewhere in the row).
SEARCH_MAX_WORDS = 8
# What a row says, as stored: its learning's texts (by type), its subject and its project.
SEARCH_LEARNING_KEYS = (
    "title",
    "prevention_prompt",
    "content",
    "description",
    "workflow_name",
    "trigger_pattern",
    "pattern",
    "target",
    "document",
    "tool_name",
)


def promotion_search(queryset: QuerySet[LearningPromotion], words: str) -> QuerySet[LearningPromotion]:
    """Promotions whose row says every word of ``words`` (case-insensitively): in the learning's
    title, prompt, content or description, the project, or a weight's passage; or whose subject is
    the word (an id pasted whole). One query: the passages are a subquery over the chunks that
    weights are about, never over every chunk."""
    # A weight's subject is its chunk's id (digits: the writer checks it), so the cast is safe.
    weighted = (
        LearningPromotion.objects.filter(promotion_type="retrieval_weight", subject_type="chunk")
        .annotate(chunk_pk=Cast("subject_id", BigIntegerField()))
        .values("chunk_pk")
    )
    for word in words.split()[:SEARCH_MAX_WORDS]:
        passages = (
            Chunk.objects.filter(pk__in=weighted, content__icontains=word)
            .annotate(as_text=Cast("pk", CharField()))
            .values("as_text")
        )
        matches = (
            Q(subject_id__iexact=word)
            | Q(project__slug__icontains=word)
            | Q(project__name__icontains=word)
            | Q(promotion_type="retrieval_weight", subject_type="chunk", subject_id__in=passages)
        )
        for key in SEARCH_LEARNING_KEYS:
            matches |= Q(**{f"proposed_learning__{key}__icontains": word})
        queryset = queryset.filter(matches)
    return queryset


class PromotionFilter(django_filters.FilterSet):
    """The ledger's filters, for the API's list and the console's queue alike."""

    q = django_filters.CharFilter(method="search", label="Search")
    status = django_filters.ChoiceFilter(choices=PromotionStatus.choices)
    promotion_type = django_filters.ChoiceFilter(
        choices=[(name, type_label(name)) for name in sorted(WRITERS)], label="Type"
    )
    subject_type = django_filters.CharFilter()
    subject_id = django_filters.CharFilter()
    project = django_filters.CharFilter(field_name="project__slug")
    risk_level = django_filters.ChoiceFilter(choices=RiskLevel.choices, label="Risk")
    promotion_path = django_filters.ChoiceFilter(choices=PromotionPath.choices, label="Path")
    rule = django_filters.CharFilter(lookup_expr="icontains", label="Rule")
    # As on the events list: from (inclusive) and before (exclusive); a date alone is its midnight, UTC.
    created_after = IsoDateTimeFilter(field_name="created_at", lookup_expr="gte", label="Created from")
    created_before = IsoDateTimeFilter(field_name="created_at", lookup_expr="lt", label="Created before")

    class Meta:
        model = LearningPromotion
        fields: list[str] = []

    def search(self, queryset: QuerySet[LearningPromotion], name: str, value: str) -> QuerySet[LearningPromotion]:
        return promotion_search(queryset, value)


class ScanRunFilter(django_filters.FilterSet):
    scanner = django_filters.ChoiceFilter(choices=Scanner.choices)
    status = django_filters.ChoiceFilter(choices=ScanStatus.choices)

    class Meta:
        model = ScanRun
        fields: list[str] = []
