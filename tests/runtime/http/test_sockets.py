"""A program's WebSocket handlers on a real socket (docs/reference/http.md, "WebSocket
handlers"): tests/helpers/sockets_app.py served in a process of its own, spoken to with the
`websockets` client, and with raw sockets where a client must misbehave."""

from __future__ import annotations

import base64
import os
import re
import signal
import socket
import struct
import threading
import time
from pathlib import Path

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.frames import Frame, Opcode
from websockets.sync.client import connect

from tests.helpers.http_testkit import (
    Client, read_frame, request, rss_mib, send_frame, start_server,
)

# Its subject is the compiled request path: `make test` runs it again on the pure-Python modules.
pytestmark = pytest.mark.compiled_path

SOCKETS_APP = Path(__file__).resolve().parents[2] / "helpers" / "sockets_app.py"
HEARTBEAT = 0.3
MIB = 1_048_576


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    proc = start_server(tmp_path_factory.mktemp("sockets"),
                        {"SOCKETS_APP_HEARTBEAT": str(HEARTBEAT)}, app=SOCKETS_APP)
    yield proc
    proc.stop()


def url(server, path: str) -> str:
    return f"ws://127.0.0.1:{server.port}{path}"


def seen(server, tag: str, timeout: float = 3.0) -> list[dict]:
    """What the handlers tagged `tag` recorded, waiting up to `timeout` for a first record."""
    deadline = time.monotonic() + timeout
    while True:
        found = [s for s in request(server.port, "GET", "/seen").json() if s["tag"] == tag]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def upgrade(port: int, target: str, extra: str = "", then: bytes = b"") -> tuple[Client, object]:
    """A raw client's upgrade request (with `then` in the same write): the client and the
    response."""
    key = base64.b64encode(os.urandom(16)).decode()
    client = Client(port)
    client.send((f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                 f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                 f"Sec-WebSocket-Version: 13\r\n{extra}\r\n").encode() + then)
    return client, client.response()


def closed_with(ws) -> tuple[int, str]:
    """Read until the server closes: its close code and reason."""
    with pytest.raises(ConnectionClosed) as closed:
        while True:
            ws.recv(timeout=5)
    rcvd = closed.value.rcvd
    assert rcvd is not None, "the server sent no Close frame"
    return rcvd.code, rcvd.reason


def test_text_and_binary_round_trip(server):
    with connect(url(server, "/chat?tag=round-trip")) as ws:
        ws.send("héllo")
        assert ws.recv(timeout=5) == "echo: héllo"
        ws.send(b"\x00\xff" * 1000)
        assert ws.recv(timeout=5) == b"\x00\xff" * 1000
    # the client's close: the handler's receive answered None, and it ended
    assert seen(server, "round-trip")[0]["count"] == 2
    assert re.search(r"GET /chat\?tag=round-trip 101 \d", server.log())  # its access line


def test_typed_messages_and_one_that_does_not_decode(server):
    with connect(url(server, "/typed")) as ws:
        ws.send('{"n": 41}')
        assert ws.recv(timeout=5) == '{"n": 42}'
        ws.send('{"n": "forty"}')
        code, reason = closed_with(ws)
    assert code == 1007 and reason.startswith("expected an object with an integer n")
    assert seen(server, "typed")  # its receive answered None: it ended
    assert "a WebSocket message does not decode (closed with 1007)" in server.log()


def test_a_decoding_error_reason_is_cut_to_120_bytes(server):
    with connect(url(server, "/typed")) as ws:
        ws.send('"' + "é" * 200 + '"')
        code, reason = closed_with(ws)
    assert code == 1007 and len(reason.encode()) <= 120 and reason.endswith("é")


def test_frames_sent_with_the_upgrade_request_are_not_lost(server):
    frame = Frame(Opcode.TEXT, b"eager").serialize(mask=True, extensions=[])
    client, response = upgrade(server.port, "/chat", then=frame)
    with client:
        assert response.status == 101
        assert read_frame(client).data == b"echo: eager"


def test_the_101_carries_the_request_id(server):
    client, response = upgrade(server.port, "/chat", "X-Request-Id: socket-test-1\r\n")
    with client:
        assert response.status == 101 and response.headers["x-request-id"] == "socket-test-1"


def test_a_guards_refusal_is_answered_with_its_status_and_no_upgrade(server):
    client, response = upgrade(server.port, "/guarded?user=bob")
    with client:
        assert response.status == 403 and response.json() == {"error": "not for you"}
        assert client.closed_by_peer()
    with connect(url(server, "/guarded?user=ada")) as ws:
        assert ws.recv(timeout=5) == "welcome ada"
        assert closed_with(ws) == (1000, "")  # its handler returned


