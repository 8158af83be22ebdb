"""Operating a program, through real `svcc` processes: typed configuration (`config[T]()` from
svc.toml's `[config]` and `SVC_CONFIG_*` variables, every bad input a clear start-up error,
no secret ever shown), `/ready` on SQLite and PostgreSQL, and `[server] demo_routes = false`
(`/stream` and `/ws` 404 and out of `svcc openapi`)."""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from pathlib import Path

import pytest

from tests.helpers.postgres import start_cluster
from tests.helpers.svc_process import run_to_end, start

SECRET = "hunter2-do-not-show"

PROGRAM = """\
enum Mode: fast, careful

class Settings:
    max_items: i64
    greeting: str
    ratio: f64
    verbose: bool
    mode: Mode
    workers: i32?
    api_token: str?

def main():
    s = config[Settings]()
    print(f"max_items={s.max_items} greeting={s.greeting} ratio={s.ratio} verbose={s.verbose}")
    print(f"mode={s.mode} token_given={s.api_token != None}")
    match s.workers:
        case Some(n): print(f"workers={n}")
        case None: print("workers unset")
"""

TOML = """\
entry = "main.svc"

[config]
max_items = 100
greeting = "hello from svc.toml"
ratio = 0.5
verbose = false
mode = "fast"
"""


def project(folder: Path, toml: str = TOML, program: str = PROGRAM) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "svc.toml").write_text(toml)
    (folder / "main.svc").write_text(program)
    return folder


def required_token(type_name: str) -> str:
    """PROGRAM with a required `api_token` of that type."""
    return PROGRAM.replace("api_token: str?", f"api_token: {type_name}").replace(
        "{s.api_token != None}", "True")


