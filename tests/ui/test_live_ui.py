"""The task manager is live: what one browser tab does shows in a second tab without a reload.

Two pages of one Chromium, each listening on GET /api/live (server-sent events), against the
real `svcc run --project examples/tasks` on SQLite, on SQLite with SVC_WORKERS=2 (the two
pages' streams may be held by different workers: the topic crosses processes through the
database) and on PostgreSQL (LISTEN/NOTIFY). What the pages send is checked as stored through
the API, on every database: this is the browser test of adding, ticking and deleting on
PostgreSQL (tests/ui/test_tasks_ui.py runs those on SQLite).
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.helpers.tasks_server import new_database, start

pytestmark = pytest.mark.ui

SETUPS = {"sqlite": ("sqlite", {}), "sqlite-2-workers": ("sqlite", {"SVC_WORKERS": "2"}),
          "postgresql": ("postgresql", {})}


@pytest.fixture(params=list(SETUPS))
def server(request, tmp_path):
    """This module's task manager: each test once per setup."""
    kind, env = SETUPS[request.param]
    running = start(tmp_path, db=new_database(kind, tmp_path, request), env=env)
    yield running
    assert running.stop() == 0


def listening(page) -> None:
    """Waits until the page's event stream is live (its first event, `listening`, arrived)."""
    expect(page.locator("main")).to_have_attribute("data-live", "on")


def checkbox(page, title: str):
    return page.get_by_role("checkbox", name=title, exact=True)


def test_a_change_in_one_tab_shows_in_the_other(page, context, server, watch):
    other = context.new_page()
    other.on("console", lambda m: m.type == "error" and watch.console_errors.append(m.text))
    other.goto(server.url + "/")
    listening(page)
    listening(other)

    page.get_by_label("New task").fill("Water the plants")
    page.get_by_role("button", name="Add").click()
    expect(checkbox(other, "Water the plants")).to_be_visible()  # no reload in `other`
    expect(other.locator("#stats")).to_have_text("1 total · 1 open · 0 done")
    [stored] = server.call("GET", "/api/tasks")  # what the page sent is what was stored
    assert (stored["title"], stored["done"]) == ("Water the plants", False)

    checkbox(other, "Water the plants").check()
    expect(checkbox(page, "Water the plants")).to_be_checked()
    expect(page.locator("#stats")).to_have_text("1 total · 0 open · 1 done")
    assert server.call("GET", f"/api/tasks/{stored['id']}")["done"] is True

    row = page.get_by_role("listitem").filter(has=checkbox(page, "Water the plants"))
    row.get_by_role("button", name="Delete").click()
    expect(checkbox(other, "Water the plants")).to_have_count(0)
    expect(other.get_by_text("No tasks yet")).to_be_visible()
    assert server.request("GET", f"/api/tasks/{stored['id']}").status == 404

    server.add("Added through the API")  # not from a page: both hear of it
    expect(checkbox(page, "Added through the API")).to_be_visible()
    expect(checkbox(other, "Added through the API")).to_be_visible()
    other.close()