def test_a_bad_query_is_400_and_a_plain_get_426(server):
    client, response = upgrade(server.port, "/never-reads?ms=soon")
    with client:
        assert response.status == 400
    plain = request(server.port, "GET", "/chat")
    assert plain.status == 426 and plain.headers["upgrade"].lower() == "websocket"
    with pytest.raises(InvalidStatus):
        connect(url(server, "/ping"))  # a route that is no WebSocket route answers as it does


def test_a_handler_that_never_uses_its_socket_upgrades_and_closes(server):
    with connect(url(server, "/nothing")) as ws:
        assert closed_with(ws) == (1000, "")


def test_close_codes_from_the_handler(server):
    with connect(url(server, "/closes?code=4001&reason=see%20you")) as ws:
        assert ws.recv(timeout=5) == "bye"
        assert closed_with(ws) == (4001, "see you")
    after = seen(server, "closes")[0]
    assert after["receive"] is None and after["send"] is False


@pytest.mark.parametrize("code", [999, 1005, 2000, 5000])
def test_a_close_code_no_endpoint_may_send_is_a_fault(server, code):
    with connect(url(server, f"/closes?code={code}&reason=x")) as ws:
        assert ws.recv(timeout=5) == "bye"
        assert closed_with(ws) == (1011, "")
    assert f"{code} is not a close code a WebSocket may send" in server.log()


def test_a_fault_closes_1011_and_is_logged_not_told(server):
    with connect(url(server, "/fault")) as ws:
        assert ws.recv(timeout=5) == "hello"
        ws.send("anything")
        code, reason = closed_with(ws)
    assert code == 1011 and "secret" not in reason
    log = server.log()
    assert re.search(r"GET /fault: internal error", log)
    assert "RuntimeError: the secret detail of a fault" in log  # the trace, in the log only
    assert re.search(r"GET /fault 101 \d", log)


def test_an_error_returned_after_the_upgrade_closes_1011_with_one_line(server):
    with connect(url(server, "/fails-after")) as ws:
        assert ws.recv(timeout=5) == "hello"
        assert closed_with(ws) == (1011, "")
    log = server.log()
    lines = [line for line in log.splitlines() if "changed meanwhile" in line]
    assert len(lines) == 1 and "GET /fails-after" in lines[0]


def test_a_client_that_leaves_wakes_its_handler(server):
    client, response = upgrade(server.port, "/chat?tag=leaves")
    assert response.status == 101
    send_frame(client, Opcode.TEXT, b"one")
    assert read_frame(client).data == b"echo: one"
    client.sock.close()  # no Close frame: the connection is simply gone
    record = seen(server, "leaves")[0]
    assert record["ended"] and record["count"] == 1


def test_a_handler_stuck_elsewhere_is_cancelled_a_second_after_its_client_left(server):
    with connect(url(server, "/stuck")) as ws:
        assert ws.recv(timeout=5) == "hello"
        left = time.time()
    record = seen(server, "stuck", timeout=4)
    assert record and 0.9 <= record[0]["at"] - left < 2.5
    log = server.log()
    assert "still running 1 s after its client left: cancelled" in log
    assert re.search(r"GET /stuck 101 \d", log)


def test_a_message_over_the_limit_closes_1009_and_the_server_carries_on(server):
    with connect(url(server, "/chat"), max_size=4 * MIB) as ws:
        ws.send(b"x" * MIB)  # exactly the limit is fine
        assert len(ws.recv(timeout=5)) == MIB
        ws.send(b"x" * (MIB + 1))
        assert closed_with(ws)[0] == 1009
    assert request(server.port, "GET", "/health").status == 200
    with connect(url(server, "/chat")) as ws:
        ws.send("still here")
        assert ws.recv(timeout=5) == "echo: still here"


@pytest.mark.parametrize("frame_bytes", [
    Frame(Opcode.BINARY, b"unmasked").serialize(mask=False, extensions=[]),  # clients must mask
    bytes([0x83, 0x80, 0, 0, 0, 0]),  # reserved opcode 3
], ids=["unmasked", "opcode-3"])
def test_a_malformed_frame_closes_1002(server, frame_bytes):
    client, response = upgrade(server.port, "/chat")
    with client:
        assert response.status == 101
        client.send(frame_bytes)
        frame = read_frame(client)
        assert frame.opcode == Opcode.CLOSE and frame.close_code == 1002
        assert client.closed_by_peer()


