"""PlainInput returns exactly the serializer's validated data, or None (the serializer decides);
PlainAcceptNegotiation answers exactly as DRF's negotiation does.

Every field of EventInputSerializer is tried with values of every kind, alone and together: where
the serializer refuses a payload PlainInput must decline it (the serializer names the error), and
where PlainInput answers, its answer must equal ``validated_data``.
"""

from __future__ import annotations

import itertools

import pytest
from django.http import Http404, QueryDict
from rest_framework import serializers
from rest_framework.exceptions import NotAcceptable
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BrowsableAPIRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from config.api import StrictCharField, StrictInputSerializer
from feedback.apis import EventInputSerializer, PlainAcceptNegotiation
from feedback.plain_input import PlainInput

BASE = {"event_type": "response_rated", "event_family": "assistant_response", "signal": "positive"}
MISSING = object()
VALUES = [
    MISSING,
    None,
    "",
    " ",
    "  padded  ",
    "plain",
    "x" * 100,
    "x" * 101,
    "x" * 255,
    "x" * 256,
    "nul\x00",
    "lone \ud800 surrogate",
    "ünïcödé ✓",
    "positive",
    "retrieval",
    "Positive",
    "3",
    0,
    1,
    7,
    -1,
    2**40,
    1.0,
    2.5,
    True,
    False,
    [],
    ["a", 1],
    {},
    {"a": 1, "nested": {"b": [1, 2]}},
    {"1": None},
]

plain = PlainInput(EventInputSerializer)


def compare(data) -> bool:
    """Assert PlainInput agrees with the serializer; True if PlainInput answered."""
    serializer = EventInputSerializer(data=data)
    valid = serializer.is_valid()
    answer = plain.validated(data)
    if answer is None:
        return False
    assert valid, (data, answer, serializer.errors)
    assert answer == dict(serializer.validated_data), data
    assert [type(v) for v in answer.values()] == [type(v) for v in dict(serializer.validated_data).values()], data
    return True


def with_value(name: str, value) -> dict:
    data = {key: v for key, v in BASE.items() if key != name}
    if value is not MISSING:
        data[name] = value
    return data


@pytest.mark.parametrize("name", list(EventInputSerializer._declared_fields))
def test_every_value_of_every_field(name):
    answered = [compare(with_value(name, value)) for value in VALUES]
    assert any(answered), f"PlainInput never answered for {name}"


def test_fields_together():
    # Pairs of fields with a few values each: interactions such as required fields missing together.
    names = list(EventInputSerializer._declared_fields)
    few = [MISSING, None, "", "  padded  ", "x" * 101, 1, True, {"a": 1}]
    answered = 0
    for first, second in itertools.combinations(names, 2):
        for a, b in itertools.product(few, repeat=2):
            data = with_value(first, a)
            if b is MISSING:
                data.pop(second, None)
            else:
                data[second] = b
            answered += compare(data)
    assert answered > 1000


def test_a_full_payload_is_answered():
    data = {
        **BASE,
        "user_id": 3,
        "project": "apollo",
        "target_id": "t",
        "session_id": "s",
        "source_table": "chat_history",
        "source_record_id": "42",
        "surface": "chat",
        "subject_type": "message",
        "subject_id": "m1",
        "reason_category": "tone",
        "free_text": "too long",
        "before_snapshot": {"text": "a"},
        "after_snapshot": [1, "b"],
        "source_context": {"k": "v"},
        "metadata": {"model": "m"},
        "private": True,
        "idempotency_key": "key-1",
    }
    assert compare(data)
    assert plain.validated(data)["event_type"] == "response_rated"


@pytest.mark.parametrize(
    "data",
    [
        {**BASE, "unknown": 1},
        [BASE],
        "text",
        None,
        QueryDict("event_type=x&event_family=retrieval&signal=positive"),
        {**BASE, "event_type": "  "},
    ],
)
def test_what_the_serializer_must_judge_is_declined(data):
    assert plain.validated(data) is None


def test_a_serializer_with_a_field_it_does_not_know_always_declines():
    class WithEmail(StrictInputSerializer):
        name = StrictCharField(max_length=10)
        email = serializers.EmailField(required=False)

    class WithHook(StrictInputSerializer):
        name = StrictCharField(max_length=10)

        def validate_name(self, value):
            return value.upper()

    for cls in (WithEmail, WithHook):
        checker = PlainInput(cls)
        assert checker.validated({"name": "a"}) is None
        assert not checker.supported
    assert PlainInput(StrictInputSerializer).validated({}) == {}  # the control: nothing unknown


@pytest.mark.parametrize("renderers", [[JSONRenderer()], [JSONRenderer(), BrowsableAPIRenderer()]])
@pytest.mark.parametrize(
    "accept",
    [
        None,
        "*/*",
        "application/json",
        "",
        "text/html",
        "application/*",
        "application/json; indent=4",
        "text/html, */*;q=0.8",
        "application/xml",
    ],
)
@pytest.mark.parametrize("query", ["", "format=json", "format=api", "format=xml"])
def test_the_plain_accept_negotiation_answers_as_drf_does(renderers, accept, query):
    headers = {} if accept is None else {"HTTP_ACCEPT": accept}
    request = Request(APIRequestFactory().get(f"/api/v1/feedback/events?{query}", **headers))

    def negotiate(negotiation):
        try:
            renderer, media_type = negotiation.select_renderer(request, renderers)
        except NotAcceptable:
            return "406"
        except Http404:  # a format no renderer has
            return "404"
        return type(renderer), media_type

    assert negotiate(PlainAcceptNegotiation()) == negotiate(DefaultContentNegotiation())
