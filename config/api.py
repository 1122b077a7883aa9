"""Small pieces every API module shares: strict input fields, pagination, filtering."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC
from enum import StrEnum
from typing import Any, NoReturn

import django_filters
from django import forms
from django.db.models import QuerySet
from django.utils.dateparse import parse_datetime
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.pagination import Cursor, CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView


class StrictCharField(serializers.CharField):
    """A CharField that refuses numbers and booleans instead of turning them into text."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    """JSON true or false only: "yes", 1 or "false" are not read as a boolean."""

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


_SHOWN_INPUT = 80  # characters of a refused value repeated in its error


def invalid_choice_message(value: Any, choices: Iterable[Any]) -> str:
    """The refusal of a value outside an enumeration, listing the accepted values: used by every choice
    field (``ChoiceField``) and choice filter (``filter_queryset``) of the API."""
    shown = str(value)
    if len(shown) > _SHOWN_INPUT:
        shown = shown[: _SHOWN_INPUT - 1] + "…"
    accepted = ", ".join(str(choice) for choice in choices if choice != "")
    return f'"{shown}" is not a valid choice. Choose one of: {accepted}.'


class ChoiceField(serializers.ChoiceField):
    """DRF's ChoiceField, whose refusal lists the accepted values ("'meh' is not a valid choice. Choose
    one of: positive, negative, ..."). Every API serializer uses this one (a test holds them to it)."""

    def fail(self, key: str, **kwargs: Any) -> NoReturn:
        if key == "invalid_choice":
            message = invalid_choice_message(kwargs.get("input", ""), self.choices)
            raise serializers.ValidationError(message, code=key)
        super().fail(key, **kwargs)


class OnBehalfOf(StrEnum):
    """What ``X-On-Behalf-Of`` means to an operation (a view's ``on_behalf_of``; the schema documents it).

    Authentication reads the header on every request; the view decides whether it makes sense there."""

    OPTIONAL = "optional"  # a service key acts as itself, or for the user it names
    REQUIRED = "required"  # the user's own data: a service key must name the user
    REFUSED = "refused"  # for people only (staff review, key management): never a service key's


IDEMPOTENCY_HEADER = "HTTP_IDEMPOTENCY_KEY"


def idempotency_from_header(request: Request, payload: Any, field: str = "idempotency_key") -> Any:
    """The body, with the ``Idempotency-Key`` header as its ``field`` when the body has none (a view that
    reads it names the field as its ``idempotency_field``, so the schema documents the header)."""
    header = request.META.get(IDEMPOTENCY_HEADER)
    if header and isinstance(payload, dict) and not payload.get(field):
        payload = {**payload, field: header}
    return payload


