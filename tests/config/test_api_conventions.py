"""The API's edges, the same on every endpoint: one trailing-slash style (none; the other form is a JSON
404 naming the route), the alias mount marked as one, 201 for creates (200 and ``Idempotent-Replayed``
for a replay), refusals of a value outside an enumeration that list the accepted values (bodies and
filter parameters), and a request id in every response header, error body and log record."""

from __future__ import annotations

import logging
import re

import pytest
from django.conf import settings as django_settings
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework import serializers

from config.api import ChoiceField
from config.request_id import RequestIdLogFilter
from feedback.models import FeedbackEvent, Signal, TaskFeedback
from promotions.models import LearningPromotion
from retrieval.models import Document
from tests.factories import TaskFeedbackFactory

EVENTS = "/api/v1/feedback/events"
EVENT = {"event_type": "response_rated", "event_family": "assistant_response", "signal": "positive"}
HEX32 = re.compile(r"[0-9a-f]{32}")


def _api_routes() -> list[str]:
    """Every route under /api/ (both mounts), as written in the URL patterns."""
    routes = []

    def walk(patterns, prefix: str) -> None:
        for pattern in patterns:
            here = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, here)
            elif isinstance(pattern, URLPattern) and here.startswith("api/") and hasattr(pattern.callback, "cls"):
                routes.append("/" + here)

    walk(get_resolver().url_patterns, "")
    return routes


def _leaves(patterns=None, chain=()) -> list[tuple]:
    """Every view pattern of the URLconf, as the chain of patterns that leads to it."""
    found = []
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(pattern, URLResolver):
            found += _leaves(pattern.url_patterns, (*chain, pattern.pattern))
        else:
            found.append((*chain, pattern.pattern))
    return found


def _matches(chain: tuple, path: str) -> bool:
    for pattern in chain:
        matched = pattern.match(path)
        if matched is None:
            return False
        path = matched[0]
    return True


SAMPLES = {"int": "7", "uuid": "6f1c2a3e-8f0b-4c57-9a43-1f3ad4c0e1b2", "slug": "site-a", "str": "x", "path": "a/b"}


def test_no_api_path_is_matched_by_two_view_patterns():
    """The API's routes are listed busiest first (config/urls.py): that may change only how soon a
    path is found, never which view answers it, so no path may match two view patterns."""
    leaves = [chain for chain in _leaves() if str(chain[-1]) != "^api/"]  # the JSON 404 catch-all
    api = [chain for chain in leaves if "".join(map(str, chain)).startswith("api/")]
    assert len(api) >= 70
    for chain in api:
        route = "".join(map(str, chain))
        path = re.sub(r"<(?:(\w+):)?\w+>", lambda m: SAMPLES[m.group(1) or "str"], route)
        matching = ["".join(map(str, other)) for other in leaves if _matches(other, path)]
        assert matching == [route], path


# --- one trailing-slash style ---------------------------------------------------------------------


def test_no_api_route_ends_with_a_slash():
    routes = [route for route in _api_routes() if route.startswith(("/api/v1/", "/api/pdb/"))]
    assert len(routes) >= 70
    assert [route for route in routes if route.endswith("/")] == []


@pytest.mark.parametrize("debug", [False, True])
def test_the_ledger_is_served_without_a_slash_and_the_slashed_form_names_it(world, settings, debug):
    settings.DEBUG = debug
    admin = world.client("admin")
    assert admin.get("/api/v1/promotions").status_code == 200
    task = TaskFeedbackFactory(user=world.owner, rating="good", completed=True)
    body = {"promotion_type": "task_example", "subject_id": str(task.pk)}
    for response in (admin.get("/api/v1/promotions/"), admin.post("/api/v1/promotions/", body, format="json")):
        assert response.status_code == 404
        error = response.json()["error"]
        assert error["code"] == "not_found"
        assert error["message"] == "No such endpoint. Did you mean /api/v1/promotions?"
        assert error["did_you_mean"] == "/api/v1/promotions"
        assert error["fields"] == {"path": [error["message"]]}
    assert not LearningPromotion.objects.exists()  # a POST to the other form is not half-done elsewhere
    assert admin.post("/api/v1/promotions", body, format="json").status_code == 201


@pytest.mark.parametrize(
    ("path", "route"),
    [
        ("/api/v1/feedback/events/", "/api/v1/feedback/events"),
        ("/api/v1/messages/", "/api/v1/messages"),
        ("/api/pdb/v1/reggie/preferences/", "/api/pdb/v1/reggie/preferences"),
    ],
)
def test_every_slashed_path_names_its_route(world, path, route):
    response = world.client("owner").post(path, EVENT, format="json")
    assert response.status_code == 404
    assert response.json()["error"]["did_you_mean"] == route
    assert not FeedbackEvent.objects.exists()


def test_an_unknown_path_names_nothing(world):
    error = world.client("owner").get("/api/v1/nothing-here/").json()["error"]
    assert error["message"] == "No such endpoint."
    assert "did_you_mean" not in error