def clean_env(**extra: str) -> dict[str, str]:
    """The test process's environment without any SVC_CONFIG_ variable, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_CONFIG_")}
    return {**env, **extra}


def run(args: list[str], env: dict[str, str]):
    import subprocess

    from tests.helpers.svc_process import svcc

    return subprocess.run(svcc() + args, capture_output=True, text=True, env=env, timeout=60)


def assert_clean_failure(result, *needles: str) -> None:
    """Exit status 1, every needle in stderr, no traceback, nothing of main printed, and the
    secret nowhere."""
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    for needle in needles:
        assert needle in result.stderr, result.stderr
    assert "Traceback" not in output and "max_items=" not in result.stdout, output
    assert SECRET not in output


# --- configuration ---------------------------------------------------------------------------

def test_svc_toml_values_and_environment_overrides(tmp_path: Path) -> None:
    folder = project(tmp_path / "app")
    result = run(["run", "--project", str(folder)], clean_env())
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "max_items=100 greeting=hello from svc.toml ratio=0.5 verbose=False",
        "mode=fast token_given=False", "workers unset"]
    env = clean_env(SVC_CONFIG_MAX_ITEMS="-7", SVC_CONFIG_VERBOSE="YES",
                    SVC_CONFIG_MODE="careful", SVC_CONFIG_WORKERS="16",
                    SVC_CONFIG_API_TOKEN=SECRET, SVC_CONFIG_RATIO="2e3",
                    SVC_CONFIG_GREETING="")
    result = run(["run", "--project", str(folder)], env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "max_items=-7 greeting= ratio=2000.0 verbose=True", "mode=careful token_given=True",
        "workers=16"]
    assert SECRET not in result.stdout + result.stderr


def test_a_single_file_reads_the_environment_only(tmp_path: Path) -> None:
    (tmp_path / "alone.svc").write_text(PROGRAM)
    env = clean_env(SVC_CONFIG_MAX_ITEMS="3", SVC_CONFIG_GREETING="hi", SVC_CONFIG_RATIO="1",
                    SVC_CONFIG_VERBOSE="off", SVC_CONFIG_MODE="fast")
    result = run(["run", str(tmp_path / "alone.svc")], env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "max_items=3 greeting=hi ratio=1.0 verbose=False"
    result = run(["run", str(tmp_path / "alone.svc")], clean_env(SVC_CONFIG_MAX_ITEMS="3"))
    assert_clean_failure(
        result, "error: config: no value for Settings.greeting: set the environment variable "
                "SVC_CONFIG_GREETING\n")


@pytest.mark.parametrize("variable, value, needle", [
    ("SVC_CONFIG_MAX_ITEMS", "abc", "SVC_CONFIG_MAX_ITEMS (the environment variable for "
                                    "Settings.max_items) must be an i64"),
    ("SVC_CONFIG_MAX_ITEMS", "9223372036854775808", "(it is out of range)"),
    ("SVC_CONFIG_MAX_ITEMS", "-9223372036854775809", "(it is out of range)"),
    ("SVC_CONFIG_WORKERS", "2147483648", "SVC_CONFIG_WORKERS (the environment variable for "
                                         "Settings.workers) must be an i32"),
    ("SVC_CONFIG_VERBOSE", "maybe", "must be a bool: true, 1, yes, on or false, 0, no, off"),
    ("SVC_CONFIG_RATIO", "nan", "must be an f64 (a finite number)"),
    ("SVC_CONFIG_RATIO", "", "must be an f64"),
    ("SVC_CONFIG_MODE", "FAST", "must be one of fast, careful (a member's name, exactly)"),
])
def test_a_bad_environment_value_stops_the_program_without_showing_it(
        tmp_path: Path, variable: str, value: str, needle: str) -> None:
    folder = project(tmp_path / "app")
    result = run(["run", "--project", str(folder)],
                 clean_env(**{variable: value, "SVC_CONFIG_API_TOKEN": SECRET}))
    assert_clean_failure(result, needle, "its value is not shown")
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: config: "), lines
    if value and not value.lstrip("-").isdigit():  # a range's bounds are digits
        assert value not in result.stderr


def test_a_secret_of_the_wrong_type_is_not_shown(tmp_path: Path) -> None:
    folder = project(tmp_path / "app", program=required_token("i64"))
    result = run(["run", "--project", str(folder)], clean_env(SVC_CONFIG_API_TOKEN=SECRET))
    assert_clean_failure(result, "error: config: SVC_CONFIG_API_TOKEN (the environment variable "
                                 "for Settings.api_token) must be an i64")


def test_every_missing_value_is_reported_at_once(tmp_path: Path) -> None:
    folder = project(tmp_path / "app", toml='entry = "main.svc"\n[config]\nratio = 1.5\n',
                     program=required_token("str"))
    result = run(["run", "--project", str(folder)], clean_env())
    assert_clean_failure(result)
    assert result.stderr.splitlines() == [
        "error: config: no value for Settings.max_items: set the environment variable "
        "SVC_CONFIG_MAX_ITEMS, or 'max_items' in svc.toml [config]",
        "error: config: no value for Settings.greeting: set the environment variable "
        "SVC_CONFIG_GREETING, or 'greeting' in svc.toml [config]",
        "error: config: no value for Settings.verbose: set the environment variable "
        "SVC_CONFIG_VERBOSE, or 'verbose' in svc.toml [config]",
        "error: config: no value for Settings.mode: set the environment variable "
        "SVC_CONFIG_MODE, or 'mode' in svc.toml [config]",
        "error: config: no value for Settings.api_token: set the environment variable "
        "SVC_CONFIG_API_TOKEN (a secret: never in svc.toml)",
    ]


@pytest.mark.parametrize("line, needle", [
    ('max_items = "100"', "'max_items' in svc.toml [config] (Settings.max_items) must be an "
                          "i64 (an integer from -9223372036854775808 to 9223372036854775807), "
                          "found the string \"100\""),
    ("max_items = 9223372036854775808", "found the integer 9223372036854775808 (out of range)"),
    ("workers = 2147483648", "(Settings.workers) must be an i32"),
    ("max_items = { value = 1 }", "'max_items' in svc.toml [config] must be a string, integer, "
                                  "float or boolean (what a config[T] field reads), got a table"),
    ("max_items = [1, 2]", "got an array"),
    ("max_items = 2026-01-01", "got a date or time"),
    ('verbose = "true"', "(Settings.verbose) must be a bool, found the string \"true\""),
    ("ratio = inf", "(Settings.ratio) must be an f64 (a finite number), found the float inf"),
    ('mode = "slow"', "(Settings.mode) must be one of fast, careful, found the string \"slow\""),
    ("max_itmes = 3", "no config[T] class has a field 'max_itmes' to read this key of svc.toml "
                      "[config] (config classes: Settings); did you mean 'max_items'?"),
])
def test_a_bad_svc_toml_value_is_a_diagnostic_at_its_key(tmp_path: Path, line: str,
                                                          needle: str) -> None:
    key = line.split(" =")[0]
    lines = [x for x in TOML.splitlines() if not x.startswith(key + " =")] + [line]
    folder = project(tmp_path / "app", toml="\n".join(lines) + "\n")
    for command in ("check", "run"):
        result = run([command, "--project", str(folder)],
                     clean_env(SVC_CONFIG_MAX_ITEMS="5", SVC_CONFIG_API_TOKEN=SECRET))
        assert_clean_failure(result, needle, f" --> {folder / 'svc.toml'}:{len(lines)}:1")


def test_a_secret_written_in_svc_toml_is_refused_without_showing_its_line(tmp_path: Path) -> None:
    folder = project(tmp_path / "app", toml=TOML + f'api_token = "{SECRET}"\n')
    for command in ("check", "run"):
        result = run([command, "--project", str(folder)], clean_env())
        assert_clean_failure(
            result, "'api_token' in svc.toml [config] is a secret (its name's last word is "
                    "secret, password, token or key): secrets come from the environment only; "
                    "set SVC_CONFIG_API_TOKEN there and remove it here",
            f" --> {folder / 'svc.toml'}:9:1")


def test_svcc_test_reads_the_configuration_before_each_test(tmp_path: Path) -> None:
    folder = project(tmp_path / "app")
    (folder / "main_test.svc").write_text(
        'from "main.svc" import Settings\n\ndef test_reads():\n'
        "    s = config[Settings]()\n    assert_eq(s.max_items, 41)\n")
    result = run(["test", "--project", str(folder)], clean_env(SVC_CONFIG_MAX_ITEMS="41"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed, 0 failed" in result.stdout
    result = run(["test", "--project", str(folder)], clean_env(SVC_CONFIG_MAX_ITEMS="x"))
    assert result.returncode == 1
    assert "FAIL test_reads" in result.stdout and "SVC_CONFIG_MAX_ITEMS" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


# --- /ready -----------------------------------------------------------------------------------

SERVER = """\
class Note:
    id: i64
    text: str

