"""The task manager in headless Chromium: what a user does at http://127.0.0.1:8091.

Every test runs against the real `svcc run --project examples/tasks` (see conftest.py), checks
what the page shows and, through the API, what the server stored.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.helpers.tasks_server import both_databases

pytestmark = pytest.mark.ui
PHONE = {"width": 390, "height": 844}


def row(page, title: str):
    """The list item of the task with this title."""
    return page.get_by_role("listitem").filter(has=page.get_by_role("checkbox", name=title, exact=True))


def reload(page) -> None:
    """Reloads and waits until the first load of tasks has finished."""
    page.reload()
    expect(page.locator("main")).to_have_attribute("aria-busy", "false")


def titles(page) -> list[str]:
    return [t.strip() for t in page.locator("#tasks li .title").all_inner_texts()]


def add(page, title: str) -> None:
    page.get_by_label("New task").fill(title)
    page.get_by_role("button", name="Add").click()
    expect(page.get_by_role("checkbox", name=title, exact=True)).to_be_visible()


def test_add_with_the_button_and_with_enter(page, server):
    expect(page.get_by_text("No tasks yet")).to_be_visible()
    add(page, "Buy milk")
    field = page.get_by_label("New task")
    expect(field).to_have_value("")
    field.fill("Walk the dog")
    field.press("Enter")
    expect(page.get_by_role("checkbox", name="Walk the dog")).to_be_visible()
    assert titles(page) == ["Walk the dog", "Buy milk"]  # newest first
    expect(page.locator("#stats")).to_have_text("2 total · 2 open · 0 done")
    expect(page.get_by_role("status")).to_have_text("Task added.")
    stored = server.call("GET", "/api/tasks")
    assert [(t["title"], t["done"]) for t in stored] == [("Walk the dog", False), ("Buy milk", False)]


def test_titles_are_shown_as_text_not_html(page, server, watch):
    title = '<img src="/x" onerror="document.title=1"> & <b>bold</b>'
    server.add(title)
    reload(page)
    expect(page.get_by_role("checkbox", name=title)).to_be_visible()
    assert titles(page) == [title]
    assert page.locator("#tasks img, #tasks b").count() == 0
    assert not any(url.endswith("/x") for url in watch.requests)


def test_toggle_done_and_back(page, server):
    task = server.add("Water the plants")
    reload(page)
    checkbox = page.get_by_role("checkbox", name="Water the plants")
    checkbox.check()
    expect(page.locator("#stats")).to_have_text("1 total · 0 open · 1 done")
    expect(checkbox).to_be_checked()
    assert server.call("GET", f"/api/tasks/{task['id']}")["done"] is True
    checkbox.uncheck()
    expect(page.locator("#stats")).to_have_text("1 total · 1 open · 0 done")
    assert server.call("GET", f"/api/tasks/{task['id']}")["done"] is False


@both_databases
def test_edit_a_title_inline(page, server):
    task = server.add("Draft the report")
    reload(page)
    row(page, "Draft the report").get_by_role("button", name="Edit").click()
    editor = page.get_by_role("textbox", name="Edit title")
    expect(editor).to_be_focused()
    expect(editor).to_have_value("Draft the report")
    editor.fill("Send the report")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("checkbox", name="Send the report")).to_be_visible()
    expect(page.get_by_role("button", name="Edit")).to_be_focused()
    stored = server.call("GET", f"/api/tasks/{task['id']}")
    assert stored["title"] == "Send the report" and stored["done"] is False

    # Enter saves too.
    row(page, "Send the report").get_by_role("button", name="Edit").click()
    editor.fill("Send the final report")
    editor.press("Enter")
    expect(page.get_by_role("checkbox", name="Send the final report")).to_be_visible()
    assert server.call("GET", f"/api/tasks/{task['id']}")["title"] == "Send the final report"


def test_escape_and_cancel_leave_the_title_alone(page, server):
    task = server.add("Keep me")
    reload(page)
    for leave in (lambda: page.keyboard.press("Escape"),
                  lambda: page.get_by_role("button", name="Cancel").click()):
        row(page, "Keep me").get_by_role("button", name="Edit").click()
        page.get_by_role("textbox", name="Edit title").fill("Changed my mind")
        leave()
        expect(page.get_by_role("textbox", name="Edit title")).to_have_count(0)
        expect(page.get_by_role("checkbox", name="Keep me")).to_be_visible()
    assert server.call("GET", f"/api/tasks/{task['id']}") == task


def test_delete(page, server):
    doomed = server.add("Delete me")
    server.add("Stay")
    reload(page)
    row(page, "Delete me").get_by_role("button", name="Delete").click()
    expect(page.get_by_role("checkbox", name="Delete me")).to_have_count(0)
    assert titles(page) == ["Stay"]
    expect(page.locator("#stats")).to_have_text("1 total · 1 open · 0 done")
    assert server.request("GET", f"/api/tasks/{doomed['id']}").status == 404


def test_filters(page, server):
    for title, done in [("one", False), ("two", True), ("three", False)]:
        server.add(title, done=done)
    reload(page)
    filters = {name: page.get_by_role("button", name=name, exact=True) for name in ("All", "Open", "Done")}
    expect(filters["All"]).to_have_attribute("aria-pressed", "true")
    assert titles(page) == ["three", "two", "one"]
    filters["Open"].click()
    expect(filters["Open"]).to_have_attribute("aria-pressed", "true")
    assert titles(page) == ["three", "one"]
    filters["Done"].click()
    assert titles(page) == ["two"]
    # Finishing a task while "Open" is shown moves it out of view.
    filters["Open"].click()
    page.get_by_role("checkbox", name="three").check()
    expect(page.get_by_role("checkbox", name="three")).to_have_count(0)
    assert titles(page) == ["one"]
    filters["All"].click()
    assert titles(page) == ["three", "two", "one"]


def test_a_too_long_title_is_refused_before_sending(page, server):
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.method))
    field = page.get_by_label("New task")
    for too_long in ("x" * 241, "あ" * 81):
        field.fill(too_long)
        page.get_by_role("button", name="Add").click()
        expect(page.get_by_role("status")).to_contain_text("240")
        expect(field).to_have_attribute("aria-invalid", "true")
    assert "POST" not in requests
    assert server.call("GET", "/api/stats")["total"] == 0
    add(page, "あ" * 80)  # exactly 240 bytes is fine
    expect(field).not_to_have_attribute("aria-invalid", "true")
    # The inline editor checks the same limit.
    row(page, "あ" * 80).get_by_role("button", name="Edit").click()
    page.get_by_role("textbox", name="Edit title").fill("あ" * 81)
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("status")).to_contain_text("240")
    assert "PUT" not in requests


def test_server_errors_appear_in_the_status_line(page, server, watch):
    watch.allow_http_errors = True  # the 404 below is the point of this test
    task = server.add("Gone elsewhere")
    # A page that does not hear of changes (its event stream ended: 204 ends an EventSource for
    # good), so the task deleted below is still shown, as after a lost connection.
    page.route("**/api/live", lambda route: route.fulfill(status=204))
    reload(page)
    server.call("DELETE", f"/api/tasks/{task['id']}")
    page.get_by_role("checkbox", name="Gone elsewhere").check()
    status = page.get_by_role("status")
    expect(status).to_have_text(f"no task with id {task['id']}")
    expect(status).to_have_attribute("aria-live", "polite")
    expect(page.get_by_role("checkbox", name="Gone elsewhere")).to_have_count(0)  # list refreshed


# Holds every fetch in the page but the live stream's while window.holding is true, until
# window.releaseAll().
HOLD_FETCH = """
window.holding = true;
window.held = [];
const realFetch = window.fetch;
window.fetch = (url, init) => window.holding && !String(url).endsWith("/api/live")
    ? new Promise((resolve) => window.held.push(() => resolve(realFetch(url, init))))
    : realFetch(url, init);
