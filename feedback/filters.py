"""List filters for the event stream."""

from __future__ import annotations

import django_filters

from config.api import IntegerFilter, IsoDateTimeFilter
from feedback.models import EventFamily, FeedbackEvent, Signal, TaskFeedback


class FeedbackEventFilter(django_filters.FilterSet):
    family = django_filters.ChoiceFilter(field_name="event_family", choices=EventFamily.choices)
    signal = django_filters.ChoiceFilter(choices=Signal.choices)
    event_type = django_filters.CharFilter()
    subject_type = django_filters.CharFilter()
    subject_id = django_filters.CharFilter()
    target_id = django_filters.CharFilter()
    session_id = django_filters.CharFilter()
    source_table = django_filters.CharFilter()
    source_record_id = django_filters.CharFilter()
    project = django_filters.CharFilter(field_name="project__slug")
    user = IntegerFilter(field_name="user_id")
    created_after = IsoDateTimeFilter(field_name="created_at", lookup_expr="gte")
    created_before = IsoDateTimeFilter(field_name="created_at", lookup_expr="lt")

    class Meta:
        model = FeedbackEvent
        fields: list[str] = []


class TaskFeedbackFilter(django_filters.FilterSet):
    rating = django_filters.ChoiceFilter(choices=TaskFeedback.Rating.choices)
    project = django_filters.CharFilter(field_name="project__slug")
    user = IntegerFilter(field_name="user_id")
    promoted = django_filters.BooleanFilter()

    class Meta:
        model = TaskFeedback
        fields: list[str] = []
