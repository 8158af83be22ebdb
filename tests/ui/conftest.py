"""Fixtures for driving the task manager in headless Chromium (Debian's, via Playwright).

Each test gets its own `svcc run --project examples/tasks` on a fresh database and a fresh
browser context that refuses (and reports) any request not addressed to that server, and
records console errors; both are asserted empty when the test ends.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field

import pytest

from tests.helpers.tasks_server import TasksServer, new_database, start

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
DESKTOP = {"width": 1280, "height": 800}


@pytest.fixture(scope="module")
def browser():
    """One Chromium per test module, not per session: Playwright's sync API keeps an asyncio
    loop running in this thread while it is open, and a pytest-xdist worker may run other
    modules (whose own `asyncio.run` would then fail) after this one."""
    if not shutil.which(CHROMIUM):
        pytest.skip("Debian's chromium is not installed (make test installs it)")
    from playwright.sync_api import expect, sync_playwright
    expect.set_options(timeout=10_000)  # the machine is shared; be patient, not flaky
    with sync_playwright() as playwright:
        # launch() gives every browser a fresh temporary user-data dir.
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(params=["sqlite"])
def server(request, tmp_path) -> TasksServer:
    """The task manager on SQLite; a test marked `@both_databases` (tests/helpers/tasks_server.py)
    runs on PostgreSQL too. The page does the same on both (tests/e2e/test_tasks_api.py runs
    every API call on both), so only what the page stores runs on PostgreSQL in a browser:
    editing a title here, adding, ticking and deleting in test_live_ui.py (which runs on
    every database). A browser test costs seconds."""
    running = start(tmp_path, db=new_database(request.param, tmp_path, request))
    yield running
    assert running.stop() == 0


@dataclass
class Watch:
    """What the page did that a test must not let pass: foreign requests, console errors."""

    requests: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    allow_http_errors: bool = False  # set by tests that provoke a 4xx on purpose

    def errors(self) -> list[str]:
        if not self.allow_http_errors:
            return self.console_errors
        return [e for e in self.console_errors if not e.startswith("Failed to load resource")]


@pytest.fixture
def watch() -> Watch:
    return Watch()


@pytest.fixture
def context(browser, server, watch):
    context = browser.new_context(viewport=DESKTOP)
    origin = server.url + "/"

    def guard(route):
        url = route.request.url
        if url.startswith(origin):
            route.continue_()
        else:
            watch.blocked.append(url)
            route.abort()

    context.route("**/*", guard)
    context.set_default_timeout(10_000)
    yield context
    context.close()
    assert watch.blocked == [], "requests left 127.0.0.1"
    assert all(url.startswith(origin) for url in watch.requests), watch.requests
    assert watch.errors() == [], "console errors"


@pytest.fixture
def page(context, server, watch):
    from playwright.sync_api import expect
    page = context.new_page()
    page.on("request", lambda request: watch.requests.append(request.url))
    page.on("console", lambda message: message.type == "error" and watch.console_errors.append(message.text))
    page.on("pageerror", lambda error: watch.console_errors.append(f"uncaught: {error}"))
    page.goto(server.url + "/")
    expect(page.locator("main")).to_have_attribute("aria-busy", "false")
    return page
