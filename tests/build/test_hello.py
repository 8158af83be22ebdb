"""`svcc build examples/hello/hello.svc`: the build's progress report, and the executable serving
alone in an empty folder under `env -i`, stopped by SIGINT (Ctrl+C) and by SIGTERM."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
from tests.helpers.executables import POSIX_ONLY, REPO, env_i_command, install_alone, scrubbed_env, start, \
    svcc, svcc_build, unpack_folders

pytestmark = [pytest.mark.build, POSIX_ONLY]


@pytest.fixture(scope="module")
def hello(build_cache, tmp_path_factory):
    """(executable, `svcc build` result): built once for the module."""
    output = tmp_path_factory.mktemp("hello-dist") / "dist" / "hello"
    result = svcc_build(build_cache, "examples/hello/hello.svc", "-o", str(output))
    assert result.returncode == 0, result.stdout + result.stderr
    print(result.stdout)
    return output, result


def test_build_reports_each_stage_then_path_and_size(hello):
    output, result = hello
    lines = result.stdout.splitlines()
    assert [line[:5] for line in lines] == ["[1/4]", "[2/4]", "[3/4]", "[4/4]"], lines
    assert lines[0] == "[1/4] checking and compiling examples/hello/hello.svc"
    # PyInstaller, or the executable another build of this run left in the cache
    assert "PyInstaller" in lines[2] or "attaching it to the executable cached in" in lines[2]
    size = output.stat().st_size / 1e6
    assert re.fullmatch(rf"\[4/4\] done: {re.escape(str(output))} \({size:.1f} MB, [0-9.]+ s\)",
                        lines[3]), lines[3]
    assert result.stderr == ""


STOPS = {"sigterm": (signal.SIGTERM, False), "sigint": (signal.SIGINT, False),
         "ctrl-c": (signal.SIGINT, True)}  # Ctrl+C: SIGINT to the whole process group


@pytest.mark.parametrize("stop", STOPS)
def test_serves_alone_and_stops_cleanly(hello, tmp_path, stop):
    executable, _ = hello
    folder, tmpdir = tmp_path / "elsewhere", tmp_path / "tmp"
    tmpdir.mkdir()
    server = start(install_alone(executable, folder), folder, tmpdir)
    try:
        assert len(unpack_folders(tmpdir)) == 1  # it unpacked into our private TMPDIR
        status, content_type, body = server.request("GET", "/")
        assert (status, content_type) == (200, "text/html; charset=utf-8")
        assert b"<h1>Hello from svc</h1>" in body
        assert server.json("GET", "/greet/7") == (200, {"id": 7, "message": "hello, visitor 7"})
        assert server.json("GET", "/greet/0") == (400, {"error": "id must be at least 1"})
        greeting = {"id": 3, "message": "h\u00e9llo"}
        assert server.json("POST", "/echo", greeting) == (200, greeting)
        assert server.request("GET", "/health")[::2] == (200, b"ok")
    finally:
        signum, group = STOPS[stop]
        status = server.stop(signum, group=group)
    assert status == 0, "".join(server.stderr)
    assert unpack_folders(tmpdir) == []
    assert [p.name for p in folder.iterdir()] == ["hello"]  # ":memory:" leaves no file
    log = "".join(server.stderr)
    assert "GET /greet/7 200" in log and "POST /echo 200" in log


def test_the_server_does_not_outlive_a_killed_bootloader(hello, tmp_path):
    """kill -9 of the executable: the program process, in a process group of its own, is told
    by the kernel (PR_SET_PDEATHSIG) and shuts down; its port is free again."""
    executable, _ = hello
    folder, tmpdir = tmp_path / "run", tmp_path / "tmp"
    tmpdir.mkdir()
    server = start(install_alone(executable, folder), folder, tmpdir)
    try:
        assert server.request("GET", "/health")[::2] == (200, b"ok")
    finally:
        assert server.stop(signal.SIGKILL) == -signal.SIGKILL
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", server.port), timeout=1).close()
        except ConnectionRefusedError:
            break  # nobody listens any more
        assert time.monotonic() < deadline, "the server kept serving after kill -9"
        time.sleep(0.1)
    for leftover in unpack_folders(tmpdir):  # kill -9 leaves the bootloader no time to clean up
        shutil.rmtree(leftover)


def _processes_mentioning(text: str) -> list[int]:
    """Pids whose command line contains `text` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and text in (entry / "cmdline").read_bytes().decode(errors="replace"):
                found.append(int(entry.name))
        except OSError:
            pass
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="looks for leftover processes in /proc")
def test_sigterm_during_a_build_stops_pyinstaller_too(tmp_path):
    cache, output = tmp_path / "fresh-cache", tmp_path / "dist" / "hello"
    build = subprocess.Popen(svcc() + ["build", "examples/hello/hello.svc", "-o", str(output)],
                             cwd=REPO, env={**os.environ, "SVC_CACHE_DIR": str(cache)},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in build.stdout:
            if line.startswith("[3/4]"):
                break
        deadline = time.monotonic() + 30
        while not _processes_mentioning(str(cache)) or build.poll() is not None:
            assert time.monotonic() < deadline and build.poll() is None, "PyInstaller never started"
            time.sleep(0.1)
        time.sleep(0.5)
        build.send_signal(signal.SIGTERM)
        assert build.wait(timeout=20) == 128 + signal.SIGTERM
    finally:
        if build.poll() is None:
            build.kill()
            build.wait()
    assert _processes_mentioning(str(cache)) == []  # no PyInstaller left writing to the cache
    assert not output.exists()


def test_a_closed_stdout_does_not_stop_a_build(build_cache, tmp_path):
    """`svcc build ... | head -1`: the progress lines stop, the build goes on."""
    output = tmp_path / "hello"
    command = " ".join(shlex.quote(part) for part in svcc() + [
        "build", "examples/hello/hello.svc", "-o", str(output)])
    result = subprocess.run(["bash", "-c", f"{command} | head -1; exit ${{PIPESTATUS[0]}}"],
                            cwd=REPO, env={**os.environ, "SVC_CACHE_DIR": str(build_cache)},
                            capture_output=True, text=True, timeout=600)
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    assert result.stdout.startswith("[1/4]") and output.is_file()


def test_environment_variables_work_as_under_svcc_run(hello, tmp_path):
    executable, _ = hello
    folder, tmpdir = tmp_path / "run", tmp_path / "tmp"
    tmpdir.mkdir()
    server = start(install_alone(executable, folder), folder, tmpdir, SVC_LOG="quiet")
    try:
        assert server.request("GET", "/greet/1")[0] == 200
    finally:
        assert server.stop() == 0
    assert "".join(server.stderr) == ""  # no access log


def test_a_port_in_use_is_one_error_line_and_exit_status_1(hello, tmp_path):
    executable, _ = hello
    folder, tmpdir = tmp_path / "run", tmp_path / "tmp"
    tmpdir.mkdir()
    installed = install_alone(executable, folder)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(env_i_command(installed, scrubbed_env(tmpdir, SVC_PORT=str(port))),
                                cwd=folder, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert result.stderr == f"error: port {port} is already in use\n"
    assert unpack_folders(tmpdir) == []


def test_carries_the_compiled_runtime(hello, tmp_path):
    """`svcc build` puts the compiled request path (svc.native) into the executable, which
    uses it: with SVC_NATIVE=require it would stop at start otherwise."""
    from svc import native
    from svc.native.build import missing_tool

    if missing_tool():
        pytest.skip(f"no compiled runtime on this machine: {missing_tool()}")
    assert native.plan().reason == "", "run make: the compiled runtime is not current"
    executable, _ = hello
    folder, tmpdir = tmp_path / "elsewhere", tmp_path / "tmp"
    tmpdir.mkdir()
    server = start(install_alone(executable, folder), folder, tmpdir, SVC_NATIVE="require")
    try:
        assert server.json("GET", "/greet/7") == (200, {"id": 7, "message": "hello, visitor 7"})
    finally:
        server.stop(signal.SIGTERM)

