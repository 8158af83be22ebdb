"""Runs the task manager example as users do, `svcc run --project examples/tasks`, in a subprocess.

Shared by the API tests (tests/e2e) and the browser tests (tests/ui). Every server gets a free
port and a database of its own (a file under the test's tmp_path, or a new database of the
session's private PostgreSQL cluster: `new_database`), and is stopped with SIGTERM like Ctrl+C
would.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import signal
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.helpers.openapi_check import Exchange, record
from tests.helpers.svc_process import REPO, Response, free_port, send
from tests.helpers.svc_process import svcc as svcc_command

PROJECT = REPO / "examples" / "tasks"
STARTUP_SECONDS = 60.0
STOP_SECONDS = 15.0
_launches = itertools.count(1)
#: The databases the API and browser tests run against, each test once per database.
DATABASES = ("sqlite", "postgresql")
#: The mark of a browser test that runs on every database (the `server` fixture's parameter).
both_databases = pytest.mark.parametrize("server", DATABASES, indirect=True)


def new_database(kind: str, tmp_path: Path, request, name: str = "tasks.sqlite") -> str:
    """A fresh, empty database of `kind`: a file under `tmp_path`, or a new database of the
    session's PostgreSQL cluster (the `postgres_cluster` fixture, started on first use)."""
    if kind == "sqlite":
        return str(tmp_path / name)
    return request.getfixturevalue("postgres_cluster").create_database()


@dataclass
class TasksServer:
    """One running `svcc run` process and a small HTTP client for it."""

    process: subprocess.Popen
    port: int
    stderr_path: Path
    lines: "queue.Queue[str]" = field(default_factory=queue.Queue)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def request(self, method: str, path: str, body=None, *, raw: bytes | None = None,
                headers: dict[str, str] | None = None) -> Response:
        """Sends one request on a fresh connection; `body` is encoded as JSON, `raw` as is."""
        headers = dict(headers or {})
        if body is not None:
            raw = json.dumps(body).encode()
        if raw is not None:
            headers.setdefault("Content-Type", "application/json")
        response = send(self.port, method, path, raw, headers)
        record(Exchange(method, path, {k.lower(): v for k, v in headers.items()}, raw,
                        response.status, response.headers, response.body))
        return response

    def call(self, method: str, path: str, body=None, expect: int = 200):
        """Sends a request, checks the status and JSON content type, returns the decoded body."""
        response = self.request(method, path, body)
        assert response.status == expect, (method, path, response.status, response.body)
        assert response.headers["content-type"].startswith("application/json")
        return response.json()

    def add(self, title: str, done: bool = False) -> dict:
        return self.call("POST", "/api/tasks", {"title": title, "done": done})

    def stop(self) -> int:
        """SIGTERM, as Ctrl+C would; returns the exit status (killing only a hung process)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                raise AssertionError("the server did not stop within 15 s of SIGTERM")
        return self.process.returncode

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")


def _pump(stream, lines: "queue.Queue[str]") -> None:
    """Reads the server's stdout to its end so the pipe never fills."""
    for line in stream:
        lines.put(line)
    lines.put("")


def launch(tmp_path: Path, *, env: dict[str, str | None] | None = None, target: list[str] | None = None,
           cwd: Path | None = None, command: list[str] | None = None) -> tuple[subprocess.Popen, Path]:
    """Starts `svcc run` (project mode unless `target` says otherwise) without waiting for it.

    `command` replaces the whole command line (a built executable). Returns the process (stdout
    piped) and the file its stderr goes to. SVC_* variables of the calling environment are
    dropped so only what the test sets applies.
    """
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    full_env["SVC_LOG"] = "quiet"
    full_env.update({k: v for k, v in (env or {}).items() if v is not None})
    command = command or [*svcc_command(), "run", *(target or ["--project", str(PROJECT)])]
    stderr_path = tmp_path / f"svcc-run-{next(_launches)}.stderr"
    with open(stderr_path, "wb") as stderr:
        process = subprocess.Popen(command, cwd=cwd or tmp_path,
                                   env=full_env, stdout=subprocess.PIPE, stderr=stderr, text=True)
    return process, stderr_path


def start(tmp_path: Path, *, db: Path | str | None = None, env: dict[str, str | None] | None = None,
          target: list[str] | None = None, cwd: Path | None = None,
          command: list[str] | None = None) -> TasksServer:
    """Starts the task manager and waits for its `listening on` line.

    It gets a free port unless `env` sets SVC_PORT (None leaves it unset: the default, 8091).
    """
    settings = {"SVC_PORT": str(free_port())}
    if db is not None:
        settings["SVC_DB"] = str(db)
    settings.update(env or {})
    process, stderr_path = launch(tmp_path, env=settings, target=target, cwd=cwd, command=command)
    server = TasksServer(process, int(settings["SVC_PORT"] or 8091), stderr_path)
    threading.Thread(target=_pump, args=(process.stdout, server.lines), daemon=True).start()
    try:
        line = server.lines.get(timeout=STARTUP_SECONDS)
    except queue.Empty:
        server.stop()
        raise AssertionError(f"no 'listening on' line within {STARTUP_SECONDS:.0f} s") from None
    if f"listening on http://127.0.0.1:{server.port}" not in line:
        server.stop()
        raise AssertionError(f"server did not start: stdout {line!r}, stderr {server.stderr()!r}")
    return server