def test_console_pages_keep_their_slash(world):
    assert world.session_client("admin").get("/console/promotions/").status_code == 200


# --- the alias mount -------------------------------------------------------------------------------


def test_the_alias_still_serves_and_names_its_successor(world):
    owner = world.client("owner")
    response = owner.get("/api/pdb/v1/reggie/preferences")
    assert response.status_code == 200
    assert response.json() == owner.get("/api/v1/preferences").json()
    assert response["Deprecation"] == "true"
    assert response["Link"] == '</api/v1/preferences>; rel="successor-version"'
    created = owner.post("/api/pdb/v1/reggie/preferences", {"description": "Answer in Spanish."}, format="json")
    assert created.status_code == 201
    assert created["Link"] == '</api/v1/preferences>; rel="successor-version"'


@pytest.mark.parametrize(
    ("path", "successor"),
    [
        ("/api/pdb/v1/reggie/%0d%0aSet-Cookie:%20x=1", "/api/v1/%0D%0ASet-Cookie:%20x%3D1"),
        ("/api/pdb/v1/reggie/a%3E;%20rel=x", "/api/v1/a%3E%3B%20rel%3Dx"),
    ],
)
def test_the_alias_link_holds_the_path_encoded(world, path, successor):
    response = world.client("owner").get(path)
    assert response.status_code == 404
    assert response["Link"] == f'<{successor}>; rel="successor-version"'
    assert not response.has_header("Set-Cookie")


def test_the_documented_mount_is_not_marked(world):
    response = world.client("owner").get("/api/v1/preferences")
    assert not response.has_header("Deprecation")
    assert not response.has_header("Link")


# --- 201 for creates -------------------------------------------------------------------------------


def test_an_import_that_creates_documents_is_a_201_and_one_that_does_not_a_200(world, embedder):
    admin = world.client("admin")
    body = {"documents": [{"id": "handbook", "raw_text": "Meals are covered up to 40 EUR a day."}]}
    first = admin.post("/api/v1/retrieval/documents", body, format="json")
    assert (first.status_code, first.json()["created"]) == (201, 1)
    again = admin.post("/api/v1/retrieval/documents", body, format="json")
    assert (again.status_code, again.json()["unchanged"]) == (200, 1)
    body["documents"][0]["raw_text"] = "Meals are covered up to 45 EUR a day."
    updated = admin.post("/api/v1/retrieval/documents", body, format="json")
    assert (updated.status_code, updated.json()["updated"]) == (200, 1)
    assert Document.objects.count() == 1


def test_a_replayed_task_rating_is_a_200_marked_as_a_replay(world):
    body = {"task_snapshot": {"id": "t-1", "title": "Call Acme"}, "rating": "good", "idempotency_key": "rate-1"}
    owner = world.client("owner")
    first = owner.post("/api/v1/feedback/tasks", body, format="json")
    again = owner.post("/api/v1/feedback/tasks", body, format="json")
    assert (first.status_code, again.status_code) == (201, 200)
    assert not first.has_header("Idempotent-Replayed")
    assert again["Idempotent-Replayed"] == "true"
    assert again.json()["id"] == first.json()["id"]
    by_header = owner.post(
        "/api/v1/feedback/tasks",
        {k: v for k, v in body.items() if k != "idempotency_key"},
        format="json",
        HTTP_IDEMPOTENCY_KEY="rate-1",
    )
    assert (by_header.status_code, by_header.json()["id"]) == (200, first.json()["id"])
    assert TaskFeedback.objects.count() == 1


# --- refusals that list the accepted values ----------------------------------------------------------

SIGNALS = ", ".join(Signal.values)


