"""The event input serializer copies its declared fields cheaply: each instance still binds its own."""

from __future__ import annotations

from feedback.apis import EventInputSerializer

GOOD = {"event_type": "x", "event_family": "assistant_response", "signal": "positive", "metadata": {"a": 1}}


def test_each_instance_binds_its_own_fields():
    first, second = EventInputSerializer(data=GOOD), EventInputSerializer(data={**GOOD, "signal": "nope"})
    assert first.fields["signal"] is not second.fields["signal"]
    assert first.fields["signal"].parent is first
    assert second.fields["metadata"].parent is second
    assert EventInputSerializer._declared_fields["signal"].parent is None  # the declaration stays unbound
    assert first.is_valid(), first.errors
    assert not second.is_valid()
    assert set(second.errors) == {"signal"}
    assert first.validated_data["metadata"] == {"a": 1}


def test_bad_nested_input_is_still_refused():
    serializer = EventInputSerializer(data={**GOOD, "metadata": ["not", "an", "object"], "user_id": 0})
    assert not serializer.is_valid()
    assert set(serializer.errors) == {"metadata", "user_id"}
