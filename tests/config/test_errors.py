"""One JSON error shape everywhere under /api/: bad JSON of every kind, Django's own 400/403/404/500,
unknown routes, bad query parameters, and the schema that documents them."""

from __future__ import annotations

import base64
import json

import pytest
from django.core.exceptions import PermissionDenied, RequestDataTooBig, SuspiciousOperation
from django.test import Client, RequestFactory, override_settings
from rest_framework.test import APIClient

from accounts import apis as accounts_apis
from config import handlers, parsers
from config.parsers import MAX_JSON_DEPTH, decode, nested_deeper_than
from feedback.models import FeedbackEvent, TaskFeedback
from tests.factories import PreferenceFactory

EVENTS = "/api/v1/feedback/events"
VALID = {"event_type": "response_rated", "event_family": "assistant_response", "signal": "positive"}


def assert_error(response, status: int, code: str | None = None) -> dict:
    """The response is the API's one error shape with this status; returns its ``error``."""
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    error = json.loads(response.content)["error"]
    assert set(error) >= {"code", "message", "fields", "request_id"}
    assert isinstance(error["message"], str)
    assert error["message"]
    if response.has_header("X-Request-ID"):  # handlers called directly in a test skip the middleware
        assert error["request_id"] == response["X-Request-ID"]
    if code is not None:
        assert error["code"] == code, error
    return error


def nested(depth: int) -> str:
    return '{"event_type": "x", "event_family": "assistant_response", "signal": "positive", "metadata": ' + (
        '{"a": ' * (depth - 1) + "1" + "}" * (depth - 1) + "}"
    )


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ('{"event_type": "a\\u0000b"}', "event_type", "NUL"),
        ('{"metadata": {"k\\u0000": 1}}', "metadata.k\\x00", "NUL"),
        ('{"free_text": "\\ud800"}', "free_text", "surrogate"),
        ('{"metadata": {"tags": ["ok", "\\udfff"]}}', "metadata.tags[1]", "surrogate"),
        ('{"metadata": {"n": 1e400}}', "metadata.n", "finite"),
        ('{"metadata": {"n": -1e400}}', "metadata.n", "finite"),
        ('{"metadata": {"n": NaN}}', "metadata.n", "finite"),
        ('{"metadata": {"n": Infinity}}', "metadata.n", "finite"),
        ('{"user_id": 123456789012345678901234567890}', "user_id", "64-bit"),
        ('{"metadata": {"n": ' + "9" * 5000 + "}}", "body", "parse error"),
        (nested(10_000), "body", "nested"),
        (nested(MAX_JSON_DEPTH + 5), "metadata" + ".a" * (MAX_JSON_DEPTH - 1), "nested"),
        ('{"event_type": ', "body", "parse error"),
    ],
)
def test_bad_json_is_a_400_naming_the_problem(world, body, field, words):
    response = world.client("owner").post(EVENTS, body, content_type="application/json")
    error = assert_error(response, 400, "parse_error")
    assert field in error["fields"], error
    assert words in error["message"], error
    assert FeedbackEvent.objects.count() == 0


def test_a_surrogate_decoded_by_the_charset_itself_is_a_400(world):
    """unicode_escape turns the escape into the character before JSON reads the text: no escape left."""
    body = b'{"event_type": "x", "event_family": "assistant_response", "signal": "positive", "free_text": "\\ud800"}'
    response = world.client("owner").post(EVENTS, body, content_type="application/json; charset=unicode_escape")
    error = assert_error(response, 400, "parse_error")
    assert "surrogate" in error["message"]
    assert FeedbackEvent.objects.count() == 0


def test_only_a_body_that_may_hold_a_refused_value_is_walked(world, monkeypatch):
    """The walk over the decoded value runs when decoding met something it refuses (every bad body
    above) and is skipped for an ordinary one, large finite numbers included."""
    bad = [
        '{"event_type": "a\\u0000b"}',
        '{"free_text": "\\uD800"}',
        '{"free_text": "\ud800"}',
        '{"n": 1e400}',
        '{"n": -1E+309}',
        '{"n": NaN}',
        '{"n": -Infinity}',
        '{"user_id": 9223372036854775808}',
        '{"n": ' + "1" * 400 + ".5}",
        nested(MAX_JSON_DEPTH + 5),
    ]
    assert [body for body in bad if not decode(body)[1]] == []
    ordinary = json.dumps(
        {**VALID, "metadata": {"tags": ["a", "b"], "n": 12.5e-3, "big": 1e308, "id": 2**62}, "free_text": "ok é \\u"}
    )
    assert decode(ordinary) == (json.loads(ordinary), False)

    def walked(value):
        raise AssertionError("walked")

    monkeypatch.setattr(parsers, "check_json_value", walked)
    assert world.client("owner").post(EVENTS, ordinary, content_type="application/json").status_code == 201
    with pytest.raises(AssertionError, match="walked"):
        world.client("owner").post(EVENTS, '{"metadata": {"n": NaN}}', content_type="application/json")


