"""`svcc run --watch`: real edits of a temporary copy of a program, served again on the same
port when they check, the old server kept when they do not; Ctrl+C ends it all with exit 0."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.svc_process import REPO, free_port, start, svcc

WAIT_SECONDS = 15.0


def _children(pid: int) -> set[int]:
    """The process ids whose parent is `pid` (Linux /proc)."""
    found = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found |= {int(p) for p in (task / "children").read_text().split()}
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat").read_text().split()[2] if Path(
        f"/proc/{pid}/stat").exists() else "X"
    return status not in ("Z", "X")


@contextlib.contextmanager
def _watching(program: Path, port: int, **popen: Any) -> Iterator[subprocess.Popen]:
    """`svcc run --watch PROGRAM` on `port`, its output piped; killed at the end if a test
    left it running."""
    process = subprocess.Popen(svcc() + ["run", "--watch", str(program)], text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env={**os.environ, "SVC_PORT": str(port)}, **popen)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def _ignore_sigint() -> None:
    """In the child before it runs svcc: SIGINT ignored, as `cmd &` in a script leaves it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _stopped_with_ctrl_c(process: subprocess.Popen) -> str:
    """SIGINT, as Ctrl+C sends: the watch exits 0; the rest of its stderr."""
    process.send_signal(signal.SIGINT)
    _, rest = process.communicate(timeout=30)
    assert process.returncode == 0
    return rest


def _served(server, path: str, wanted: str) -> str:
    """Poll until the answer to `path` contains `wanted` (a restart is under way)."""
    deadline = time.monotonic() + WAIT_SECONDS
    last = ""
    while time.monotonic() < deadline:
        try:
            last = server.request("GET", path).body.decode()
            if wanted in last:
                return last
        except OSError:
            pass  # between the old server and the new one
        time.sleep(0.05)
    raise AssertionError(f"{wanted!r} never served; last answer {last!r}; log:\n"
                         + "".join(server.stderr))


def _save(path: Path, text: str) -> None:
    """Save as editors do: a new file renamed over the old one."""
    temporary = path.with_suffix(".tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


@pytest.fixture
def hello(tmp_path) -> Path:
    shutil.copy(REPO / "examples" / "hello" / "hello.svc", tmp_path / "hello.svc")
    return tmp_path / "hello.svc"


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads /proc")
def test_good_edits_are_served_a_broken_one_keeps_the_old_server(hello):
    server = start(["--watch", str(hello)])
    try:
        assert "hello, visitor 3" in _served(server, "/greet/3", "visitor")
        original = hello.read_text()

        _save(hello, original.replace("hello, visitor", "welcome, visitor"))
        assert "welcome, visitor 3" in _served(server, "/greet/3", "welcome")

        broken = original.replace('"hello, visitor " + str(id)', '"broken " + id')
        _save(hello, broken)
        log = server.log("not restarted")
        assert "error: operator '+' needs two numbers or two str, found str and i64" in log
        assert "hello.svc:" in log and "^" in log
        assert "the previous version is still serving" in log
        assert "welcome, visitor 3" in server.request("GET", "/greet/3").body.decode()

        _save(hello, original.replace("hello, visitor", "fixed, visitor"))
        assert "fixed, visitor 3" in _served(server, "/greet/3", "fixed")

        children = _children(server.process.pid)
        assert len(children) == 1  # exactly one server at a time
        server.process.send_signal(signal.SIGINT)
        assert server.process.wait(timeout=30) == 0
        deadline = time.monotonic() + 5
        while any(_alive(p) for p in children) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_alive(p) for p in children)
    finally:
        server.stop()


def test_an_included_file_is_watched(tmp_path):
    (tmp_path / "page.html").write_text("<h1>first</h1>")
    app = tmp_path / "app.svc"
    app.write_text(
        '@get("/")\n'
        "async def index() -> Result[Html, Error]:\n"
        '    return ok(html(include_text("page.html")))\n\n'
        "async def main() -> Result[unit, Error]:\n"
        '    port = try parse_i64(env("SVC_PORT", "8080"))\n'
        '    db = try await db_open(":memory:")\n'
        "    return await serve(db, port)\n")
    server = start(["--watch", str(app)])
    try:
        assert "first" in _served(server, "/", "first")
        _save(tmp_path / "page.html", "<h1>second</h1>")
        assert "second" in _served(server, "/", "second")
        server.process.send_signal(signal.SIGINT)
        assert server.process.wait(timeout=30) == 0
    finally:
        server.stop()