window.releaseAll = () => {
    window.holding = false;
    window.held.splice(0).forEach((go) => go());
};
"""


def controls(page):
    return [page.get_by_role("button", name=name, exact=True) for name in ("Add", "All", "Open", "Done")]


def test_controls_are_disabled_while_a_request_is_in_flight(page, server):
    server.add("Existing")
    # Without the live stream: its events would start refreshes of their own at any moment.
    page.route("**/api/live", lambda route: route.fulfill(status=204))
    page.add_init_script(HOLD_FETCH)
    page.reload()
    page.wait_for_function("window.held.length === 3")  # the first load: tasks, stats, files
    for control in controls(page):
        expect(control).to_be_disabled()
    # Enter while the page is still loading is queued, not lost.
    page.get_by_label("New task").fill("Early bird")
    page.get_by_label("New task").press("Enter")
    expect(page.get_by_label("New task")).to_have_value("")
    page.evaluate("window.releaseAll()")
    expect(page.get_by_role("checkbox", name="Early bird")).to_be_enabled()
    for control in controls(page):
        expect(control).to_be_enabled()
    assert [t["title"] for t in server.call("GET", "/api/tasks")] == ["Early bird", "Existing"]

    page.evaluate("window.holding = true")
    row(page, "Existing").get_by_role("button", name="Delete").click()
    page.wait_for_function("window.held.length === 1")
    for control in [*controls(page), page.get_by_role("checkbox", name="Early bird"),
                    row(page, "Early bird").get_by_role("button", name="Edit")]:
        expect(control).to_be_disabled()
    page.evaluate("window.releaseAll()")
    expect(page.get_by_role("checkbox", name="Existing")).to_have_count(0)
    expect(page.get_by_role("checkbox", name="Early bird")).to_be_enabled()


def test_the_latest_100_note_and_stats_beyond_it(page, server):
    for n in range(101):
        server.add(f"task {n}", done=n < 10)
    reload(page)
    expect(page.get_by_text(re.compile("Only the latest 100"))).to_be_visible()
    expect(page.locator("#tasks li")).to_have_count(100)
    expect(page.locator("#stats")).to_have_text("101 total · 91 open · 10 done")
    assert titles(page)[0] == "task 100"


def test_phone_width_fits_and_works(page, server):
    page.set_viewport_size(PHONE)
    add(page, "A task with a rather long title that has to wrap on a phone screen nicely")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], f"horizontal scrolling at phone width ({width}px)"
    for name in ("Add", "Edit", "Delete", "All", "Open", "Done"):
        box = page.get_by_role("button", name=name, exact=True).bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], name


def test_a_refused_field_is_named_in_the_status_line(page, server, watch):
    """The server's 422 (TaskInput's `@length(1, 240)` on title) names the field: the page
    shows its reason. The page refuses such titles itself, so a valid title is added with the
    Add button and its request's body is changed on the way to the server."""
    watch.allow_http_errors = True  # the 422 is the point of this test

    def empty_title(route):
        if route.request.method == "POST":
            route.continue_(post_data='{"title": "", "done": false}')
        else:
            route.continue_()

    page.route("**/api/tasks", empty_title)
    page.get_by_label("New task").fill("fine on the page")
    page.get_by_role("button", name="Add").click()
    status = page.get_by_role("status")
    expect(status).to_have_text(
        "the request's fields are not acceptable: title must be 1 to 240 bytes long")
    expect(status).to_have_class(re.compile(r"\berror\b"))
    assert server.call("GET", "/api/stats")["total"] == 0


