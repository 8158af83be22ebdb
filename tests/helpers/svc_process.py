"""Runs an svc program the way users do, `svcc run ...`, in a subprocess on a free port.

Used by the end-to-end tests of the examples, the binding rules and the user's guide. Output
is drained by threads so a chatty server never blocks; `stop()` sends SIGTERM like Ctrl+C and
checks the exit status.
"""

from __future__ import annotations

import http.client
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STARTUP_SECONDS = 30.0


def svcc() -> list[str]:
    """The venv's `svcc` script, or the CLI module under this Python."""
    script = Path(sys.executable).with_name("svcc")
    return [str(script)] if script.exists() else [sys.executable, "-m", "svc.cli"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self):
        return json.loads(self.body)


def send(port: int, method: str, path: str, raw: bytes | None, headers: dict[str, str]) -> Response:
    """One request on a fresh connection to 127.0.0.1:`port`, headers and body as given."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, path, body=raw, headers=headers)
        answer = conn.getresponse()
        return Response(answer.status, {k.lower(): v for k, v in answer.getheaders()},
                        answer.read())
    finally:
        conn.close()


@dataclass
class SvcProcess:
    process: subprocess.Popen
    port: int
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    _ready: "queue.Queue[str]" = field(default_factory=queue.Queue)
    _readers: list[threading.Thread] = field(default_factory=list)

    def request(self, method: str, path: str, body=None, *, raw: bytes | None = None,
                headers: dict[str, str] | None = None) -> Response:
        """One request on a fresh connection; `body` is sent as JSON, `raw` as is."""
        headers = dict(headers or {})
        if body is not None:
            raw = json.dumps(body).encode()
            headers.setdefault("Content-Type", "application/json")
        return send(self.port, method, path, raw, headers)

    def log(self, until: str = "", timeout: float = 5.0) -> str:
        """What the server wrote to stderr so far (the access log and fault details); waits up
        to `timeout` for `until` to appear, since the server flushes its log once per tick."""
        deadline = time.monotonic() + timeout
        while until not in "".join(self.stderr) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.1)
        return "".join(self.stderr)

    def stop(self) -> int:
        """SIGTERM, wait, and return the exit status (what it wrote read to the end)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            status = self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            status = self.process.wait()
        for reader in self._readers:  # the pipes' last lines, read to their end
            reader.join(timeout=5)
        return status


def _drain(stream, sink: list[str], ready: "queue.Queue[str] | None") -> None:
    for line in iter(stream.readline, ""):
        sink.append(line)
        if ready is not None and line.startswith("listening on"):
            ready.put(line)
    if ready is not None:
        ready.put("")


def start(args: list[str], *, env: dict[str, str] | None = None, cwd=None) -> SvcProcess:
    """`svcc run <args>` with SVC_PORT set to a free port; returns once it is listening."""
    port = free_port()
    full_env = {**os.environ, "SVC_PORT": str(port), **(env or {})}
    process = subprocess.Popen(svcc() + ["run", *args], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=full_env, cwd=cwd)
    server = SvcProcess(process, port)
    for stream, sink, ready in ((process.stdout, server.stdout, server._ready),
                                (process.stderr, server.stderr, None)):
        reader = threading.Thread(target=_drain, args=(stream, sink, ready), daemon=True)
        reader.start()
        server._readers.append(reader)
    try:
        line = server._ready.get(timeout=STARTUP_SECONDS)
    except queue.Empty:
        line = ""
    if not line:
        server.stop()
        raise AssertionError(f"server did not start: {''.join(server.stderr)}")
    return server


def run_to_end(args: list[str], *, env: dict[str, str] | None = None, cwd=None,
               timeout: float = 60) -> subprocess.CompletedProcess:
    """`svcc <args>` to completion (for check, and for programs that do not serve)."""
    return subprocess.run(svcc() + args, capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, **(env or {})}, timeout=timeout)
