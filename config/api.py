"""Small pieces every API module shares: strict input fields, pagination, filtering."""

from __future__ import annotations

from typing import Any

import django_filters
from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView


class StrictCharField(serializers.CharField):
    """A CharField that refuses numbers and booleans instead of turning them into text."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictInputSerializer(serializers.Serializer):
    """An input serializer that names unknown fields instead of ignoring them."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError({name: ["Unknown field."] for name in unknown})
        return super().to_internal_value(data)


class NewestFirstCursorPagination(CursorPagination):
    """Stable cursor pages over ``created_at`` (ties broken by id)."""

    ordering = ("-created_at", "-id")
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500


def paginated_list(
    *,
    request: Request,
    view: APIView,
    queryset: QuerySet,
    filterset_class: type[django_filters.FilterSet],
    output_serializer: type[serializers.Serializer],
) -> Response:
    """The body every list endpoint answers with: the filtered queryset, one cursor page of it, newest first."""
    paginator = NewestFirstCursorPagination()
    page = paginator.paginate_queryset(filter_queryset(filterset_class, request, queryset), request, view=view)
    return paginator.get_paginated_response(output_serializer(page, many=True).data)


def filter_queryset(filterset_class: type[django_filters.FilterSet], request: Request, queryset: QuerySet) -> QuerySet:
    """Apply a FilterSet to a queryset; invalid filter values are a 400 naming the parameter."""
    filterset = filterset_class(request.query_params, queryset=queryset, request=request)
    if not filterset.is_valid():
        raise serializers.ValidationError(filterset.errors)
    return filterset.qs


_FILTER_TYPES = {
    django_filters.NumberFilter: OpenApiTypes.INT,
    django_filters.IsoDateTimeFilter: OpenApiTypes.DATETIME,
    django_filters.BooleanFilter: OpenApiTypes.BOOL,
}


def filterset_parameters(filterset_class: type[django_filters.FilterSet]) -> list[OpenApiParameter]:
    """OpenAPI query parameters for a FilterSet used by a plain APIView."""
    parameters = []
    for name, flt in filterset_class.base_filters.items():
        enum = [value for value, _ in flt.extra.get("choices", [])] or None
        parameters.append(
            OpenApiParameter(name, _FILTER_TYPES.get(type(flt), OpenApiTypes.STR), enum=enum, required=False)
        )
    return parameters
