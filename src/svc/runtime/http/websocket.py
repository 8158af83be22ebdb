"""WebSocket framing (RFC 6455, websockets' sans-I/O protocol), and the `/ws` echo session.

The server keeps the socket; a `Framing` turns received bytes into whole messages and
messages into bytes to send. websockets handles the handshake checks, masking, control
frames (Ping → Pong, Close → Close), protocol errors (1002) and the 1 MiB message limit
(1009, counted over all fragments). Reassembling fragments and checking that a text message
is UTF-8 (1007) is ours, since the sans-I/O layer hands over frames, not messages.

What a whole message is for is the subclass's: `EchoSession` (the built-in `/ws`) sends it
back; a program's socket (sockets.Socket) queues it for its handler.
"""

from __future__ import annotations

import logging
from typing import Any

from websockets.datastructures import Headers
from websockets.frames import CloseCode, Opcode
from websockets.http11 import Request as WsRequest
from websockets.http11 import Response as WsResponse
from websockets.protocol import State
from websockets.server import ServerProtocol

from svc.rules.contract import MESSAGE_LIMIT
from svc.runtime.http.phases import UPGRADED
from svc.runtime.http.responses import JSON, error_body, id_field
from svc.runtime.observability.accesslog import new_request_id

_logger = logging.getLogger("svc.websocket")
_logger.addHandler(logging.NullHandler())
_logger.propagate = False

OPEN = State.OPEN


class Framing:
    """One WebSocket connection's framing, from its opening handshake on.

    `check` looks at the upgrade request; `accept` makes the 101 that `outgoing` then hands
    out first. Each of `receive`, `receive_eof`, `close` and `outgoing` returns (the bytes to
    send, whether the TCP connection should now close); the connection writes them.
    """

    #: The framing, made by `accept`; the connection calls nothing else before it (or at all,
    #: after a refusal).
    protocol: ServerProtocol

    def __init__(self) -> None:
        self._checker: ServerProtocol | None = None
        self._response: WsResponse | None = None
        self._handshake_bytes: list[bytes] = []
        self._opcode: Opcode | None = None
        self._fragments: list[bytes] = []

    def check(self, path: str, headers: list[tuple[bytes, bytes]]) -> tuple[int, str, bytes]:
        """Check the upgrade request: (101, "", b"") when it may be accepted, else (status,
        reason, header lines the refusal must carry)."""
        # The request is already parsed: a CONNECTING protocol object only checks it and
        # writes the 101; a second one, created OPEN by `accept`, then does the framing.
        checker = ServerProtocol(logger=_logger)
        request = WsRequest(path, Headers((k.decode("latin-1"), v.decode("latin-1")) for k, v in headers))
        response = checker.accept(request)
        if response.status_code != 101:
            reason = str(checker.handshake_exc or "invalid WebSocket handshake")
            return response.status_code, reason, _refusal_headers(response.status_code, reason)
        self._checker, self._response = checker, response
        return 101, "", b""

    def accept(self, fields: bytes = b"") -> None:
        """The 101, with `fields` (header lines such as the request id's) added; framing from
        now on."""
        checker, response = self._checker, self._response
        assert checker is not None and response is not None, "accept before a passed check"
        for line in fields.split(b"\r\n"):
            name, _, value = line.partition(b":")
            if name:
                response.headers[name.decode("latin-1")] = value.strip().decode("latin-1")
        checker.send_response(response)
        self._handshake_bytes = checker.data_to_send()
        self._checker = self._response = None
        self.protocol = ServerProtocol(state=OPEN, max_size=MESSAGE_LIMIT, logger=_logger)

    def receive(self, data: bytes) -> tuple[list[bytes], bool]:
        """Feed bytes; return (bytes to send, whether the TCP connection should now close)."""
        protocol = self.protocol
        protocol.receive_data(data)
        for frame in protocol.events_received():
            self._on_frame(frame)
        return self.outgoing()

    def receive_eof(self) -> tuple[list[bytes], bool]:
        self.protocol.receive_eof()
        self.protocol.events_received()
        return self.outgoing()

    def close(self, code: int = CloseCode.GOING_AWAY, reason: str = "") -> tuple[list[bytes], bool]:
        """Start the closing handshake from our side (1001: server shutdown)."""
        if self.protocol.state is OPEN:
            self.protocol.send_close(code, reason)
        return self.outgoing()

    def outgoing(self) -> tuple[list[bytes], bool]:
        """Pending bytes; an empty chunk from websockets means "close the connection"."""
        chunks = self._handshake_bytes + self.protocol.data_to_send()
        self._handshake_bytes = []
        done = self.protocol.close_expected() or self.protocol.state is State.CLOSED
        return [c for c in chunks if c], done or b"" in chunks

    def message(self, data: str | bytes, raw: bytes) -> None:
        """A whole message arrived: a text message as its str, a binary one as bytes; `raw`
        is what came over the wire (a text's UTF-8). The subclass's to handle."""
        raise NotImplementedError

    def _on_frame(self, frame) -> None:
        opcode = frame.opcode
        if opcode is Opcode.TEXT or opcode is Opcode.BINARY:
            if frame.fin:
                self._whole(opcode, frame.data)
            else:
                self._opcode = opcode
                self._fragments = [frame.data]
        elif opcode is Opcode.CONT:
            self._fragments.append(frame.data)
            if frame.fin:
                data = b"".join(self._fragments)
                opcode, self._opcode, self._fragments = self._opcode, None, []
                self._whole(opcode, data)
        # Ping, Pong and Close are answered by the protocol object itself.

    def _whole(self, opcode: Opcode | None, data: bytes) -> None:
        protocol = self.protocol
        if protocol.state is not OPEN:
            return
        raw = bytes(data)
        if opcode is Opcode.TEXT:
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                protocol.fail(CloseCode.INVALID_DATA, "invalid UTF-8 in text message")
                return
            self.message(text, raw)
        else:
            self.message(raw, raw)


