"""The shared text helpers."""

from core.ids import parse_uuid
from core.text import content_words, lexical_similarity, normalise, normalised_digest, summarize


def test_normalised_digest_ignores_case_and_spacing_only():
    assert normalised_digest("Use  British\nspelling") == normalised_digest("use british spelling")
    assert normalised_digest("Use British spelling") != normalised_digest("Use American spelling")
    assert normalise("  A \t B ") == "a b"


def test_content_words_drop_function_words():
    assert content_words("What papers are there on the buckling of shells?") == ["buckling", "shells"]


def test_lexical_similarity():
    assert lexical_similarity("roster vehicle assignments", "vehicle assignments from the roster") > 0.99
    assert lexical_similarity("roster", "invoice") == 0.0
    assert lexical_similarity("", "invoice") == 0.0


def test_summarize_trims_greetings_and_politeness():
    assert summarize("Hi! Could you draft a reply to the supplier about the late delivery", words=6) == (
        "Draft a reply to the supplier"
    )


def test_parse_uuid():
    value = "6F9619FF-8B86-D011-B42D-00C04FC964FF"
    assert str(parse_uuid(value)) == value.lower()
    assert parse_uuid("{" + value + "}") == parse_uuid(value)
    assert parse_uuid("nope") is None
    assert parse_uuid(None) is None
