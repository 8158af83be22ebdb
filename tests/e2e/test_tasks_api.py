"""The task manager's JSON API over real HTTP, against `svcc run --project examples/tasks`.

Most tests share one server (module scope) and only look at tasks they created; tests about
counts, limits, restarts and settings start their own server on their own database.
"""

from __future__ import annotations

import re
import shutil
import socket
import sqlite3
import subprocess

import pytest

from tests.helpers.openapi_check import exchange_problems, openapi_document, recording
from tests.helpers.svc_process import run_to_end
from tests.helpers.tasks_server import DATABASES, PROJECT, launch, new_database, start

RFC3339_UTC = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")
TASK_KEYS = {"id", "title", "done", "created_at", "updated_at", "priority", "tags"}


@pytest.fixture(scope="module", autouse=True)
def exchanges_match_the_openapi_document():
    """Every request and answer of this module validates against `svcc openapi`'s document of
    the task manager (tests/helpers/openapi_check.py), so the two cannot drift apart."""
    with recording() as exchanges:
        yield
    assert len(exchanges) >= 20
    problems = exchange_problems(openapi_document(["--project", str(PROJECT)]), exchanges)
    assert not problems, "\n".join(problems)


@pytest.fixture(scope="module", params=DATABASES)
def server(request, tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("tasks-api")
    running = start(tmp_path, db=new_database(request.param, tmp_path, request))
    yield running
    assert running.stop() == 0


@pytest.fixture(params=DATABASES)
def fresh_db(request, tmp_path) -> str:
    """A new database of each kind, for tests that start their own server."""
    return new_database(request.param, tmp_path, request, "own.sqlite")


@pytest.fixture
def task(server) -> dict:
    return server.add("a task to work on")


def assert_task(task: dict, title: str, done: bool) -> None:
    assert set(task) == TASK_KEYS
    assert type(task["id"]) is int and task["id"] >= 1
    assert task["title"] == title
    assert task["done"] is done
    assert RFC3339_UTC.match(task["created_at"]), task["created_at"]
    assert RFC3339_UTC.match(task["updated_at"]), task["updated_at"]
    assert task["priority"] in ("low", "normal", "high") and isinstance(task["tags"], list)


def assert_error(response, status: int) -> str:
    assert response.status == status, (response.status, response.body)
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    # `fields`: a body that does not read names the field it is about (a 400), and one whose
    # fields break their rules names each of them (a 422)
    assert set(body) - {"fields"} == {"error"} and isinstance(body["error"], str) and body["error"]
    return body["error"]


# ---- the happy paths, one per row of the API table ----

def test_post_creates_a_task(server):
    created = server.add("Buy milk")
    assert_task(created, "Buy milk", False)
    assert created["created_at"] == created["updated_at"]
    assert server.add("Already finished", done=True)["done"] is True


def test_get_one_returns_the_stored_task(server, task):
    assert server.call("GET", f"/api/tasks/{task['id']}") == task


def test_get_list_is_newest_first(server):
    added = [server.add(f"list order {n}") for n in range(3)]
    listed = server.call("GET", "/api/tasks")
    assert isinstance(listed, list)
    for item in listed:
        assert set(item) == TASK_KEYS
    ids = [item["id"] for item in listed]
    assert ids == sorted(ids, reverse=True)
    assert listed[:3] == added[::-1]


def test_patch_sets_priority_and_tags_an_enum_and_a_json_column(server, task):
    """An enum stored by name and a List stored as JSON (TEXT on SQLite, jsonb on
    PostgreSQL), read back into the Task; a priority that is no member is a 400, and so is
    a bad tag list; nothing is written then."""
    assert task["priority"] == "normal" and task["tags"] == []
    path = f"/api/tasks/{task['id']}"
    changed = server.call("PATCH", path, {"priority": "high", "tags": ["home", "ünï", ""]})
    assert changed["priority"] == "high" and changed["tags"] == ["home", "ünï", ""]
    assert server.call("GET", path) == changed
    assert "priority" in assert_error(server.request("PATCH", path, {"priority": "urgent",
                                                                     "tags": []}), 400)
    assert_error(server.request("PATCH", path, {"priority": "low", "tags": [1]}), 400)
    assert_error(server.request("PATCH", "/api/tasks/999999", {"priority": "low", "tags": []}),
                 404)
    assert server.call("GET", path) == changed


def test_tags_lists_every_tag_once_in_order(server):
    first, second = server.add("tagged one"), server.add("tagged two")
    server.call("PATCH", f"/api/tasks/{first['id']}", {"priority": "low", "tags": ["zz-b", "zz-a"]})
    server.call("PATCH", f"/api/tasks/{second['id']}", {"priority": "low", "tags": ["zz-a"]})
    tags = server.call("GET", "/api/tags")
    assert [t for t in tags if t.startswith("zz-")] == ["zz-a", "zz-b"]
    assert tags == sorted(tags)


def test_search_matches_titles_by_regular_expression(server):
    server.add("Search me: invoice 2026-11")
    server.add("search me too")
    found = server.call("GET", "/api/tasks/search?pattern=(?i)%5Esearch%20me")
    assert [t["title"] for t in found][:2] == ["search me too", "Search me: invoice 2026-11"]
    assert [t["title"] for t in server.call("GET", r"/api/tasks/search?pattern=\d{4}-\d{2}")][:1] \
        == ["Search me: invoice 2026-11"]
    # a bad pattern is the client's mistake on either database, never a 500
    for bad in ("(a", "a{300}", "%5B"):
        error = assert_error(server.request("GET", f"/api/tasks/search?pattern={bad}"), 400)
        assert error.startswith("invalid regular expression"), error


def test_put_updates_title_and_done(server, task):
    updated = server.call("PUT", f"/api/tasks/{task['id']}", {"title": "renamed", "done": True})
    assert_task(updated, "renamed", True)
    assert updated["id"] == task["id"]
    assert updated["created_at"] == task["created_at"]
    assert updated["updated_at"] >= task["created_at"]
    assert server.call("GET", f"/api/tasks/{task['id']}") == updated
    reopened = server.call("PUT", f"/api/tasks/{task['id']}", {"title": "renamed", "done": False})
    assert reopened["done"] is False


def test_delete_removes_the_task(server, task):
    path = f"/api/tasks/{task['id']}"
    assert server.call("DELETE", path) == {"id": task["id"], "deleted": True}
    assert_error(server.request("GET", path), 404)
    assert_error(server.request("DELETE", path), 404)
    assert_error(server.request("PUT", path, {"title": "back", "done": False}), 404)
    assert task["id"] not in [item["id"] for item in server.call("GET", "/api/tasks")]


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
def test_a_missing_task_is_404(server, method):
    body = {"title": "x", "done": False} if method == "PUT" else None
    assert_error(server.request(method, "/api/tasks/9007199254740993", body), 404)


def test_stats_and_the_list_limit(tmp_path, fresh_db):
    """Stats count every task; the list shows only the latest 100."""
    own = start(tmp_path, db=fresh_db)
    try:
        assert own.call("GET", "/api/stats") == {"total": 0, "done": 0, "open": 0}
        assert own.call("GET", "/api/tasks") == []
        added = [own.add(f"task {n}", done=n % 3 == 0) for n in range(105)]
        assert own.call("GET", "/api/stats") == {"total": 105, "done": 35, "open": 70}
        listed = own.call("GET", "/api/tasks")
        assert listed == added[:4:-1]  # the newest 100, newest first
        own.call("DELETE", f"/api/tasks/{added[0]['id']}")
        own.call("PUT", f"/api/tasks/{added[1]['id']}", {"title": "task 1", "done": True})
        assert own.call("GET", "/api/stats") == {"total": 104, "done": 35, "open": 69}
    finally:
        assert own.stop() == 0


# ---- bad input ----

BAD_IDS = ["0", "-1", "abc", "1.5", "1e3", "99999999999999999999", "%20"]


@pytest.mark.parametrize("bad_id", BAD_IDS)
@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
def test_an_id_that_is_not_a_positive_i64_is_400(server, method, bad_id):
    body = {"title": "x", "done": False} if method == "PUT" else None
    assert_error(server.request(method, f"/api/tasks/{bad_id}", body), 400)


TITLES_OK = ["a", "x" * 240, "あ" * 80, "😀" * 60, " spaced "]
TITLES_BAD = ["", "x" * 241, "あ" * 81, "😀" * 60 + "x"]


@pytest.mark.parametrize("title", TITLES_OK, ids=lambda t: f"{len(t.encode())}-bytes")
def test_titles_of_1_to_240_utf8_bytes_are_accepted(server, task, title):
    assert server.add(title)["title"] == title
    path = f"/api/tasks/{task['id']}"
    assert server.call("PUT", path, {"title": title, "done": True})["title"] == title


@pytest.mark.parametrize("title", TITLES_BAD, ids=lambda t: f"{len(t.encode())}-bytes")
def test_titles_outside_1_to_240_utf8_bytes_are_422_naming_title(server, task, title):
    """TaskInput's `@length(1, 240)` rule: binding answers before the handler runs."""
    before = server.call("GET", "/api/stats")["total"]
    path = f"/api/tasks/{task['id']}"
    for method, where in (("POST", "/api/tasks"), ("PUT", path)):
        r = server.request(method, where, {"title": title, "done": False})
        assert_error(r, 422)
        assert r.json() == {"error": "the request's fields are not acceptable",
                            "fields": {"title": "must be 1 to 240 bytes long"}}
    assert server.call("GET", "/api/stats")["total"] == before
    assert server.call("GET", path) == task


BAD_BODIES = {
    "missing title": b'{"done": false}',
    "missing done": b'{"title": "x"}',
    "extra key": b'{"title": "x", "done": false, "id": 7}',
    "title a number": b'{"title": 5, "done": false}',
    "title null": b'{"title": null, "done": false}',
    "done a number": b'{"title": "x", "done": 1}',
    "done a string": b'{"title": "x", "done": "true"}',
    "done null": b'{"title": "x", "done": null}',
    "an array": b'[{"title": "x", "done": false}]',
    "a string": b'"x"',
    "null": b"null",
    "empty": b"",
    "malformed": b'{"title": "x", "done": false',
    "not utf-8": b'{"title": "\xff\xfe", "done": false}',
}


@pytest.mark.parametrize("raw", BAD_BODIES.values(), ids=BAD_BODIES.keys())
def test_a_body_without_exactly_title_and_done_is_400(server, task, raw):
    before = server.call("GET", "/api/stats")["total"]
    assert_error(server.request("POST", "/api/tasks", raw=raw), 400)
    path = f"/api/tasks/{task['id']}"
    assert_error(server.request("PUT", path, raw=raw), 400)
    assert server.call("GET", "/api/stats")["total"] == before
    assert server.call("GET", path) == task


def test_the_schema_enforces_the_same_rules(tmp_path):
    """CHECK constraints refuse what the API refuses, even from another SQLite client."""
    db_path = tmp_path / "checked.sqlite"
    own = start(tmp_path, db=db_path)
    own.add("made by the API")
    assert own.stop() == 0
    with sqlite3.connect(db_path) as db:
        db.execute("INSERT INTO tasks (title, done) VALUES (?, 0)", ("あ" * 80,))
        for title, done in [("", 0), ("x" * 241, 0), ("あ" * 81, 0), ("ok", 2), ("ok", "yes"), ("ok", 0.5), (None, 0)]:
            with pytest.raises(sqlite3.IntegrityError):
                db.execute("INSERT INTO tasks (title, done) VALUES (?, ?)", (title, done))
        created = db.execute("SELECT created_at FROM tasks ORDER BY id DESC LIMIT 1").fetchone()[0]
        assert RFC3339_UTC.match(created)


def test_the_postgresql_schema_enforces_the_same_rules(tmp_path, postgres_cluster):
    """On PostgreSQL too, CHECK and NOT NULL refuse what the API refuses, from psql."""
    url = postgres_cluster.create_database()
    database = url.rsplit("/", 1)[1]
    own = start(tmp_path, db=url)
    own.add("made by the API")
    assert own.stop() == 0
    postgres_cluster.sql(f"INSERT INTO tasks (title) VALUES ('{'あ' * 80}')", database)
    for title, done in [("''", "false"), (f"'{'x' * 241}'", "false"), (f"'{'あ' * 81}'", "false"),
                        ("NULL", "false"), ("'ok'", "NULL")]:
        with pytest.raises(RuntimeError, match="violates"):
            postgres_cluster.sql(f"INSERT INTO tasks (title, done) VALUES ({title}, {done})",
                                 database)
    created = postgres_cluster.sql("SELECT created_at FROM tasks ORDER BY id DESC LIMIT 1",
                                   database).strip()
    assert RFC3339_UTC.match(created), created


# ---- the page ----

def test_the_page_is_self_contained_html(server):
    response = server.request("GET", "/")
    assert response.status == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    page = response.body.decode()
    assert '<script type="module">' in page and 'import { createClient } from "/client.js";' in page
    client = server.request("GET", "/client.js")  # the client svcc made, served by the program
    assert client.status == 200
    assert client.headers["content-type"] == "text/javascript; charset=utf-8"
    assert "export function createClient" in client.body.decode() and "fetch" in client.body.decode()
    code = re.sub(r"/\*.*?\*/|^\s*//.*$", "", client.body.decode(), flags=re.S | re.M)
    for text in (page, code):  # the client's comments may show an example URL
        assert not re.search(r"https?://|//[a-z0-9.-]+\.[a-z]{2,}/", text, re.IGNORECASE), \
            "the page must not load anything from another host"
    assert "@import" not in page and "@font-face" not in page


# ---- settings and persistence ----

def test_tasks_survive_a_restart(tmp_path, fresh_db):
    """Stop and start again on the same absolute SVC_DB: everything is still there."""
    db_path = fresh_db
    first = start(tmp_path, db=db_path)
    kept = [first.add("kept one"), first.add("kept two", done=True)]
    changed = first.call("PUT", f"/api/tasks/{kept[0]['id']}", {"title": "kept, renamed", "done": False})
    assert first.stop() == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    second = start(tmp_path, db=db_path, cwd=elsewhere)
    try:
        assert second.call("GET", "/api/tasks") == [kept[1], changed]
        assert second.call("GET", "/api/stats") == {"total": 2, "done": 1, "open": 1}
        assert second.add("after the restart")["id"] > kept[1]["id"]
    finally:
        assert second.stop() == 0
    assert not list(elsewhere.iterdir()), "an absolute SVC_DB must not create files in the cwd"


def copy_project(tmp_path):
    copy = tmp_path / "project"
    shutil.copytree(PROJECT, copy, ignore=shutil.ignore_patterns("*.sqlite*"))
    return copy


def test_default_db_is_tasks_sqlite_in_the_project_folder(tmp_path):
    project = copy_project(tmp_path)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    server = start(tmp_path, target=["--project", str(project)], cwd=cwd)
    try:
        server.add("stored next to svc.toml")
    finally:
        assert server.stop() == 0
    assert (project / "tasks.sqlite").is_file()
    assert not (cwd / "tasks.sqlite").exists()


def test_relative_svc_db_in_project_mode_is_in_the_project_folder(tmp_path):
    project = copy_project(tmp_path)
    server = start(tmp_path, db="custom.sqlite", target=["--project", str(project)])
    try:
        server.add("stored next to svc.toml, under the name SVC_DB gives")
    finally:
        assert server.stop() == 0
    assert (project / "custom.sqlite").is_file()
    assert not (tmp_path / "custom.sqlite").exists()


def test_single_file_run_keeps_the_db_in_the_working_directory(tmp_path):
    """A file run by itself (not its project: the task manager needs its svc.toml's
    migrations) opens a relative path against the working directory."""
    project = copy_project(tmp_path)
    program = project / "alone.svc"
    program.write_text('async def main() -> Result[unit, Error]:\n'
                       '    db = try await db_open("tasks.sqlite")\n'
                       '    try await db_exec(db, "CREATE TABLE t (x INTEGER)")\n'
                       '    return ok(())\n')
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    result = run_to_end(["run", str(program)], cwd=cwd)
    assert result.returncode == 0, result.stderr
    assert (cwd / "tasks.sqlite").is_file()
    assert not (project / "tasks.sqlite").exists()


@pytest.mark.parametrize("port", ["0", "65536", "-1", "abc", "", "80.5", "99999999999999999999",
                                  "80\n91", "80\r91", "\x1b[31m80"])
def test_a_bad_svc_port_is_a_one_line_error(tmp_path, port):
    process, stderr_path = launch(tmp_path, env={"SVC_PORT": port, "SVC_DB": str(tmp_path / "t.sqlite")})
    try:
        process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise AssertionError(f"SVC_PORT={port!r} started a server") from None
    assert process.returncode == 1
    text = stderr_path.read_text()
    lines = text.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "SVC_PORT" in lines[0], lines
    assert not any(c in text for c in "\r\x1b"), text  # the value is quoted with escapes


def test_the_default_port_is_8091(tmp_path):
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", 8091)) == 0:
            pytest.skip("something else listens on 8091")
    server = start(tmp_path, db=tmp_path / "t.sqlite", env={"SVC_PORT": None})
    assert server.port == 8091
    assert server.call("GET", "/api/stats") == {"total": 0, "done": 0, "open": 0}
    assert server.stop() == 0