def test_a_body_of_many_shallow_objects_is_not_walked_and_a_deep_one_is(world, monkeypatch):
    """Many brackets alone (a bulk body) cost only a walk over the containers; nesting past the limit
    anywhere in such a body is still walked, and refused with its path."""
    items = [{"subject_id": f"s{i}", "metadata": {"rank": i, "tags": ["a"]}} for i in range(200)]
    shallow = json.dumps({"events": items})
    assert shallow.count("{") > MAX_JSON_DEPTH
    assert decode(shallow) == ({"events": items}, False)
    deep = {"events": [*items[:150], {"metadata": json.loads(nested(MAX_JSON_DEPTH))}, *items[150:]]}
    assert decode(json.dumps(deep))[1]
    assert nested_deeper_than(json.loads(nested(MAX_JSON_DEPTH + 1)), MAX_JSON_DEPTH)
    assert not nested_deeper_than(json.loads(nested(MAX_JSON_DEPTH)), MAX_JSON_DEPTH)

    walks = []
    original = parsers.check_json_value
    monkeypatch.setattr(parsers, "check_json_value", lambda value: walks.append(1) or original(value))
    body = json.dumps({"events": [{**VALID, "metadata": {"rank": i}} for i in range(40)]})
    assert world.client("owner").post(f"{EVENTS}/bulk", body, content_type="application/json").status_code == 201
    assert walks == []
    response = world.client("owner").post(f"{EVENTS}/bulk", json.dumps(deep), content_type="application/json")
    error = assert_error(response, 400, "parse_error")
    assert "nested deeper" in error["message"]
    assert walks == [1]
    assert error["fields"]


def test_json_within_the_depth_limit_is_accepted(world):
    response = world.client("owner").post(EVENTS, nested(MAX_JSON_DEPTH - 1), content_type="application/json")
    assert response.status_code == 201, response.content


def test_a_body_that_is_not_utf8_is_a_400(world):
    response = world.client("owner").post(EVENTS, b'{"event_type": "\xff"}', content_type="application/json")
    error = assert_error(response, 400, "parse_error")
    assert "utf-8" in error["message"]


def test_a_charset_that_is_not_a_text_encoding_is_a_400(world):
    response = world.client("owner").post(EVENTS, json.dumps(VALID), content_type="application/json; charset=bz2_codec")
    assert_error(response, 400, "parse_error")


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=1024)
def test_oversize_body_is_a_413(world):
    response = world.client("owner").post(
        EVENTS, json.dumps({**VALID, "free_text": "x" * 2000}), content_type="application/json"
    )
    error = assert_error(response, 413, "payload_too_large")
    assert "1024" in error["message"]


def test_wrong_content_type_is_a_415(world):
    response = world.client("owner").post(EVENTS, "event_type=x", content_type="text/plain")
    assert_error(response, 415, "unsupported_media_type")


def test_missing_or_bad_key_is_a_401_with_a_challenge(world):
    assert_error(APIClient().get(EVENTS), 401, "not_authenticated")
    response = APIClient(HTTP_AUTHORIZATION="Bearer llk_nope").get(EVENTS)
    assert_error(response, 401, "authentication_failed")
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_a_user_key_acting_for_someone_is_a_403(world):
    response = world.client("owner", on_behalf_of="ext-other").get(EVENTS)
    error = assert_error(response, 403, "permission_denied")
    assert "X-On-Behalf-Of" in error["fields"]


def test_a_method_the_route_lacks_is_a_405(world):
    response = world.client("owner").delete(EVENTS)
    assert_error(response, 405, "method_not_allowed")
    assert "GET" in response["Allow"]


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize("path", ["/api/v1/nothing-here", "/api/v2/", "/api/", "/api/v1/feedback/events/"])
def test_unknown_api_routes_are_json_404s(world, settings, debug, path):
    settings.DEBUG = debug
    assert_error(world.client("owner").get(path), 404, "not_found")


