"""Helpers for the server tests: a real server process (tests/helpers/demo_app.py), a
minimal raw-socket HTTP client and WebSocket frames, so every test speaks bytes on a real
127.0.0.1 socket. (A uniquely named module, not conftest, so test files can import it
whatever other test folders are collected.)"""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from websockets.frames import Frame, Opcode

DEMO_APP = Path(__file__).with_name("demo_app.py")
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class ServerProcess:
    proc: subprocess.Popen
    port: int
    log_path: Path
    stdout_lines: list[str] = field(default_factory=list)

    def log(self, settle: float = 0.3) -> str:
        """The server's stderr so far (it is flushed by the sweep, so wait a little first)."""
        time.sleep(settle)
        return self.log_path.read_text(errors="replace")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise


def start_server(tmp_path: Path, env: dict[str, str] | None = None, port: int = 0,
                 expect_listening: bool = True, app: Path = DEMO_APP) -> ServerProcess:
    """`app` (tests/helpers/demo_app.py unless given) served in a process of its own."""
    log_path = tmp_path / f"server-{time.monotonic_ns()}.log"
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.update(env or {})
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, str(app), str(port)], stdout=subprocess.PIPE,
                                stderr=log, env=full_env, text=True)
    server = ServerProcess(proc, 0, log_path)
    if not expect_listening:
        return server
    line = proc.stdout.readline()
    if not line.startswith("listening on http://127.0.0.1:"):
        proc.kill()
        raise RuntimeError(f"server did not start: {line!r} {log_path.read_text()}")
    server.stdout_lines.append(line)
    server.port = int(line.rsplit(":", 1)[1])
    return server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- a raw HTTP/1.1 client ---------------------------------------------------------------------

@dataclass
class Response:
    status: int
    reason: str
    headers: dict[str, str]
    header_list: list[tuple[str, str]]
    body: bytes
    chunks: list[bytes] = field(default_factory=list)

    def json(self):
        import json
        return json.loads(self.body)


class Client:
    """A socket and a buffered reader of responses."""

    def __init__(self, port: int, timeout: float = 10) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buffer = b""

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _fill(self) -> bool:
        data = self.sock.recv(65536)
        if not data:
            return False
        self.buffer += data
        return True

    def _line(self) -> bytes:
        while b"\r\n" not in self.buffer:
            if not self._fill():
                raise ConnectionError(f"connection closed mid-response: {self.buffer!r}")
        line, self.buffer = self.buffer.split(b"\r\n", 1)
        return line

    def _exact(self, n: int) -> bytes:
        while len(self.buffer) < n:
            if not self._fill():
                raise ConnectionError("connection closed mid-body")
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def response(self, head: bool = False) -> Response:
        """Read one response (`head=True`: a response to HEAD, which has no body)."""
        status_line = self._line().decode("latin-1")
        _version, status, reason = (status_line.split(" ", 2) + [""])[:3]
        header_list = []
        while True:
            line = self._line()
            if not line:
                break
            name, _, value = line.decode("latin-1").partition(":")
            header_list.append((name.strip(), value.strip()))
        headers = {k.lower(): v for k, v in header_list}
        code = int(status)
        if head or code in (100, 101, 204, 304):
            return Response(code, reason, headers, header_list, b"")
        if headers.get("transfer-encoding") == "chunked":
            chunks = []
            while True:
                size = int(self._line().split(b";")[0], 16)
                data = self._exact(size)
                self._exact(2)
                if size == 0:
                    break
                chunks.append(data)
            return Response(code, reason, headers, header_list, b"".join(chunks), chunks)
        body = self._exact(int(headers.get("content-length", "0")))
        return Response(code, reason, headers, header_list, body)

    def readable_within(self, seconds: float) -> bool:
        """True when the server sends something (or closes) within `seconds`."""
        if self.buffer:
            return True
        self.sock.settimeout(seconds)
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            return False
        finally:
            self.sock.settimeout(10)
        self.buffer += data
        return True

    def closed_by_peer(self, timeout: float = 5) -> bool:
        """True when the server closes the connection (EOF or reset) within `timeout`."""
        self.sock.settimeout(timeout)
        try:
            while True:
                data = self.sock.recv(65536)
                if not data:
                    return True
                self.buffer += data
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False


def request(port: int, method: str, target: str, body: bytes | None = None,
            headers: dict[str, str] | None = None) -> Response:
    """One request on a fresh connection (Connection: close)."""
    lines = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1", "Connection: close"]
    for name, value in (headers or {}).items():
        lines.append(f"{name}: {value}")
    if body is not None:
        lines.append(f"Content-Length: {len(body)}")
    raw = ("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b"")
    with Client(port) as client:
        client.send(raw)
        return client.response(head=method == "HEAD")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


# --- WebSocket frames ----------------------------------------------------------------------

@dataclass
class Received:
    opcode: int
    fin: bool
    data: bytes

    @property
    def close_code(self) -> int:
        return struct.unpack("!H", self.data[:2])[0]


@contextlib.contextmanager
def open_ws(port: int):
    key = base64.b64encode(os.urandom(16)).decode()
    with Client(port) as client:
        client.send((f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                     f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                     f"Sec-WebSocket-Version: 13\r\n\r\n").encode())
        resp = client.response()
        assert resp.status == 101, resp
        assert resp.headers["upgrade"].lower() == "websocket"
        yield client


def send_frame(client: Client, opcode: Opcode, data: bytes, fin: bool = True) -> None:
    client.send(Frame(opcode, data, fin).serialize(mask=True, extensions=[]))


def read_frame(client: Client) -> Received:
    head = client._exact(2)
    fin, opcode = bool(head[0] & 0x80), head[0] & 0x0F
    length = head[1] & 0x7F
    if length == 126:
        length = struct.unpack("!H", client._exact(2))[0]
    elif length == 127:
        length = struct.unpack("!Q", client._exact(8))[0]
    return Received(opcode, fin, client._exact(length))
