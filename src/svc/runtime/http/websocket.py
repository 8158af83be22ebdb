"""The `/ws` echo session: RFC 6455 framing by the `websockets` sans-I/O protocol.

The server keeps the socket; this class turns received bytes into bytes to send. websockets
handles the handshake checks, masking, control frames (Ping → Pong, Close → Close), protocol
errors (1002) and the 1 MiB message limit (1009, counted over all fragments). Reassembling
fragments and checking that a text message is UTF-8 (1007) is ours, since the sans-I/O layer
hands over frames, not messages.
"""

from __future__ import annotations

import logging

from websockets.datastructures import Headers
from websockets.frames import CloseCode, Opcode
from websockets.http11 import Request as WsRequest
from websockets.protocol import State
from websockets.server import ServerProtocol

from svc.rules.contract import MESSAGE_LIMIT

_logger = logging.getLogger("svc.websocket")
_logger.addHandler(logging.NullHandler())
_logger.propagate = False


class EchoSession:
    """One WebSocket connection after (or during) its opening handshake."""

    #: The framing, made by `handshake` when it accepts the upgrade; the connection calls
    #: nothing else before (or at all, after a refusal).
    protocol: ServerProtocol

    def __init__(self) -> None:
        self._handshake_bytes: list[bytes] = []
        self._opcode: Opcode | None = None
        self._fragments: list[bytes] = []

    def handshake(self, path: str, headers: list[tuple[bytes, bytes]],
                  request_id: str = "") -> tuple[int, str, bytes]:
        """Check the upgrade request: (101, "", b"") when accepted, else (status, reason,
        header lines the refusal must carry). The 101 carries `X-Request-Id` when the request
        has an id, like every other answer (a refusal gets it from the connection)."""
        # The request is already parsed: a CONNECTING protocol object only checks it and
        # writes the 101; a second one, created OPEN, then does the framing.
        checker = ServerProtocol(logger=_logger)
        request = WsRequest(path, Headers((k.decode("latin-1"), v.decode("latin-1")) for k, v in headers))
        response = checker.accept(request)
        if response.status_code != 101:
            reason = str(checker.handshake_exc or "invalid WebSocket handshake")
            return response.status_code, reason, _refusal_headers(response.status_code, reason)
        if request_id:
            response.headers["X-Request-Id"] = request_id
        checker.send_response(response)
        self._handshake_bytes = checker.data_to_send()
        self.protocol = ServerProtocol(state=State.OPEN, max_size=MESSAGE_LIMIT, logger=_logger)
        return 101, "", b""

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

    def close(self, code: int = CloseCode.GOING_AWAY) -> tuple[list[bytes], bool]:
        """Start the closing handshake from our side (server shutdown)."""
        if self.protocol.state is State.OPEN:
            self.protocol.send_close(code)
        return self.outgoing()

    def outgoing(self) -> tuple[list[bytes], bool]:
        """Pending bytes; an empty chunk from websockets means "close the connection"."""
        chunks = self._handshake_bytes + self.protocol.data_to_send()
        self._handshake_bytes = []
        done = self.protocol.close_expected() or self.protocol.state is State.CLOSED
        return [c for c in chunks if c], done or b"" in chunks

    def _on_frame(self, frame) -> None:
        opcode = frame.opcode
        if opcode is Opcode.TEXT or opcode is Opcode.BINARY:
            if frame.fin:
                self._echo(opcode, frame.data)
            else:
                self._opcode = opcode
                self._fragments = [frame.data]
        elif opcode is Opcode.CONT:
            self._fragments.append(frame.data)
            if frame.fin:
                data = b"".join(self._fragments)
                opcode, self._opcode, self._fragments = self._opcode, None, []
                self._echo(opcode, data)
        # Ping, Pong and Close are answered by the protocol object itself.

    def _echo(self, opcode: Opcode | None, data: bytes) -> None:
        protocol = self.protocol
        if protocol.state is not State.OPEN:
            return
        if opcode is Opcode.TEXT:
            try:
                bytes(data).decode("utf-8")
            except UnicodeDecodeError:
                protocol.fail(CloseCode.INVALID_DATA, "invalid UTF-8 in text message")
                return
            protocol.send_text(data)
        else:
            protocol.send_binary(data)


def _refusal_headers(status: int, reason: str) -> bytes:
    """RFC 6455 §4.2.2: a 426 names the protocol, a version refusal the version we speak."""
    if status == 426:
        return b"Upgrade: websocket\r\n"
    if "Sec-WebSocket-Version" in reason:
        return b"Sec-WebSocket-Version: 13\r\n"
    return b""
