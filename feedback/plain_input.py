"""A serializer's validation for the common case, without DRF's per-field machinery.

``EventInputSerializer.is_valid`` was a fifth of the single-event POST's CPU: for each of 22
declared fields DRF copies and binds the field, then runs ``validate_empty_values``,
``to_internal_value`` and a list of validator objects (the surrogate check alone walks every
character in Python). :class:`PlainInput` reads the same declarations once and checks a payload
of plain JSON values with the same rules. It returns exactly what ``serializer.validated_data``
would be, or ``None`` for anything it is not sure about (a value it would have to coerce, a bad
or unknown field, a field or validator it does not know): the caller then runs the serializer,
whose errors and coercions stay the only ones. tests/feedback/test_plain_input.py holds the two
to each other over valid and invalid payloads.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from django.core.validators import (
    BaseValidator,
    MaxLengthValidator,
    MaxValueValidator,
    MinLengthValidator,
    MinValueValidator,
    ProhibitNullCharactersValidator,
)
from rest_framework import serializers
from rest_framework.fields import _UnvalidatedField, empty
from rest_framework.validators import ProhibitSurrogateCharactersValidator

from config.api import ChoiceField, StrictCharField, StrictInputSerializer

_DECLINE = object()  # "not sure": the serializer decides

Check = Callable[[Any], Any]


class UnsupportedField(Exception):
    """A declaration PlainInput does not reproduce; the serializer then always runs."""


def _bounds(field: serializers.Field, low_type: type[BaseValidator], high_type: type[BaseValidator]) -> tuple[Any, Any]:
    low = high = None
    for validator in field.validators:
        if isinstance(validator, low_type):
            low = validator.limit_value
        elif isinstance(validator, high_type):
            high = validator.limit_value
        elif not isinstance(validator, (ProhibitNullCharactersValidator, ProhibitSurrogateCharactersValidator)):
            raise UnsupportedField(f"validator {type(validator).__name__}")
    return low, high


def _text_check(field: StrictCharField) -> Check:
    low, high = _bounds(field, MinLengthValidator, MaxLengthValidator)
    trim, allow_blank = field.trim_whitespace, field.allow_blank

    def check(value: Any) -> Any:
        if type(value) is not str:
            return _DECLINE
        text = value.strip() if trim else value
        if value == "" or (trim and text == ""):  # blank, as DRF's CharField sees it: no validators run
            return "" if allow_blank else _DECLINE
        if (high is not None and len(text) > high) or (low is not None and len(text) < low) or "\x00" in text:
            return _DECLINE
        if not text.isascii():
            try:
                text.encode("utf-8")  # refuses exactly the surrogates DRF's validator refuses
            except UnicodeEncodeError:
                return _DECLINE
        return text

    return check


def _choice_check(field: serializers.ChoiceField) -> Check:
    if field.validators:
        raise UnsupportedField("validators on a choice field")
    choices = field.choice_strings_to_values

    def check(value: Any) -> Any:
        return choices.get(value, _DECLINE) if type(value) is str and value != "" else _DECLINE

    return check


def _integer_check(field: serializers.IntegerField) -> Check:
    low, high = _bounds(field, MinValueValidator, MaxValueValidator)

    def check(value: Any) -> Any:
        if type(value) is not int or (low is not None and value < low) or (high is not None and value > high):
            return _DECLINE
        return value

    return check


def _boolean_check(field: serializers.BooleanField) -> Check:
    if field.validators:
        raise UnsupportedField("validators on a boolean field")
    return lambda value: value if type(value) is bool else _DECLINE


def _dict_check(field: serializers.DictField) -> Check:
    if field.validators or type(field.child) is not _UnvalidatedField:
        raise UnsupportedField("a validated dict")
    allow_empty = field.allow_empty

    def check(value: Any) -> Any:
        if type(value) is not dict or (not value and not allow_empty):
            return _DECLINE
        return {str(key): item for key, item in value.items()}

    return check


def _json_check(field: serializers.JSONField) -> Check:
    if field.validators or field.binary:
        raise UnsupportedField("a binary or validated JSON field")
    encoder = field.encoder

    def check(value: Any) -> Any:
        try:
            json.dumps(value, cls=encoder)
        except (TypeError, ValueError):
            return _DECLINE
        return value

    return check


# Exact classes only: a subclass may change any step.
_CHECKS: dict[type, Callable[[Any], Check]] = {
    StrictCharField: _text_check,
    ChoiceField: _choice_check,  # refusals differ only in wording, which the serializer writes
    serializers.ChoiceField: _choice_check,
    serializers.IntegerField: _integer_check,
    serializers.BooleanField: _boolean_check,
    serializers.DictField: _dict_check,
    serializers.JSONField: _json_check,
}


class PlainInput:
    """The validation of a :class:`~config.api.StrictInputSerializer` subclass for JSON-decoded payloads."""

    def __init__(self, serializer_class: type[StrictInputSerializer]) -> None:
        self.serializer_class = serializer_class
        self._plan: list[tuple[str, bool, bool, Any, Check]] | None = None
        self._names: frozenset[str] = frozenset()
        self.supported = True

    def _build(self) -> None:
        serializer = self.serializer_class()
        cls = self.serializer_class
        if (
            cls.validate is not serializers.Serializer.validate
            or cls.run_validation is not serializers.Serializer.run_validation
            or cls.to_internal_value is not StrictInputSerializer.to_internal_value
            or serializer.get_validators()
        ):
            raise UnsupportedField("serializer-level validation")
        plan = []
        for name, field in serializer.fields.items():
            if field.read_only or field.source != name or hasattr(serializer, f"validate_{name}"):
                raise UnsupportedField(name)
            make = _CHECKS.get(type(field))
            if make is None:
                raise UnsupportedField(f"{name}: {type(field).__name__}")
            plan.append((name, field.required, field.allow_null, field.default, make(field)))
        self._plan = plan
        self._names = frozenset(serializer.fields)

    def validated(self, data: Any) -> dict[str, Any] | None:
        """What ``serializer_class(data=data).validated_data`` would be, or None: run the serializer."""
        if self._plan is None and self.supported:
            try:
                self._build()
            except UnsupportedField:
                self.supported = False
        if self._plan is None or type(data) is not dict or not self._names.issuperset(data):
            return None
        result: dict[str, Any] = {}
        for name, required, allow_null, default, check in self._plan:
            value = data.get(name, empty)
            if value is empty:
                if required:
                    return None
                if default is not empty:
                    result[name] = default() if callable(default) else default
            elif value is None:
                if not allow_null:
                    return None
                result[name] = None
            else:
                value = check(value)
                if value is _DECLINE:
                    return None
                result[name] = value
        return result
