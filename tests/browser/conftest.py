"""Headless Chromium (Debian's package) driven by Playwright, against pytest-django's live server.

A missing browser skips these tests locally; in CI (CI=true) it is a failure.
"""

from __future__ import annotations

import os
import shutil

import pytest

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
# Playwright's sync API runs an event loop in this thread; the ORM calls the tests make
# between browser steps are ordinary synchronous ones.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(scope="session")
def browser():
    if not shutil.which(CHROMIUM) and not os.path.exists(CHROMIUM):
        if os.environ.get("CI") == "true":
            pytest.fail(f"Chromium is required in CI but {CHROMIUM} is missing (.ci/run installs it)")
        pytest.skip(f"no Chromium at {CHROMIUM}")
    from playwright.sync_api import sync_playwright  # noqa: PLC0415  # heavy optional dependency, browser runs only

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-background-networking",
                "--disable-gpu",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        yield browser
        browser.close()


@pytest.fixture
def logged_in_page(browser, live_server, client):
    """A browser page whose session belongs to a given user: ``open(user, path)``."""
    contexts = []

    def open_as(user, path):
        client.force_login(user)
        context = browser.new_context(base_url=live_server.url)
        context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}])
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(10_000)
        page.goto(live_server.url + path)
        return page

    yield open_as
    for context in contexts:
        context.close()