def test_attach_download_and_remove_files(page, server):
    """Two files chosen at once are uploaded through the generated client (multipart), listed
    under their task with safe names, downloaded back byte for byte, and removed; a file over
    the 10 MiB limit is refused before a byte is sent; deleting the task removes its files."""
    task = server.add("Scan the receipts")
    reload(page)
    data = bytes(range(256)) * 40
    page.locator(f"#attach-{task['id']}").set_input_files([
        {"name": "../../receipt\x01.bin", "mimeType": "application/octet-stream", "buffer": data},
        {"name": "notes.txt", "mimeType": "text/plain", "buffer": b"paid in full"}])
    status = page.get_by_role("status")
    expect(status).to_have_text("2 files attached.")
    files = row(page, "Scan the receipts").get_by_role("list", name="Attachments").get_by_role(
        "listitem")
    expect(files).to_have_count(2)
    expect(files.nth(0).get_by_role("link")).to_have_text("receipt.bin")
    expect(files.nth(1)).to_contain_text("notes.txt")
    stored = server.call("GET", "/api/attachments")
    assert [(a["name"], a["size"], a["sha256"]) for a in stored] == [
        ("receipt.bin", len(data), hashlib.sha256(data).hexdigest()),
        ("notes.txt", 12, hashlib.sha256(b"paid in full").hexdigest())]
    with page.expect_download() as download:
        files.nth(0).get_by_role("link").click()
    assert download.value.suggested_filename == "receipt.bin"
    assert Path(download.value.path()).read_bytes() == data
    files.nth(1).get_by_role("button", name="Remove notes.txt").click()
    expect(status).to_have_text("Attachment removed.")
    expect(files).to_have_count(1)
    page.locator(f"#attach-{task['id']}").set_input_files(
        {"name": "scan.tiff", "mimeType": "image/tiff", "buffer": bytes(11 * 2**20)})
    expect(status).to_have_text("scan.tiff is too large: 11.0 MiB, the limit is 10 MiB.")
    assert len(server.call("GET", "/api/attachments")) == 1
    row(page, "Scan the receipts").get_by_role("button", name="Delete").click()
    expect(status).to_have_text("Task deleted.")
    assert server.call("GET", "/api/attachments") == []
