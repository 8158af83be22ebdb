"""docs/reference/http.md "Built-in routes", /ws: RFC 6455 echo over a real socket, with frames built by hand."""

from __future__ import annotations

import base64
import os
import struct

import pytest
from websockets.frames import Frame, Opcode

from tests.helpers.http_testkit import Client, open_ws, read_frame, request, send_frame

# Its subject is the compiled request path: `make test` runs it again on the pure-Python modules.
pytestmark = pytest.mark.compiled_path

MIB = 1_048_576


def test_text_and_binary_echo(server):
    with open_ws(server.port) as client:
        send_frame(client, Opcode.TEXT, "héllo".encode())
        frame = read_frame(client)
        assert (frame.opcode, frame.data) == (Opcode.TEXT, "héllo".encode())
        send_frame(client, Opcode.BINARY, b"\x00\xff\x10")
        frame = read_frame(client)
        assert (frame.opcode, frame.data) == (Opcode.BINARY, b"\x00\xff\x10")


def test_fragmented_message_echoed_whole(server):
    with open_ws(server.port) as client:
        send_frame(client, Opcode.TEXT, b"frag", fin=False)
        send_frame(client, Opcode.PING, b"in between")  # control frames may interleave
        send_frame(client, Opcode.CONT, b"men", fin=False)
        send_frame(client, Opcode.CONT, b"ted", fin=True)
        pong = read_frame(client)
        assert (pong.opcode, pong.data) == (Opcode.PONG, b"in between")
        frame = read_frame(client)
        assert (frame.opcode, frame.fin, frame.data) == (Opcode.TEXT, True, b"fragmented")


def test_ping_gets_pong(server):
    with open_ws(server.port) as client:
        send_frame(client, Opcode.PING, b"are you there")
        frame = read_frame(client)
        assert (frame.opcode, frame.data) == (Opcode.PONG, b"are you there")


def test_close_is_answered_with_close(server):
    with open_ws(server.port) as client:
        send_frame(client, Opcode.CLOSE, struct.pack("!H", 1000) + b"bye")
        frame = read_frame(client)
        assert frame.opcode == Opcode.CLOSE and frame.close_code == 1000
        assert client.closed_by_peer()


def test_message_of_exactly_one_mib_is_echoed(server):
    with open_ws(server.port) as client:
        send_frame(client, Opcode.BINARY, b"b" * (MIB // 2), fin=False)
        send_frame(client, Opcode.CONT, b"b" * (MIB // 2))
        frame = read_frame(client)
        assert len(frame.data) == MIB


@pytest.mark.parametrize("fragmented", [False, True])
def test_message_over_one_mib_closes_1009(server, fragmented):
    with open_ws(server.port) as client:
        if fragmented:
            send_frame(client, Opcode.BINARY, b"b" * (MIB // 2), fin=False)
            send_frame(client, Opcode.CONT, b"b" * (MIB // 2 + 1))
        else:
            send_frame(client, Opcode.BINARY, b"b" * (MIB + 1))
        frame = read_frame(client)
        assert frame.opcode == Opcode.CLOSE and frame.close_code == 1009
        assert client.closed_by_peer()


@pytest.mark.parametrize("fragmented", [False, True])
def test_invalid_utf8_text_closes_1007(server, fragmented):
    with open_ws(server.port) as client:
        if fragmented:
            send_frame(client, Opcode.TEXT, b"ok \xc3", fin=False)
            send_frame(client, Opcode.CONT, b"\x28")
        else:
            send_frame(client, Opcode.TEXT, b"bad \xff")
        frame = read_frame(client)
        assert frame.opcode == Opcode.CLOSE and frame.close_code == 1007
        assert client.closed_by_peer()


def test_utf8_split_across_fragments_is_fine(server):
    with open_ws(server.port) as client:
        send_frame(client, Opcode.TEXT, b"caf\xc3", fin=False)
        send_frame(client, Opcode.CONT, b"\xa9")
        assert read_frame(client).data == "café".encode()


# Named ids: a masked frame's bytes differ on each run, and every pytest-xdist worker must
# collect the same test ids.
@pytest.mark.parametrize("frame_bytes", [
    Frame(Opcode.CONT, b"orphan").serialize(mask=True, extensions=[]),  # continuation with no start
    bytes([0xC1, 0x81, 0, 0, 0, 0]) + b"x",  # RSV1 set, but no extension was negotiated
    Frame(Opcode.BINARY, b"unmasked").serialize(mask=False, extensions=[]),  # clients must mask
    bytes([0x83, 0x80, 0, 0, 0, 0]),  # reserved opcode 3
    bytes([0x09, 0x80, 0, 0, 0, 0]),  # fragmented ping
], ids=["orphan-continuation", "rsv1", "unmasked", "opcode-3", "fragmented-ping"])
def test_protocol_errors_close_1002(server, frame_bytes):
    with open_ws(server.port) as client:
        client.send(frame_bytes)
        frame = read_frame(client)
        assert frame.opcode == Opcode.CLOSE and frame.close_code == 1002
        assert client.closed_by_peer()


def test_new_message_during_fragmented_one_is_1002(server):
    with open_ws(server.port) as client:
        send_frame(client, Opcode.TEXT, b"first", fin=False)
        send_frame(client, Opcode.TEXT, b"second")
        frame = read_frame(client)
        assert frame.opcode == Opcode.CLOSE and frame.close_code == 1002


def _handshake(version: str = "13", extra: str = "") -> bytes:
    key = base64.b64encode(os.urandom(16)).decode()
    return (f"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: {version}\r\n{extra}\r\n").encode()


def test_frames_sent_with_the_handshake_are_not_lost(server):
    with Client(server.port) as client:
        client.send(_handshake() + Frame(Opcode.TEXT, b"eager").serialize(mask=True, extensions=[]))
        assert client.response().status == 101
        assert read_frame(client).data == b"eager"


def test_plain_get_ws_is_426(server):
    resp = request(server.port, "GET", "/ws")
    assert resp.status == 426
    assert resp.headers["upgrade"].lower() == "websocket"


def test_bad_handshake_is_refused(server):
    with Client(server.port) as client:
        client.send(b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    b"Sec-WebSocket-Version: 13\r\n\r\n")  # no key
        resp = client.response()
        assert resp.status == 400 and "Sec-WebSocket-Key" in resp.json()["error"]
        assert client.closed_by_peer()


@pytest.mark.parametrize("version", ["8", "13, 8"])
def test_an_unsupported_version_is_told_the_one_we_speak(server, version):
    """RFC 6455 §4.2.2: the refusal carries Sec-WebSocket-Version."""
    with Client(server.port) as client:
        client.send(_handshake(version))
        resp = client.response()
        assert resp.status == 400 and resp.headers["sec-websocket-version"] == "13"


def test_an_upgrade_request_with_a_body_is_refused(server):
    """Its body would otherwise be read as WebSocket frames."""
    with Client(server.port) as client:
        client.send(_handshake(extra="Content-Length: 4\r\n") + b"abcd")
        resp = client.response()
        assert resp.status == 400 and resp.json() == {"error": "a WebSocket upgrade request has no body"}
        assert client.closed_by_peer()


def test_works_with_a_real_client(server):
    from websockets.sync.client import connect
    with connect(f"ws://127.0.0.1:{server.port}/ws", max_size=2 * MIB) as ws:
        ws.send("text message")
        assert ws.recv() == "text message"
        ws.send(b"\x01\x02" * 1000)
        assert ws.recv() == b"\x01\x02" * 1000
        ws.ping().wait(5)