@post("/notes/{id}")
async def add(db: Db, id: i64, text: str) -> Result[unit, Error]:
    try await db_exec(db, "INSERT INTO notes (id, text) VALUES (?, ?)", id, text)
    return ok(())

@get("/notes")
async def notes(db: Db) -> Result[List[Note], Error]:
    return await db_all[Note](db, "SELECT id, text FROM notes ORDER BY id")

async def main() -> Result[unit, Error]:
    db = try await db_open(env("SVC_DB", "notes.sqlite"))
    try await db_exec(db, "CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)")
    return await serve(db, try parse_i64(env("SVC_PORT", "8080")))
"""

READY = {"status": "ready"}


def serve_notes(folder: Path, env: dict[str, str] | None = None, toml: str | None = None):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "notes.svc").write_text(SERVER)
    if toml is None:
        return start([str(folder / "notes.svc")], env=env, cwd=folder)
    (folder / "svc.toml").write_text('entry = "notes.svc"\n' + toml)
    return start(["--project", str(folder)], env=env, cwd=folder)


def ask_ready(server, limit: float = 2.0):
    started = time.monotonic()
    response = server.request("GET", "/ready")
    took = time.monotonic() - started
    assert took < limit, took
    return response, took


def wait_until_ready(server, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while server.request("GET", "/ready").status != 200:
        assert time.monotonic() < deadline, "/ready did not answer 200 again"
        time.sleep(0.2)


def assert_not_ready(response, reason: str) -> None:
    assert response.status == 503, (response.status, response.body)
    assert response.headers.get("retry-after") == "1", response.headers
    assert response.headers["content-type"].startswith("application/json")
    assert response.json() == {"error": f"not ready: {reason}"}, response.body


def test_ready_on_sqlite_and_not_while_the_database_thread_is_held(tmp_path: Path) -> None:
    """A write waiting for another process's lock holds the database thread: /ready's
    SELECT 1 waits behind it, and /ready answers 503 after 1 s; once the lock is gone, 200."""
    import sqlite3
    import threading

    server = serve_notes(tmp_path / "app")
    try:
        response, _ = ask_ready(server)
        assert response.status == 200 and response.json() == READY
        assert response.headers["content-type"].startswith("application/json")
        assert server.request("HEAD", "/ready").status == 200
        assert server.request("POST", "/ready").status == 405
        assert server.request("GET", "/health").body == b"ok"
        holder = sqlite3.connect(tmp_path / "app" / "notes.sqlite", isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # the write lock, for as long as this test likes
        try:
            writes: list[int] = []
            writer = threading.Thread(target=lambda: writes.append(
                server.request("POST", "/notes/1?text=waits").status))
            writer.start()
            time.sleep(0.3)
            response, took = ask_ready(server)
            assert_not_ready(response, "the database did not answer within 1 s")
            assert 0.9 < took < 1.9, took
            assert server.request("GET", "/health").status == 200  # liveness is unaffected
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        writer.join(10)
        wait_until_ready(server)
        assert server.request("POST", "/notes/2?text=after").status == 204
        log = server.log(until="not ready")
        assert "GET /ready" in log and "not ready: the database did not answer within 1 s" in log
        assert "Traceback" not in log
    finally:
        assert server.stop() == 0


def _database(cluster) -> tuple[str, str]:
    url = cluster.create_database()
    return url, url.rsplit("/", 1)[1]


def test_ready_on_postgresql_follows_a_dropped_and_recreated_database(postgres_cluster,
                                                                     tmp_path: Path) -> None:
    url, name = _database(postgres_cluster)
    server = serve_notes(tmp_path / "app", env={"SVC_DB": url})
    try:
        response, _ = ask_ready(server)
        assert response.status == 200 and response.json() == READY
        postgres_cluster.sql(f"DROP DATABASE {name} WITH (FORCE)")
        for _ in range(3):  # the pool's dropped connections, then refused new ones
            response, _ = ask_ready(server)
            assert response.status == 503, response.body
            assert response.json()["error"] in (
                "not ready: the database is unavailable", "not ready: the database failed")
            assert response.headers.get("retry-after") == "1"
        postgres_cluster.sql(f"CREATE DATABASE {name}")
        wait_until_ready(server)
        log = server.log(until="not ready")
        assert "GET /ready: not ready: " in log and "Traceback" not in log
    finally:
        assert server.stop() == 0


@pytest.fixture
def own_cluster():
    """A cluster of this test's own, since the test stops, freezes and starts it."""
    cluster = start_cluster()
    yield cluster
    cluster.remove()