def test_invalid_utf8_in_a_text_message_closes_1007(server):
    client, response = upgrade(server.port, "/chat")
    with client:
        assert response.status == 101
        send_frame(client, Opcode.TEXT, b"bad \xff")
        frame = read_frame(client)
        assert frame.opcode == Opcode.CLOSE and frame.close_code == 1007


def test_an_idle_socket_gets_pings(server):
    client, response = upgrade(server.port, "/idle")
    with client:
        assert response.status == 101
        assert read_frame(client).data == b"hello"
        started = time.monotonic()
        pings = [read_frame(client) for _ in range(2)]
        assert [p.opcode for p in pings] == [Opcode.PING, Opcode.PING]
        assert time.monotonic() - started < 6 * HEARTBEAT  # every ~0.3 s


def test_forward_sends_a_subscriptions_messages_while_the_handler_reads(server):
    with connect(url(server, "/forwards?n=3")) as ws:
        got = [ws.recv(timeout=5) for _ in range(3)]
        assert got == ['{"i":0}', '{"i":1}', '{"i":2}']
        ws.send("hi")
        assert ws.recv(timeout=5) == "read: hi"


def _binary_frame(size: int, data: bytes = b"") -> bytes:
    """A client's binary frame with a zero masking key (valid, and its payload unchanged)."""
    payload = data or b"m" * size
    return bytes([0x82, 0x80 | 127]) + struct.pack("!Q", len(payload)) + b"\0\0\0\0" + payload


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
def test_a_handler_that_does_not_read_holds_the_client_back(server):
    """50 MiB sent to a handler that reads nothing for a second: the socket's queue stays
    at about 1 MiB (the server stops reading), then the handler reads it all."""
    before = rss_mib(server.proc.pid)
    client, response = upgrade(server.port, "/never-reads?ms=1000")
    assert response.status == 101
    assert read_frame(client).data == b"ready"
    frame = _binary_frame(64 * 1024)
    sent = [0]

    def flood() -> None:
        client.sock.settimeout(20)
        for _ in range(800):  # 50 MiB
            client.sock.sendall(frame)
            sent[0] += 1
        client.sock.sendall(_binary_frame(0, b"last"))

    sender = threading.Thread(target=flood)
    sender.start()
    time.sleep(0.7)
    stalled_at = sent[0]
    peak = rss_mib(server.proc.pid)
    assert stalled_at < 400, stalled_at  # held back: not even half of it is taken
    sender.join(20)
    assert not sender.is_alive()
    record = seen(server, "never-reads", timeout=10)[0]
    client.close()
    assert record["total"] == 800 * 64 * 1024 + 4  # every byte arrived, in the end
    # the queue's bound: 1 MiB, and what the read that passed it brought (uvloop reads up
    # to 256 KiB at a time)
    assert record["peak"] <= MIB + 256 * 1024 + 64 * 1024, record
    assert peak - before < 16, (before, peak)


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
def test_a_writer_to_a_client_that_does_not_read_waits_in_send(server):
    before = rss_mib(server.proc.pid)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
    sock.connect(("127.0.0.1", server.port))
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f"GET /writer?ms=1500 HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                  f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                  f"Sec-WebSocket-Version: 13\r\n\r\n").encode())
    peak = before
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline:
        peak = max(peak, rss_mib(server.proc.pid))
        time.sleep(0.05)
    record = seen(server, "writer", timeout=3)[0]
    sock.close()
    assert record["waited"] and record["sent"] > 0, record
    assert record["biggest"] <= 256 * 1024 + 64 * 1024 + 16, record
    assert record["sent"] < 200, record  # 12.5 MiB: the kernel's buffers, not ours
    assert peak - before < 16, (before, peak)


def test_shutdown_closes_every_socket_1001_and_waits_for_their_handlers(tmp_path):
    proc = start_server(tmp_path, app=SOCKETS_APP)
    with connect(f"ws://127.0.0.1:{proc.port}/chat") as chat, \
            connect(f"ws://127.0.0.1:{proc.port}/slow-end") as slow:
        assert slow.recv(timeout=5) == "hello"
        chat.send("one")
        assert chat.recv(timeout=5) == "echo: one"
        started = time.monotonic()
        proc.proc.send_signal(signal.SIGTERM)
        for ws in (chat, slow):
            assert closed_with(ws) == (1001, "")
    assert proc.stop() == 0
    assert time.monotonic() - started < 2.5
    log = proc.log(settle=0)
    assert re.search(r"GET /slow-end 101 (\d+)", log)  # its end was waited for: 0.3 s
    assert float(re.search(r"GET /slow-end 101 ([\d.]+)ms", log).group(1)) >= 300