class EchoSession(Framing):
    """The `/ws` echo: every message goes back as it came, text as text, binary as binary."""

    def message(self, data: str | bytes, raw: bytes) -> None:
        if isinstance(data, str):
            self.protocol.send_text(raw)
        else:
            self.protocol.send_binary(raw)


def _refusal_headers(status: int, reason: str) -> bytes:
    """RFC 6455 §4.2.2: a 426 names the protocol, a version refusal the version we speak."""
    if status == 426:
        return b"Upgrade: websocket\r\n"
    if "Sec-WebSocket-Version" in reason:
        return b"Sec-WebSocket-Version: 13\r\n"
    return b""


# --- the connection's side: the handshake and the upgrade ----------------------------------------

def handshake(conn: Any, req: Any, framing: Framing) -> bool:
    """An upgrade request's checks, before anything runs for it: True when `framing` may
    accept it; otherwise the refusal is answered here (426 for a request that is no upgrade,
    400 for one with a body or a bad handshake)."""
    if req.method != "GET" or not req.upgrade or conn.closing:
        conn.finish(req, 426, JSON, error_body("WebSocket upgrade required"),
                    b"Upgrade: websocket\r\n")
        return False
    has_body = req.header(b"content-length") not in (None, b"0")
    if has_body or req.header(b"transfer-encoding") is not None:
        # its body would be read as WebSocket frames
        conn.finish(req, 400, JSON, error_body("a WebSocket upgrade request has no body"))
        return False
    status, reason, extra = framing.check(req.path, req.headers)
    if status != 101:
        conn.finish(req, status, JSON, error_body(reason), extra)
        return False
    return True


def carry(conn: Any, framing: Framing, deadline: float) -> None:
    """From now on `conn` carries `framing`'s frames: its 101 first, then what came with the
    upgrade request."""
    conn.flush()
    conn.ws = framing
    conn.enter(UPGRADED, deadline)
    conn.send_frames(*framing.outgoing())
    leftover = conn.http.take_upgrade_data()
    if leftover and conn.ws is framing:
        conn.send_frames(*framing.receive(leftover))


def upgrade(conn: Any, req: Any) -> None:
    """/ws: the handshake, then the echo session (its access line now: 101)."""
    session = EchoSession()
    if not handshake(conn, req, session):
        return
    rid = req.rid
    if not rid and conn.app.every_id:
        rid = req.rid = new_request_id()
    session.accept(id_field(rid) if rid else b"")
    log = conn.app.log
    if log.on:
        log.access(req.method, req.target, 101, req.started, conn.route, req.rid, conn)
    carry(conn, session, 0.0)