def test_ready_on_postgresql_through_an_outage_and_a_frozen_server(own_cluster,
                                                                  tmp_path: Path) -> None:
    url, _name = _database(own_cluster)
    server = serve_notes(tmp_path / "app", env={"SVC_DB": url})
    try:
        assert ask_ready(server)[0].status == 200
        own_cluster.stop("fast")
        response, took = ask_ready(server)
        assert_not_ready(response, "the database is unavailable")
        assert took < 1.0, took  # refused at once: no waiting for the time limit
        assert server.request("GET", "/health").status == 200
        own_cluster.start()
        wait_until_ready(server)
        frozen = own_cluster.processes()
        for pid in frozen:
            os.kill(pid, signal.SIGSTOP)
        try:
            response, took = ask_ready(server)
            assert_not_ready(response, "the database did not answer within 1 s")
            assert 0.9 < took < 1.9, took
        finally:
            for pid in frozen:
                os.kill(pid, signal.SIGCONT)
        wait_until_ready(server)
        assert server.request("POST", "/notes/1?text=after").status == 204
        log = server.log(until="did not answer")
        assert "Traceback" not in log
    finally:
        assert server.stop() == 0


# --- the demonstration routes switched off ------------------------------------------------------

def _websocket_upgrade(port: int) -> bytes:
    """The first bytes the server answers to a WebSocket upgrade request for /ws."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as client:
        client.sendall(b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                       b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                       b"Sec-WebSocket-Version: 13\r\n\r\n")
        return client.recv(4096)


def test_demo_routes_off_answer_404_and_the_rest_is_served(tmp_path: Path) -> None:
    server = serve_notes(tmp_path / "off", toml="[server]\ndemo_routes = false\n")
    try:
        for path in ("/stream", "/ws"):
            response = server.request("GET", path)
            assert response.status == 404, (path, response.status)
            assert response.json() == {"error": "not found"}
        assert _websocket_upgrade(server.port).startswith(b"HTTP/1.1 404 ")
        assert server.request("GET", "/health").body == b"ok"
        assert server.request("GET", "/ready").json() == READY
        assert server.request("POST", "/notes/1?text=a").status == 204
        assert server.request("GET", "/notes").json() == [{"id": 1, "text": "a"}]
    finally:
        assert server.stop() == 0
    server = serve_notes(tmp_path / "on", toml="[server]\ndemo_routes = true\n")
    try:
        assert server.request("GET", "/stream").body == b"".join(
            f"chunk:{i}\n".encode() for i in range(5))
        assert _websocket_upgrade(server.port).startswith(b"HTTP/1.1 101 ")
        assert server.request("GET", "/ready").status == 200
    finally:
        assert server.stop() == 0


def test_demo_routes_off_with_workers(tmp_path: Path) -> None:
    server = serve_notes(tmp_path / "off", toml="[server]\ndemo_routes = false\n",
                         env={"SVC_WORKERS": "2"})
    try:
        for _ in range(4):  # whichever worker takes the connection
            assert server.request("GET", "/stream").status == 404
            assert server.request("GET", "/ready").status == 200
    finally:
        assert server.stop() == 0


def test_openapi_lists_ready_and_leaves_out_switched_off_demo_routes(tmp_path: Path) -> None:
    def paths(toml: str) -> dict:
        folder = tmp_path / str(abs(hash(toml)))
        folder.mkdir()
        (folder / "notes.svc").write_text(SERVER)
        (folder / "svc.toml").write_text('entry = "notes.svc"\n' + toml)
        result = run_to_end(["openapi", "--project", str(folder)])
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)["paths"]

    on = paths("")
    assert {"/health", "/ready", "/stream", "/ws", "/notes", "/notes/{id}"} == set(on)
    ready = on["/ready"]["get"]["responses"]
    assert set(ready) == {"200", "503"}
    assert ready["200"]["content"]["application/json"]["schema"]["properties"] == {
        "status": {"type": "string", "const": "ready"}}
    off = paths("[server]\ndemo_routes = false\n")
    assert {"/health", "/ready", "/notes", "/notes/{id}"} == set(off)
    assert paths("[server]\ndemo_routes = true\n") == on


def test_test_request_sees_the_server_svcc_run_would_serve(tmp_path: Path) -> None:
    """svcc test's test_request goes through the same routes: /ready, and the switch."""
    folder = tmp_path / "app"
    folder.mkdir()
    (folder / "notes.svc").write_text(SERVER)
    (folder / "svc.toml").write_text('entry = "notes.svc"\n[server]\ndemo_routes = false\n')
    (folder / "notes_test.svc").write_text(
        "async def test_built_in_routes() -> Result[unit, Error]:\n"
        '    db = try await db_open(":memory:")\n'
        '    ready = await test_request(db, "GET", "/ready", headers_of([]), "")\n'
        "    assert_eq(status(ready), 200)\n"
        '    assert_eq(body(ready), "{\\"status\\":\\"ready\\"}")\n'
        '    stream = await test_request(db, "GET", "/stream", headers_of([]), "")\n'
        "    assert_eq(status(stream), 404)\n"
        "    return ok(())\n")
    result = run_to_end(["test", "--project", str(folder)])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed, 0 failed" in result.stdout
