"""The OpenAPI schema an integrator reads (/api/schema/, rendered at /api/docs/): one documented mount,
a described tag per resource, a summary and a description on every operation, the headers each
operation honours, the security scheme, error answers with real examples, examples that match their
schemas, and no free-form object without an example (Swagger would invent ``additionalProp1``)."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
import pytest
from rest_framework.test import APIClient

METHODS = ("get", "post", "put", "patch", "delete")

# Operations that take no X-On-Behalf-Of: for people only (staff review, key management).
PEOPLE_ONLY = (
    "/api/v1/promotions",
    "/api/v1/api-keys",
    "/api/v1/users/",
    "/api/v1/intelligence/reviews",
    "/api/v1/intelligence/attribution/",
)
# The operations that read Idempotency-Key, and the body field it stands for.
IDEMPOTENT = {
    ("post", "/api/v1/feedback/events"): "idempotency_key",
    ("post", "/api/v1/feedback/tasks"): "idempotency_key",
    ("post", "/api/v1/messages"): "client_message_id",
    ("post", "/api/v1/intelligence/cards/{card_id}/feedback"): "idempotency_key",
}
# What an assistant backend calls: each shows a request (if it takes a body) and a response example.
MAIN_OPERATIONS = [
    ("post", "/api/v1/messages"),
    ("get", "/api/v1/context"),
    ("post", "/api/v1/context"),
    ("post", "/api/v1/responses/feedback"),
    ("post", "/api/v1/feedback/events"),
    ("post", "/api/v1/feedback/events/bulk"),
    ("post", "/api/v1/feedback/tasks"),
    ("post", "/api/v1/retrieval/search"),
    ("post", "/api/v1/retrieval/feedback"),
    ("post", "/api/v1/retrieval/documents"),
    ("post", "/api/v1/promotions"),
    ("get", "/api/v1/promotions/{promotion_id}"),
]


@pytest.fixture(scope="module")
def schema(django_db_blocker) -> dict[str, Any]:
    with django_db_blocker.unblock():
        return APIClient().get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()


def operations(schema: dict[str, Any]):
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if method in METHODS:
                yield method, path, operation


def resolve(schema: dict[str, Any], node: Any) -> Any:
    """``node`` with every ``$ref`` inlined (the schema's components have no cycles)."""
    if isinstance(node, dict):
        if "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[1]
            return resolve(schema, schema["components"]["schemas"][name])
        return {key: resolve(schema, value) for key, value in node.items()}
    if isinstance(node, list):
        return [resolve(schema, value) for value in node]
    return node


def as_json_schema(node: Any) -> Any:
    """An OpenAPI 3.0 schema as JSON Schema: ``nullable`` becomes a null alternative."""
    if isinstance(node, list):
        return [as_json_schema(value) for value in node]
    if not isinstance(node, dict):
        return node
    node = {key: as_json_schema(value) for key, value in node.items() if key not in ("example", "readOnly")}
    if node.pop("nullable", False):
        return {"anyOf": [node, {"type": "null"}]}
    return node


def media_types(operation: dict[str, Any]):
    """(where, media type object) of the operation's request body and each of its responses."""
    if "requestBody" in operation:
        yield "request", operation["requestBody"]["content"]["application/json"]
    for status, response in operation["responses"].items():
        for media in response.get("content", {}).values():
            yield status, media


def test_only_the_documented_mount_is_in_the_schema(schema):
    paths = list(schema["paths"])
    assert len(paths) >= 60
    assert [path for path in paths if not path.startswith("/api/v1/")] == []
    assert not any("/api/pdb" in path for path in paths)
    assert [path for path in paths if path.endswith("/")] == []
    assert "/api/pdb/v1/reggie/" in schema["info"]["description"]  # the alias is described, not listed


def test_every_operation_has_one_described_tag(schema):
    described = {tag["name"]: tag.get("description", "") for tag in schema["tags"]}
    used = set()
    for method, path, operation in operations(schema):
        assert len(operation["tags"]) == 1, (method, path)
        used.add(operation["tags"][0])
    assert used == set(described)
    assert all(len(text) > 20 for text in described.values()), described
    assert len(used) >= 20  # per resource, not per app


@pytest.mark.parametrize(
    ("method", "path", "tag"),
    [
        ("post", "/api/v1/feedback/events", "Events"),
        ("post", "/api/v1/feedback/tasks", "Task ratings"),
        ("post", "/api/v1/messages", "Messages"),
        ("get", "/api/v1/context", "Context"),
        ("post", "/api/v1/preferences/{item_id}/share", "Preferences"),
        ("post", "/api/v1/promotions/scan", "Scans"),
        ("post", "/api/v1/promotions/{promotion_id}/apply", "Promotions"),
        ("post", "/api/v1/retrieval/search", "Retrieval search"),
        ("post", "/api/v1/retrieval/feedback", "Retrieval feedback"),
        ("get", "/api/v1/intelligence/projects/{project_slug}/packet", "Intelligence packets"),
        ("post", "/api/v1/users/{user_id}/erase", "Users"),
    ],
)
def test_operations_are_tagged_by_their_resource(schema, method, path, tag):
    assert schema["paths"][path][method]["tags"] == [tag]


def test_every_operation_has_a_summary_and_a_description(schema):
    summaries = set()
    for method, path, operation in operations(schema):
        assert operation.get("summary"), (method, path)
        assert len(operation.get("description", "")) > 40, (method, path)
        assert operation["description"] != operation["summary"], (method, path)
        summaries.add(operation["summary"])
    # Operations served by one view per action (promotions, reviews, shares) are told apart too.
    assert len(summaries) == sum(1 for _ in operations(schema))


def header_parameters(operation: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in operation.get("parameters", []) if p["in"] == "header"}


def test_x_on_behalf_of_is_documented_where_a_service_key_acts_for_a_user(schema):
    documented = 0
    for method, path, operation in operations(schema):
        headers = header_parameters(operation)
        people_only = path.startswith(PEOPLE_ONLY)
        assert ("X-On-Behalf-Of" in headers) != people_only, (method, path)
        if not people_only:
            documented += 1
            assert not headers["X-On-Behalf-Of"].get("required", False)
            assert headers["X-On-Behalf-Of"]["schema"] == {"type": "string"}
    assert documented >= 45
    # The user's own data: a service key must name the user, and the 400 without it is an example.
    operation = schema["paths"]["/api/v1/preferences"]["get"]
    assert "Required with a service key" in header_parameters(operation)["X-On-Behalf-Of"]["description"]
    examples = operation["responses"]["400"]["content"]["application/json"]["examples"]
    assert examples["user_not_named"]["value"]["error"]["fields"] == {
        "X-On-Behalf-Of": ["A service key must name the user with the X-On-Behalf-Of header."]
    }


def test_idempotency_key_is_documented_where_it_is_honoured(schema):
    for method, path, operation in operations(schema):
        headers = header_parameters(operation)
        field = IDEMPOTENT.get((method, path))
        assert ("Idempotency-Key" in headers) == (field is not None), (method, path)
        if field:
            assert f"`{field}`" in headers["Idempotency-Key"]["description"]
            replay = operation["responses"]["200"]
            assert replay["headers"]["Idempotent-Replayed"]["schema"]["enum"] == ["true"]
            assert operation["responses"]["201"]["description"] != replay["description"]
            (conflict,) = operation["responses"]["409"]["content"]["application/json"]["examples"].values()
            assert field in conflict["value"]["error"]["fields"]


def test_the_bearer_key_is_the_security_scheme_of_every_operation(schema):
    scheme = schema["components"]["securitySchemes"]["ApiKey"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")
    assert "X-On-Behalf-Of" in scheme["description"]
    for method, path, operation in operations(schema):
        assert {"ApiKey": []} in operation["security"], (method, path)


def test_the_request_id_is_documented_on_every_request_and_response(schema):
    error = schema["components"]["schemas"]["Error"]["properties"]["error"]
    assert "request_id" in error["required"]
    for method, path, operation in operations(schema):
        assert not header_parameters(operation)["X-Request-ID"].get("required", False)
        for status, response in operation["responses"].items():
            assert response["headers"]["X-Request-ID"]["required"] is True, (method, path, status)
            assert response["description"], (method, path, status)


def test_every_4xx_has_examples_and_the_400_names_the_operations_own_input(schema):
    for method, path, operation in operations(schema):
        own = {p["name"] for p in operation.get("parameters", [])} | {"path", "body"}
        if "requestBody" in operation:
            body = resolve(schema, operation["requestBody"]["content"]["application/json"]["schema"])
            own |= set(body.get("properties", {}))
        for status, response in operation["responses"].items():
            if not status.startswith("4"):
                continue
            examples = list(response["content"]["application/json"]["examples"].values())
            assert examples, (method, path, status)
            for example in examples:
                assert example["value"]["error"]["request_id"]
        first = next(iter(operation["responses"]["400"]["content"]["application/json"]["examples"].values()))
        fields = set(first["value"]["error"]["fields"])
        assert fields, (method, path)
        assert fields <= own, (method, path, fields)


def test_a_choice_error_example_lists_the_choices(schema):
    examples = schema["paths"]["/api/v1/feedback/tasks"]["post"]["responses"]["400"]["content"]["application/json"]
    first = next(iter(examples["examples"].values()))["value"]["error"]
    assert first["fields"] == {"rating": ['"meh" is not a valid choice. Choose one of: good, bad.']}
    query = schema["paths"]["/api/v1/promotions"]["get"]["responses"]["400"]["content"]["application/json"]
    message = next(iter(query["examples"].values()))["value"]["error"]["message"]
    assert message.startswith("page_size:") or "Choose one of:" in message


@pytest.mark.parametrize(("method", "path"), MAIN_OPERATIONS)
def test_the_main_operations_show_request_and_response_examples(schema, method, path):
    operation = schema["paths"][path][method]
    if "requestBody" in operation:
        assert operation["requestBody"]["content"]["application/json"].get("examples"), "request"
    success = [status for status in operation["responses"] if status.startswith("2")]
    assert any(operation["responses"][status]["content"]["application/json"].get("examples") for status in success)


def test_every_example_matches_its_schema(schema):
    checked = 0
    for method, path, operation in operations(schema):
        for where, media in media_types(operation):
            target = as_json_schema(resolve(schema, media["schema"]))
            for name, example in media.get("examples", {}).items():
                try:
                    jsonschema.validate(example["value"], target)
                except jsonschema.ValidationError as exc:
                    pytest.fail(f"{method} {path} {where} example {name}: {exc.message}")
                checked += 1
    assert checked >= 300


def free_form_objects_without_example(node: Any, trail: str = "") -> list[str]:
    """Where Swagger would render ``additionalProp1``: an object without properties or an example."""
    found = []
    if isinstance(node, dict):
        if node.get("type") == "object" and "properties" not in node and "example" not in node:
            found.append(trail)
        for key, value in node.items():
            if key != "example":
                found += free_form_objects_without_example(value, f"{trail}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += free_form_objects_without_example(value, f"{trail}[{index}]")
    return found


def test_no_rendered_example_invents_keys(schema):
    assert "additionalProp1" not in json.dumps(schema)
    for method, path, operation in operations(schema):
        for where, media in media_types(operation):
            if media.get("examples") or "example" in media:
                continue  # Swagger shows these, not a sample built from the schema
            resolved = resolve(schema, media["schema"])
            assert free_form_objects_without_example(resolved) == [], (method, path, where)


def test_free_form_objects_carry_an_example_in_the_components(schema):
    components = copy.deepcopy(schema["components"]["schemas"])
    components.pop("Error")  # shown only through the examples of each error answer
    assert free_form_objects_without_example(components) == []