class StrictInputSerializer(serializers.Serializer):
    """An input serializer that names unknown fields instead of ignoring them."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError({name: ["Unknown field."] for name in unknown})
        return super().to_internal_value(data)


class NewestFirstCursorPagination(CursorPagination):
    """Stable cursor pages over ``created_at`` (ties broken by id). A malformed ``cursor`` or
    ``page_size`` is a 400 naming the parameter (DRF would answer 404, or ignore it)."""

    ordering = ("-created_at", "-id")
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500

    def get_page_size(self, request: Request) -> int:
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        try:
            size = int(raw)
        except ValueError:
            size = 0
        if size < 1 or raw.strip() != raw:
            raise serializers.ValidationError({self.page_size_query_param: ["A positive integer is required."]})
        return min(size, self.max_page_size)

    def decode_cursor(self, request: Request) -> Cursor | None:
        message = {self.cursor_query_param: ["Invalid cursor: pass back a `next` or `previous` link unchanged."]}
        try:
            cursor = super().decode_cursor(request)
        except (NotFound, UnicodeEncodeError) as exc:
            raise serializers.ValidationError(message) from exc
        # The position is compared with created_at in SQL: anything but a datetime would be a 500 there.
        if cursor is not None and cursor.position is not None:
            try:
                position = parse_datetime(str(cursor.position))
            except ValueError:
                position = None
            if position is None:
                raise serializers.ValidationError(message)
        return cursor

    def get_schema_operation_parameters(self, view: APIView) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"] = {"type": "integer", "minimum": 1}
                parameter["description"] = (
                    f"Results per page (default {self.page_size}; larger values give {self.max_page_size})."
                )
        return parameters


def paginated_list(
    *,
    request: Request,
    view: APIView,
    queryset: QuerySet,
    filterset_class: type[django_filters.FilterSet],
    output_serializer: type[serializers.Serializer],
) -> Response:
    """The body every list endpoint answers with: the filtered queryset, one cursor page of it, newest first.

    The view names ``pagination_class = NewestFirstCursorPagination``, so that its schema documents the page."""
    paginator = (getattr(view, "pagination_class", None) or NewestFirstCursorPagination)()
    page = paginator.paginate_queryset(filter_queryset(filterset_class, request, queryset), request, view=view)
    return paginator.get_paginated_response(output_serializer(page, many=True).data)


BOOLEANS = ("true", "false")


def filter_queryset(filterset_class: type[django_filters.FilterSet], request: Request, queryset: QuerySet) -> QuerySet:
    """Apply a FilterSet to a queryset; invalid filter values are a 400 naming the parameter."""
    filterset = filterset_class(request.query_params, queryset=queryset, request=request)
    if not filterset.is_valid():
        raise serializers.ValidationError(_filter_errors(filterset))
    # django-filter reads an empty value, or a boolean it cannot read, as "no filter"; for a typed
    # parameter that is a value the schema does not allow, so it is refused rather than ignored.
    refused: dict[str, list[str]] = {}
    for name, flt in filterset.filters.items():
        value = request.query_params.get(name)
        if value == "" and type(flt) is not django_filters.CharFilter:
            refused[name] = ["This parameter may not be empty."]
        elif value is not None and isinstance(flt, django_filters.BooleanFilter) and value.lower() not in BOOLEANS:
            refused[name] = ['Use "true" or "false".']
    if refused:
        raise serializers.ValidationError(refused)
    return filterset.qs


def _filter_errors(filterset: django_filters.FilterSet) -> dict[str, list[str]]:
    """The filter form's errors by parameter; a value outside a choice filter's choices lists them."""
    errors: dict[str, list[str]] = {}
    for name, problems in filterset.form.errors.as_data().items():
        field = filterset.form.fields.get(name)
        messages: list[str] = []
        for problem in problems:
            if problem.code == "invalid_choice" and isinstance(field, forms.ChoiceField):
                value = (problem.params or {}).get("value", "")
                choices: Iterable[tuple[Any, Any]] = field.choices  # type: ignore[assignment]  # a list here
                messages.append(invalid_choice_message(value, [choice for choice, _ in choices]))
            else:
                messages.extend(problem.messages)
        errors[name] = messages
    return errors


MAX_BIGINT = 2**63 - 1


class IntegerFilter(django_filters.NumberFilter):
    """An integer query parameter (an id): ``1.5`` or a number beyond 64 bits is a 400, not a query."""

    field_class = forms.IntegerField

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", MAX_BIGINT)
        super().__init__(*args, **kwargs)


class _UtcIsoDateTimeField(django_filters.fields.IsoDateTimeField):
    def clean(self, value: Any) -> Any:
        value = super().clean(value)
        if value is None:
            return None
        try:
            # In UTC: PostgreSQL refuses offsets beyond ±15:59 that ISO 8601 and Python allow (up to ±23:59).
            return value.astimezone(UTC)
        except OverflowError as exc:  # 0001-01-01T00:00+05:00 is a valid ISO string before year 1 in UTC
            raise forms.ValidationError("This date/time is out of range once converted to UTC.") from exc


class IsoDateTimeFilter(django_filters.IsoDateTimeFilter):
    """An ISO 8601 date/time parameter, compared in UTC; bad values (an offset past ±24h, a date out of
    range once in UTC) are a 400 naming the parameter: Django would only fail when the query runs."""

    field_class = _UtcIsoDateTimeField


_FILTER_TYPES: dict[type, Any] = {
    IntegerFilter: {"type": "integer", "minimum": 1, "maximum": MAX_BIGINT},
    django_filters.NumberFilter: OpenApiTypes.NUMBER,
    django_filters.IsoDateTimeFilter: OpenApiTypes.DATETIME,
    django_filters.BooleanFilter: OpenApiTypes.BOOL,
}


def filterset_parameters(filterset_class: type[django_filters.FilterSet]) -> list[OpenApiParameter]:
    """OpenAPI query parameters for a FilterSet used by a plain APIView."""
    parameters = []
    for name, flt in filterset_class.base_filters.items():
        enum = [value for value, _ in flt.extra.get("choices", [])] or None
        kind = next((t for cls, t in _FILTER_TYPES.items() if isinstance(flt, cls)), OpenApiTypes.STR)
        parameters.append(OpenApiParameter(name, kind, enum=enum, required=False))
    return parameters
