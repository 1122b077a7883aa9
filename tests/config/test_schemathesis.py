"""The API against its own OpenAPI schema: schemathesis generates requests for every operation, as a
user key, a service key acting for a user (``X-On-Behalf-Of``) and a staff key, and every answer
must be no 5xx, a documented status, the documented content type and headers, and a body that
matches the documented schema (the error envelope included).

Bounded for CI: a few generated examples per operation and mode (``SCHEMATHESIS_EXAMPLES``, default 2).
The long run (30+ examples, all checks, against gunicorn on PostgreSQL) is described in the README.
The data-acceptance checks (``positive_data_acceptance``, ``negative_data_rejection``) are left to
that run: a schema cannot say that a project slug must exist or that a cursor must come from a
previous page, so their findings need reading rather than a red build.
"""

from __future__ import annotations

import os

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

EXAMPLES = int(os.environ.get("SCHEMATHESIS_EXAMPLES", "2"))
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


@pytest.fixture
def api_schema(db):
    # The requests run in this thread on the test's own transaction: Django must not close the
    # connection at each request start (its test client makes the same exception).
    request_started.disconnect(close_old_connections)
    try:
        yield schemathesis.openapi.from_wsgi("/api/schema/", WSGIHandler())
    finally:
        request_started.connect(close_old_connections)


def run_every_operation(api_schema, headers: dict[str, str]) -> None:
    """Generate and send ``EXAMPLES`` requests per operation (positive and negative ones); collect
    every failing check, so that one run reports all broken operations at once."""
    failures: list[str] = []
    operations = 0
    for result in api_schema.get_all_operations():
        operation = result.ok()
        operations += 1
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @given(case=operation.as_strategy(generation_mode=mode))
            @bounded
            def check(case) -> None:
                case.call_and_validate(headers=headers, checks=CHECKS)

            try:
                check()
            except Exception as exc:  # noqa: BLE001 - every failure is collected and reported below
                failures.append(f"{operation.label} ({mode.value}): {str(exc)[:600]}")
    assert operations >= 70
    assert not failures, "\n\n".join(failures)


bounded = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)


def test_as_a_user(api_schema, world):
    run_every_operation(api_schema, {"Authorization": f"Bearer {world.keys['owner']}"})


def test_as_a_service_acting_for_a_user(api_schema, world):
    headers = {"Authorization": f"Bearer {world.service_raw}", "X-On-Behalf-Of": world.owner.external_id}
    run_every_operation(api_schema, headers)


def test_as_staff(api_schema, world):
    run_every_operation(api_schema, {"Authorization": f"Bearer {world.keys['admin']}"})
