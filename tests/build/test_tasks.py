"""`svcc build --project examples/tasks`: the task manager as one file, copied alone into an empty
folder and run with `env -i`; its database appears in that working directory and keeps the
tasks across a restart."""

from __future__ import annotations

import signal

import pytest
from tests.helpers.executables import POSIX_ONLY, REPO, install_alone, start, svcc_build, unpack_folders

pytestmark = [pytest.mark.build, POSIX_ONLY]


@pytest.fixture(scope="module")
def tasks(build_cache, tmp_path_factory):
    """(executable, the UI text it was built with): built once for the module."""
    output = tmp_path_factory.mktemp("tasks-dist") / "dist" / "tasks"
    page = (REPO / "examples" / "tasks" / "index.html").read_text(encoding="utf-8")
    result = svcc_build(build_cache, "--project", "examples/tasks", "-o", str(output))
    assert result.returncode == 0, result.stdout + result.stderr
    print(result.stdout)
    return output, page


def test_data_persists_across_restarts_in_the_working_directory(tasks, tmp_path):
    executable, page = tasks
    folder, tmpdir = tmp_path / "somewhere-else", tmp_path / "tmp"
    tmpdir.mkdir()
    installed = install_alone(executable, folder)

    server = start(installed, folder, tmpdir)
    try:
        status, content_type, body = server.request("GET", "/")
        assert (status, content_type) == (200, "text/html; charset=utf-8")
        assert body.decode("utf-8") == page  # the UI is inside the executable
        status, created = server.json("POST", "/api/tasks", {"title": "w\u00e4sche", "done": False})
        assert status == 200 and created["title"] == "w\u00e4sche"
        assert (folder / "tasks.sqlite").is_file()  # relative to where it was started
    finally:
        assert server.stop(signal.SIGTERM) == 0, "".join(server.stderr)
    assert unpack_folders(tmpdir) == []

    server = start(installed, folder, tmpdir)
    try:
        assert server.json("GET", "/api/tasks") == (200, [created])
        done = {"title": created["title"], "done": True}
        status, updated = server.json("PUT", f"/api/tasks/{created['id']}", done)
        assert status == 200 and updated["done"] is True
        assert server.json("GET", "/api/stats") == (200, {"total": 1, "done": 1, "open": 0})
    finally:
        assert server.stop(signal.SIGINT, group=True) == 0, "".join(server.stderr)  # Ctrl+C
    assert unpack_folders(tmpdir) == []
    # The database was closed cleanly: SQLite removes its -wal and -shm files on the last close.
    assert sorted(p.name for p in folder.iterdir()) == ["tasks", "tasks.sqlite"]


def test_svc_db_names_another_database_relative_to_the_working_directory(tasks, tmp_path):
    executable, _ = tasks
    folder, tmpdir = tmp_path / "run", tmp_path / "tmp"
    tmpdir.mkdir()
    installed = install_alone(executable, folder)
    (folder / "data").mkdir()
    server = start(installed, folder, tmpdir, SVC_DB="data/mine.sqlite")
    try:
        assert server.json("POST", "/api/tasks", {"title": "x", "done": True})[0] == 200
    finally:
        assert server.stop() == 0
    assert (folder / "data" / "mine.sqlite").is_file()
    assert not (folder / "tasks.sqlite").exists()


def test_postgresql_needs_nothing_but_the_url(tasks, tmp_path, postgres_cluster):
    """The executable alone, with `env -i` and SVC_DB set to a PostgreSQL URL: it migrates
    that database and serves from it (the driver is inside the executable)."""
    executable, _ = tasks
    folder, tmpdir = tmp_path / "run", tmp_path / "tmp"
    tmpdir.mkdir()
    installed = install_alone(executable, folder)
    url = postgres_cluster.create_database()
    server = start(installed, folder, tmpdir, SVC_DB=url)
    try:
        status, created = server.json("POST", "/api/tasks", {"title": "on postgres", "done": True})
        assert status == 200 and created["done"] is True
        assert server.json("GET", "/api/stats") == (200, {"total": 1, "done": 1, "open": 0})
    finally:
        assert server.stop() == 0, "".join(server.stderr)
    assert sorted(p.name for p in folder.iterdir()) == ["tasks"]  # no database file here
    database = url.rsplit("/", 1)[1]
    assert postgres_cluster.sql("SELECT title FROM tasks", database).strip() == "on postgres"