def test_a_program_that_does_not_check_waits_for_a_fix(hello):
    original = hello.read_text()
    hello.write_text(original.replace("async def main", "async def mian"))
    port = free_port()
    with _watching(hello, port) as process:
        errors = []
        while not errors or "not started" not in errors[-1]:
            line = process.stderr.readline()
            assert line, "".join(errors)
            errors.append(line)
        assert "no main function" in "".join(errors)
        time.sleep(0.3)  # the watch starts right after that line
        _save(hello, original)
        assert process.stdout.readline().startswith(f"listening on http://127.0.0.1:{port}")
        _stopped_with_ctrl_c(process)


def _greeting_program(text: str) -> str:
    return ('@get("/")\n'
            "async def index() -> Result[str, Error]:\n"
            f'    return ok("{text}")\n\n'
            "async def main() -> Result[unit, Error]:\n"
            '    port = try parse_i64(env("SVC_PORT", "8080"))\n'
            '    db = try await db_open(":memory:")\n'
            "    return await serve(db, port)\n")


def _logged_twice(server, text: str) -> None:
    """Wait until `text` is in the log twice: the program was checked again."""
    deadline = time.monotonic() + WAIT_SECONDS
    while "".join(server.stderr).count(text) < 2:
        assert time.monotonic() < deadline, "checked once only; log:\n" + "".join(server.stderr)
        time.sleep(0.05)


def test_svc_toml_is_watched(tmp_path):
    """svc.toml is a file of the program: switching `entry` serves the other file (in a
    folder not watched before), a broken svc.toml keeps the old server, fixing it serves."""
    project, elsewhere = tmp_path / "project", tmp_path / "v2"
    project.mkdir()
    elsewhere.mkdir()
    (project / "first.svc").write_text(_greeting_program("first entry"))
    (elsewhere / "second.svc").write_text(_greeting_program("second entry"))
    config = project / "svc.toml"
    config.write_text('entry = "first.svc"\n')
    server = start(["--watch", "--project", str(project)])
    try:
        assert "first entry" in _served(server, "/", "first")

        _save(config, 'entry = "../v2/second.svc"\nname = "greeter"\n')
        assert "second entry" in _served(server, "/", "second")
        # the new entry's folder is watched now
        _save(elsewhere / "second.svc", _greeting_program("second, edited"))
        assert "second, edited" in _served(server, "/", "edited")

        _save(config, 'entry = "../v2/gone.svc"\n')
        log = server.log("not restarted")
        assert "named in svc.toml does not exist" in log and "svc.toml:1:1" in log
        assert "the previous version is still serving" in log
        assert "second, edited" in server.request("GET", "/").body.decode()
        # while svc.toml is broken, the files of the last good version are still watched,
        # also outside the project folder
        _save(elsewhere / "second.svc", _greeting_program("second, again"))
        _logged_twice(server, "named in svc.toml does not exist")

        _save(config, 'entry = "first.svc"\nunknown = 1\n')
        assert "unknown key 'unknown' in svc.toml" in server.log("unknown key")
        _save(config, 'entry = "../v2/second.svc"\n')
        assert "second, again" in _served(server, "/", "again")

        children = _children(server.process.pid)
        assert len(children) == 1  # exactly one server at a time
        server.process.send_signal(signal.SIGINT)
        assert server.process.wait(timeout=30) == 0
    finally:
        server.stop()


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads /proc")
def test_a_version_that_fails_at_start_is_reported_and_leaves_no_defunct_child(hello):
    """The port is taken before the watch starts, so the program fails at start: the watch
    says so, reaps the child at once (no zombie under it) and serves the next version once
    the port is free."""
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen()
    port = blocker.getsockname()[1]
    with blocker, _watching(hello, port) as process:
        log = []
        while not log or "waiting for changes" not in log[-1]:
            line = process.stderr.readline()
            assert line, "".join(log)
            log.append(line)
        assert log[-1] == "watch: the program exited with status 1; waiting for changes\n"
        assert str(port) in "".join(log)  # the program's own error names the port it wanted
        deadline = time.monotonic() + 5
        while _children(process.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _children(process.pid) == set()  # reaped: not even a zombie is left
        assert process.poll() is None  # the watch goes on

        blocker.close()
        _save(hello, hello.read_text().replace("hello, visitor", "back, visitor"))
        assert process.stdout.readline().startswith(f"listening on http://127.0.0.1:{port}")
        rest = _stopped_with_ctrl_c(process)
        assert "waiting for changes" not in rest  # a server stopped by the watch is not reported


def test_ctrl_c_stops_the_watch_even_when_it_was_started_ignoring_sigint(hello):
    """A shell script's `cmd &` starts cmd with SIGINT ignored, and Python keeps ignoring it:
    the watch must stop on SIGINT anyway, as the server does (it hung: a CI run started in
    the background saw every watch test time out)."""
    port = free_port()
    with _watching(hello, port, preexec_fn=_ignore_sigint) as process:
        assert process.stdout.readline().startswith(f"listening on http://127.0.0.1:{port}")
        _stopped_with_ctrl_c(process)
