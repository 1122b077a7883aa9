"""The API docs (/api/docs/, Swagger UI served from the repository) as an integrator uses them: every
operation expanded shows real examples and never an invented ``additionalProp1``; "Authorize" with a
service key and Try-it-out with X-On-Behalf-Of act for that user."""

from __future__ import annotations

import json
import os

import pytest
from rest_framework.test import APIClient

from accounts.models import ApiKey
from accounts.services import api_key_create
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

SCREENSHOTS = os.environ.get("SCREENSHOT_DIR", "")


def _docs(browser, live_server):
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.goto(live_server.url + "/api/docs/")
    page.locator(".opblock").first.wait_for()
    return context, page


@pytest.mark.one_backend  # the schema and its rendering are the same on every database; the slowest test
def test_every_operation_renders_its_examples_without_invented_keys(browser, live_server):
    schema = APIClient().get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    operations = sum(1 for item in schema["paths"].values() for method in item if method != "parameters")
    context, page = _docs(browser, live_server)
    try:
        assert page.locator(".opblock-tag-section").count() == len(schema["tags"])
        summaries = page.locator(".opblock-summary-control")
        assert summaries.count() == operations
        assert page.locator('.opblock-summary-path[data-path^="/api/pdb"]').count() == 0
        # Expanding every operation by clicking re-renders the page each time; Swagger's own action does the
        # same. One tag at a time: rendering all bodies in one go took over 20 s on a loaded 2-core CI machine.
        by_tag: dict[str, list[list[str]]] = {}
        for item in schema["paths"].values():
            for method, op in item.items():
                if method != "parameters":
                    by_tag.setdefault(op["tags"][0], []).append(["operations", op["tags"][0], op["operationId"]])
        shown = 0
        for keys in by_tag.values():
            page.evaluate("keys => keys.forEach(key => ui.getSystem().layoutActions.show(key, true))", keys)
            shown += len(keys)
            page.locator(".opblock-body").nth(shown - 1).wait_for(timeout=60_000)
            # An expanded operation first shows a spinner while Swagger resolves its part of the schema; the
            # examples exist only once every spinner is gone (the last CI run read one still resolving).
            page.wait_for_function(
                "() => !document.querySelector('.opblock-loading-animation')", timeout=60_000, polling=250
            )
        assert shown == operations
        assert page.locator(".opblock-body").count() == operations
        assert page.locator(".opblock-loading-animation").count() == 0
        text = page.locator("#swagger-ui").inner_text()
        assert "additionalProp1" not in text
        # What an integrator reads first: a real request and the error an operation's own field gives.
        messages = page.locator("#operations-Messages-messages_create")
        assert "Please always answer in British English." in messages.inner_text()
        assert "X-On-Behalf-Of" in messages.inner_text()
        assert "Idempotency-Key" in messages.inner_text()
        assert "Choose one of: user, assistant, system" in messages.inner_text()
        if SCREENSHOTS:
            messages.screenshot(path=os.path.join(SCREENSHOTS, "api-docs-messages.png"))
    finally:
        context.close()


def test_authorize_with_a_service_key_and_try_it_out_for_a_user(browser, live_server):
    admin = UserFactory(username="ops", is_staff=True)
    UserFactory(username="alice", external_id="demo-alice")
    _, raw = api_key_create(owner=admin, name="backend", kind=ApiKey.Kind.SERVICE)
    context, page = _docs(browser, live_server)
    try:
        page.locator(".auth-wrapper .authorize").click()
        bearer = page.locator(".dialog-ux .auth-container").first
        bearer.locator("#auth-bearer-value").fill(raw)
        bearer.get_by_role("button", name="Apply credentials").click()
        bearer.get_by_role("button", name="Close").click()

        operation = page.locator("#operations-Identity-me_retrieve")
        operation.locator(".opblock-summary-control").click()
        operation.get_by_role("button", name="Try it out").click()
        operation.locator('tr[data-param-name="X-On-Behalf-Of"] input').fill("demo-alice")
        operation.locator('tr[data-param-name="X-Request-ID"] input').fill("docs-try-1")
        operation.get_by_role("button", name="Execute").click()
        body = operation.locator(".live-responses-table .response-col_description pre").first
        body.wait_for()
        answer = json.loads(body.inner_text())
        assert (answer["username"], answer["acting_for"], answer["is_service"]) == ("alice", True, True)
        assert "docs-try-1" in operation.locator(".live-responses-table").inner_text()  # the echoed header
        if SCREENSHOTS:
            operation.screenshot(path=os.path.join(SCREENSHOTS, "api-docs-try-it-out.png"))
    finally:
        context.close()
