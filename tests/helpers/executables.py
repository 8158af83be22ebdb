"""Building executables with `svcc build` and running them the way a user would.

The tests share one build cache per session (the `build_cache` fixture in conftest.py), so only
the first build is cold. Every executable is copied alone into an empty folder and started there
with `env -i`: no Python on PATH, nothing from this environment, and a private TMPDIR so
PyInstaller's unpack folders (`_MEI*`) can be counted before and after the process stops.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.helpers.svc_process import REPO, free_port, svcc

SCRUBBED_PATH = "/nonexistent"  # nothing can be found on PATH, least of all a Python
STARTUP_SECONDS = 60.0
STOP_SECONDS = 20.0
BUILD_SECONDS = 600
POSIX_ONLY = pytest.mark.skipif(sys.platform == "win32", reason="env -i and signals are POSIX")


def svcc_build(cache: Path, *args: str) -> subprocess.CompletedProcess:
    """`svcc build <args>` from the repository root, with the session's cache."""
    env = {**os.environ, "SVC_CACHE_DIR": str(cache)}
    return subprocess.run(svcc() + ["build", *args], capture_output=True, text=True, cwd=REPO,
                          env=env, timeout=BUILD_SECONDS)


def toolchain_cache(cache: Path) -> Path:
    """The folder of this svc, Python and PyInstaller in the build cache root `cache`
    (svc.bundle.cache_dir): its `pyinstaller.log`, its `bases/`."""
    (folder,) = cache.glob("build-*")
    return folder


def install_alone(executable: Path, folder: Path) -> Path:
    """Copy the executable, and nothing else, into a new empty folder."""
    folder.mkdir(parents=True)
    target = folder / executable.name
    shutil.copy2(executable, target)
    return target


def scrubbed_env(tmpdir: Path, **extra: str) -> dict[str, str]:
    """The whole environment the executable gets: what `env -i` leaves, plus these."""
    return {"PATH": SCRUBBED_PATH, "TMPDIR": str(tmpdir), **extra}


def env_i_command(executable: Path, env: dict[str, str]) -> list[str]:
    """`env -i K=V ... EXECUTABLE`, literally as a user would type it."""
    assert shutil.which("python3", path=env["PATH"]) is None
    assert shutil.which("python", path=env["PATH"]) is None
    return [shutil.which("env") or "/usr/bin/env", "-i",
            *(f"{key}={value}" for key, value in env.items()), str(executable)]


def unpack_folders(tmpdir: Path) -> list[Path]:
    """PyInstaller's onefile unpack folders left in `tmpdir`."""
    return sorted(tmpdir.glob("_MEI*"))


@dataclass
class Running:
    """A started executable, its output (drained by threads) and a small HTTP client."""

    process: subprocess.Popen
    port: int
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)

    def request(self, method: str, path: str, body: object = None) -> tuple[int, str, bytes]:
        """(status, content type, body) of one request; `body` is sent as JSON."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data,
                                         method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                return answer.status, answer.headers.get("Content-Type", ""), answer.read()
        except urllib.error.HTTPError as answer:
            return answer.code, answer.headers.get("Content-Type", ""), answer.read()

    def json(self, method: str, path: str, body: object = None) -> tuple[int, object]:
        status, _, data = self.request(method, path, body)
        return status, json.loads(data)

    def stop(self, signum: int = signal.SIGTERM, *, group: bool = False) -> int:
        """Send `signum`, wait, and return the exit status. With `group`, the signal goes to
        the whole process group, as a terminal sends Ctrl+C (SIGINT)."""
        if self.process.poll() is None:
            if group:
                os.killpg(self.process.pid, signum)
            else:
                self.process.send_signal(signum)
        try:
            return self.process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"did not stop on signal {signum}: {''.join(self.stderr)}")


def _drain(stream, sink: list[str], ready: "queue.Queue[str] | None") -> None:
    for line in iter(stream.readline, ""):
        sink.append(line)
        if ready is not None and line.startswith("listening on"):
            ready.put(line)
    if ready is not None:
        ready.put("")


def start(executable: Path, cwd: Path, tmpdir: Path, **extra_env: str) -> Running:
    """Start a built server under `env -i` in `cwd` on a free port; returns once listening.
    It leads a process group of its own, as a command started from a terminal does."""
    port = free_port()
    env = scrubbed_env(tmpdir, SVC_PORT=str(port), **extra_env)
    process = subprocess.Popen(env_i_command(executable, env), cwd=cwd, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               stdin=subprocess.DEVNULL, start_new_session=True)
    running = Running(process, port)
    ready: "queue.Queue[str]" = queue.Queue()
    drains = [threading.Thread(target=_drain, args=(process.stdout, running.stdout, ready),
                               daemon=True),
              threading.Thread(target=_drain, args=(process.stderr, running.stderr, None),
                               daemon=True)]
    for drain in drains:
        drain.start()
    started = time.monotonic()
    try:
        line = ready.get(timeout=STARTUP_SECONDS)
    except queue.Empty:
        line = ""
    if line != f"listening on http://127.0.0.1:{port}\n":
        status = running.stop(signal.SIGKILL)
        for drain in drains:
            drain.join(timeout=5)
        raise AssertionError(f"did not start (exit status {status}): {line!r} "
                             f"{''.join(running.stdout + running.stderr)}")
    print(f"{executable.name}: listening {time.monotonic() - started:.2f} s after start")
    return running