def test_a_body_value_outside_its_choices_lists_them(world):
    response = world.client("owner").post(EVENTS, {**EVENT, "signal": "meh"}, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    expected = f'"meh" is not a valid choice. Choose one of: {SIGNALS}.'
    assert error["fields"] == {"signal": [expected]}
    assert error["message"] == f"signal: {expected}"
    assert not FeedbackEvent.objects.exists()


def test_a_bulk_item_outside_its_choices_lists_them_by_index(world):
    body = {"events": [EVENT, {**EVENT, "signal": "meh"}]}
    error = world.client("owner").post(EVENTS + "/bulk", body, format="json").json()["error"]
    assert error["items"] == [
        {"index": 1, "fields": {"signal": [f'"meh" is not a valid choice. Choose one of: {SIGNALS}.']}}
    ]
    assert not FeedbackEvent.objects.exists()


@pytest.mark.parametrize(
    ("role", "path", "parameter"),
    [
        ("owner", EVENTS, "family"),
        ("owner", EVENTS, "signal"),
        ("owner", "/api/v1/feedback/tasks", "rating"),
        ("admin", "/api/v1/promotions", "status"),
        ("admin", "/api/v1/promotions/scans", "scanner"),
        ("admin", "/api/v1/intelligence/attribution/candidates", "status"),
        ("admin", "/api/v1/intelligence/reviews", "kind"),
    ],
)
def test_a_filter_value_outside_its_choices_lists_them(world, role, path, parameter):
    response = world.client(role).get(path, {parameter: "meh"})
    assert response.status_code == 400, response.content
    (message,) = response.json()["error"]["fields"][parameter]
    assert message.startswith('"meh" is not a valid choice. Choose one of: ')
    accepted = message.removeprefix('"meh" is not a valid choice. Choose one of: ').rstrip(".").split(", ")
    assert len(accepted) >= 2
    assert "" not in accepted  # the filter form's empty choice is not offered


def test_a_refused_value_is_shortened_in_its_message(world):
    value = "x" * 500
    (message,) = (
        world.client("owner")
        .post(EVENTS, {**EVENT, "signal": value}, format="json")
        .json()["error"]["fields"]["signal"]
    )
    assert len(message) < 300
    assert message.startswith('"' + "x" * 79 + '…" is not a valid choice.')


def _serializer_classes() -> set[type]:
    found: set[type] = set()
    pending = [serializers.Serializer]
    while pending:
        cls = pending.pop()
        for sub in cls.__subclasses__():
            if sub not in found:
                found.add(sub)
                pending.append(sub)
    return found


OUR_MODULES = ("accounts.", "feedback.", "learning.", "retrieval.", "intelligence.", "promotions.", "config.")


def test_every_api_choice_field_lists_its_choices():
    """One place words the refusal: every serializer of the project's apps uses config.api.ChoiceField."""
    assert get_resolver().url_patterns  # resolving the URLs imports every API module
    ours = OUR_MODULES
    plain = []
    for cls in _serializer_classes():
        if not cls.__module__.startswith(ours):
            continue
        for name, field in cls._declared_fields.items():
            fields = [field, getattr(field, "child", None)]
            plain += [f"{cls.__module__}.{cls.__name__}.{name}" for f in fields if type(f) is serializers.ChoiceField]
    assert plain == []
    assert issubclass(ChoiceField, serializers.ChoiceField)


# --- the request id ---------------------------------------------------------------------------------


def test_every_response_carries_a_request_id(world):
    ok = world.client("owner").get(EVENTS)
    page = Client().get("/healthz")
    refused = world.client("anonymous").get(EVENTS)
    ids = [response["X-Request-ID"] for response in (ok, page, refused)]
    assert all(HEX32.fullmatch(request_id) for request_id in ids)
    assert len(set(ids)) == 3
    assert refused.json()["error"]["request_id"] == refused["X-Request-ID"]


@pytest.mark.parametrize("incoming", ["7d9e0c52-8a1b-4c3d-9e8f-0a1b2c3d4e5f", "trace:abc.DEF_1-2", "a" * 128])
def test_a_sane_incoming_request_id_is_echoed(world, incoming):
    response = world.client("owner").post(EVENTS, {**EVENT, "signal": "meh"}, format="json", HTTP_X_REQUEST_ID=incoming)
    assert response["X-Request-ID"] == incoming
    assert response.json()["error"]["request_id"] == incoming


@pytest.mark.parametrize("incoming", ["", "a" * 129, "two words", "<script>", "id;rm", "caf\u00e9"])
def test_an_unsafe_incoming_request_id_is_replaced(world, incoming):
    response = world.client("owner").get(EVENTS, HTTP_X_REQUEST_ID=incoming)
    assert response.status_code == 200
    assert HEX32.fullmatch(response["X-Request-ID"])


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []
        self.addFilter(RequestIdLogFilter())

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def request_log():
    """The records of django.request, passed through the request-id filter as the LOGGING handlers do."""
    handler = _Records()
    logger = logging.getLogger("django.request")
    logger.addHandler(handler)
    yield handler.records
    logger.removeHandler(handler)


def test_the_log_records_of_a_request_carry_its_id(world, request_log, monkeypatch):
    # A 4xx is logged after the middleware answered (the record names the request), a 500 while it runs.
    refused = world.client("owner").get(EVENTS, {"family": "meh"}, HTTP_X_REQUEST_ID="support-ticket-42")
    monkeypatch.setattr("feedback.apis.event_list", lambda **kwargs: (_ for _ in ()).throw(RuntimeError("boom")))
    client = world.client("owner")
    client.raise_request_exception = False
    failed = client.get(EVENTS, HTTP_X_REQUEST_ID="support-ticket-43")
    assert (refused.status_code, failed.status_code) == (400, 500)
    assert failed.json()["error"]["request_id"] == "support-ticket-43"
    by_id = {record.request_id: record.levelname for record in request_log}
    assert by_id == {"support-ticket-42": "WARNING", "support-ticket-43": "ERROR"}


def test_a_record_outside_a_request_says_so():
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "no request", None, None)
    RequestIdLogFilter().filter(record)
    assert record.request_id == "-"


def test_the_console_log_handler_writes_the_request_id():
    logging_config = django_settings.LOGGING
    assert "request_id" in logging_config["handlers"]["console"]["filters"]
    assert (
        "%(request_id)s" in logging_config["formatters"][logging_config["handlers"]["console"]["formatter"]]["format"]
    )