def test_posting_to_an_unknown_api_route_from_a_browser_session_is_a_json_404(world):
    client = Client(enforce_csrf_checks=True)
    client.force_login(world.owner)
    assert_error(client.post("/api/v1/promotions/", {}, content_type="application/json"), 404, "not_found")


def test_unknown_pages_outside_the_api_stay_html(db):
    response = Client().get("/no-such-page/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")


def test_an_unexpected_error_is_a_json_500_under_the_api(world, monkeypatch):
    def explode(*args, **kwargs):
        raise RuntimeError("boom: secret detail")

    monkeypatch.setattr(accounts_apis.MeApi, "get", explode)
    client = APIClient(raise_request_exception=False)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {world.keys['owner']}")
    response = client.get("/api/v1/me")
    error = assert_error(response, 500, "server_error")
    assert "secret" not in response.content.decode()
    assert error["fields"] == {}


def test_django_error_pages_are_json_under_the_api_and_html_elsewhere(db):
    factory = RequestFactory()
    api, page = factory.get("/api/v1/me"), factory.get("/chat/")
    assert_error(handlers.json_bad_request(api, RequestDataTooBig()), 413, "payload_too_large")
    assert_error(handlers.json_bad_request(api, SuspiciousOperation()), 400, "bad_request")
    assert_error(handlers.json_permission_denied(api, PermissionDenied()), 403, "permission_denied")
    assert_error(handlers.json_server_error(api), 500, "server_error")
    for response in (
        handlers.json_bad_request(page, SuspiciousOperation()),
        handlers.json_permission_denied(page, PermissionDenied()),
        handlers.json_server_error(page),
    ):
        assert response["Content-Type"].startswith("text/html")


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"created_after": "2020-01-01T00:00:00+99:00"}, "created_after"),
        ({"created_after": "0001-01-01T00:00:00+05:00"}, "created_after"),
        ({"created_before": "9999-12-31T23:59:59-05:00"}, "created_before"),
        ({"created_before": "2020-13-01"}, "created_before"),
        ({"user": "1.5"}, "user"),
        ({"user": "0"}, "user"),
        ({"user": str(2**64)}, "user"),
        ({"page_size": "abc"}, "page_size"),
        ({"page_size": "0"}, "page_size"),
        ({"cursor": "not-a-cursor"}, "cursor"),
        ({"cursor": base64.b64encode(b"p=yesterday").decode()}, "cursor"),
        ({"cursor": "\u00e9"}, "cursor"),
        ({"event_type": "a\x00b"}, "event_type"),
        ({"created_before": ""}, "created_before"),
        ({"family": ""}, "family"),
        ({"user": ""}, "user"),
    ],
)
def test_bad_list_parameters_are_a_400_naming_them(world, query, field):
    error = assert_error(world.client("owner").get(EVENTS, query), 400)
    assert field in error["fields"], error


@pytest.mark.parametrize("value", ["", "yes", "2"])
def test_a_boolean_filter_takes_true_or_false(world, value):
    client = world.client("owner")
    error = assert_error(client.get("/api/v1/feedback/tasks", {"promoted": value}), 400)
    assert "promoted" in error["fields"]
    assert client.get("/api/v1/feedback/tasks", {"promoted": "false"}).status_code == 200


@pytest.mark.parametrize("active", ["true", 1, "yes"])
def test_a_toggle_takes_a_json_boolean(world, active):
    preference = PreferenceFactory(user=world.owner, active=False)
    url = f"/api/v1/preferences/{preference.pk}/toggle"
    error = assert_error(world.client("owner").patch(url, {"active": active}, format="json"), 400)
    assert "active" in error["fields"]
    preference.refresh_from_db()
    assert preference.active is False


def test_a_nul_in_the_path_is_a_400(world):
    error = assert_error(world.client("owner").get("/api/v1/feedback/events/a%00b"), 400)
    assert "path" in error["fields"]


@pytest.mark.parametrize("offset", ["+23:59", "-19:12", "+00:00"])
def test_any_valid_offset_works_on_every_database(world, offset):
    """PostgreSQL takes offsets up to ±15:59 only; the filter compares in UTC."""
    client = world.client("owner")
    assert client.post(EVENTS, VALID, format="json").status_code == 201
    page = client.get(EVENTS, {"created_after": f"2000-01-01T00:00:00{offset}"})
    assert page.status_code == 200, page.content
    assert len(page.json()["results"]) == 1
    assert client.get(EVENTS, {"created_before": f"2000-01-01T00:00:00{offset}"}).json()["results"] == []


