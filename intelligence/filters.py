"""List filters of the project-intelligence API."""

from __future__ import annotations

import django_filters

from intelligence.models import AttributionStatus, DocumentAttributionCandidate, IntelligenceTarget, TargetKind


class TargetFilter(django_filters.FilterSet):
    project = django_filters.CharFilter(field_name="project__slug", help_text="a project's slug")
    kind = django_filters.ChoiceFilter(choices=TargetKind.choices)
    active = django_filters.BooleanFilter()

    class Meta:
        model = IntelligenceTarget
        fields: list[str] = []


class AttributionCandidateFilter(django_filters.FilterSet):
    project = django_filters.CharFilter(field_name="target__project__slug", help_text="the candidate target's project")
    document = django_filters.CharFilter(field_name="document_id")

    class Meta:
        model = DocumentAttributionCandidate
        fields: list[str] = []


STATUSES = AttributionStatus.values