def test_good_list_parameters_still_work(world):
    client = world.client("owner")
    for _ in range(3):
        assert client.post(EVENTS, VALID, format="json").status_code == 201
    page = client.get(EVENTS, {"page_size": "2", "created_after": "2000-01-01T00:00:00+05:00"}).json()
    assert len(page["results"]) == 2
    rest = client.get(page["next"]).json()
    assert len(rest["results"]) == 1
    assert client.get(EVENTS, {"page_size": "100000"}).status_code == 200  # capped, as before


def test_a_task_rating_reusing_an_events_idempotency_key_is_a_409(world):
    client = world.client("owner")
    event = {**VALID, "source_table": "elsewhere", "source_record_id": "not-a-uuid", "idempotency_key": "k-1"}
    assert client.post(EVENTS, event, format="json").status_code == 201
    rating = {"task_snapshot": {"id": "t1", "title": "Call back"}, "rating": "good", "idempotency_key": "k-1"}
    error = assert_error(client.post("/api/v1/feedback/tasks", rating, format="json"), 409, "conflict")
    assert "idempotency_key" in error["fields"]
    assert TaskFeedback.objects.count() == 0


def test_every_operation_documents_its_errors_with_examples(db):
    schema = APIClient().get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    assert schema["components"]["schemas"]["Error"]["required"] == ["error"]
    operations = 0
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if method not in {"get", "post", "put", "patch", "delete"}:
                continue
            operations += 1
            expected = {"400", "401", "403", "414", "429"}
            if "{" in path or "requestBody" in operation:
                expected.add("404")
            if method != "get":
                expected.add("409")
            if "requestBody" in operation:
                expected |= {"413", "415"}
            responses = operation["responses"]
            assert expected <= set(responses), (method, path, sorted(responses))
            for status in expected:
                content = responses[status]["content"]["application/json"]
                assert content["schema"] == {"$ref": "#/components/schemas/Error"}
                assert content["examples"], (method, path, status)
                for example in content["examples"].values():
                    assert {"code", "message", "fields", "request_id"} <= set(example["value"]["error"])
    assert operations >= 70


def test_paginated_lists_are_documented_as_pages(db):
    schema = APIClient().get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    for path in ("/api/v1/feedback/events", "/api/v1/feedback/tasks", "/api/v1/promotions"):
        operation = schema["paths"][path]["get"]
        ref = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
        page = schema["components"]["schemas"][ref.rsplit("/", 1)[1]]
        assert {"next", "previous", "results"} <= set(page["properties"])
        assert {"cursor", "page_size"} <= {p["name"] for p in operation["parameters"]}


def test_inputs_that_refuse_to_be_empty_say_so_in_the_schema(db):
    schemas = APIClient().get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    schemas = schemas["components"]["schemas"]
    assert schemas["EventBulkInputRequest"]["properties"]["events"]["minItems"] == 1
    assert schemas["TaskFeedbackInputRequest"]["properties"]["task_snapshot"]["minProperties"] == 1
    # Integers beyond 64 bits are refused by the parser (config/parsers.py): the schema says so.
    user_id = schemas["TaskFeedbackInputRequest"]["properties"]["user_id"]
    assert (user_id["minimum"], user_id["maximum"]) == (1, 2**63 - 1)
    documents = schemas["ImportInputRequest"]["properties"]["documents"]
    assert (documents["minItems"], documents["maxItems"]) == (1, 500)
    # Each document is the strict document schema, not any object: an unknown key is refused.
    assert documents["items"] == {"$ref": "#/components/schemas/DocumentInputRequest"}
    assert schemas["DocumentInputRequest"]["additionalProperties"] is False
    assert {"id", "raw_text"} <= set(schemas["DocumentInputRequest"]["required"])


def test_an_unknown_key_in_an_imported_document_is_a_400_naming_it(world):
    body = {"documents": [{"id": "a", "raw_text": "text"}, {"id": "b", "raw_text": "text", "colour": "red"}]}
    response = world.client("admin").post("/api/v1/retrieval/documents", body, format="json")
    error = assert_error(response, 400, "invalid")
    assert error["fields"] == {"documents": {"1": {"colour": ["Unknown field."]}}}
