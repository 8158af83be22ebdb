"""A program's WebSocket session: the socket a WebSocket route's handler holds.

A route with a `WebSocket[In, Out]` parameter (`ParamSource.SOCKET`) is a WebSocket route.
Its `async def` handler receives a `Socket` and calls what generated code calls (through
svc.runtime.lib.live, which turns messages into svc values and back): `receive`, `send`,
`send_json`, `close` and `forward`.

The upgrade happens at the handler's first use of its socket, not before: until then the
request is an ordinary one (answers.UpgradeToSocket has checked the handshake, so a plain GET
is 426 and nothing runs), and an error its guards or the handler return is answered with its
status. Guards are part of the handler a route names (codegen/guard_calls.py), so this is the
one place their refusal can still be a status. From the first use on, the connection is
UPGRADED (phases.py), with no processing limit, and carries this socket's frames
(`begin_socket`); the handler's end closes the socket (1000, or 1011 after a fault
or a returned error) and writes the access line (`end_socket`: 101, the whole
session).

Why the choices (docs/decisions/http.md, "WebSocket handlers"):
- Backpressure in: received messages wait in the socket's queue; past MESSAGE_LIMIT bytes
  queued unread, the connection stops reading (`pause_reading`) until the handler catches
  up, so the kernel's buffers, then TCP's window, hold the client back. A queue of our own
  that grew, or dropped messages, would each be worse.
- Backpressure out: `send` waits while the transport holds more than SEND_BUFFER unsent
  (asyncio's pause_writing/resume_writing, at that high-water mark), so memory per socket
  stays about SEND_BUFFER plus one message, and a handler that sends to a slow client slows
  down with it rather than losing messages (a WebSocket's messages are its protocol).
- A client that leaves wakes the handler (`receive` answers None, `send` False) instead of
  cancelling it: it may have cleaning up to do. One still running CANCEL_AFTER seconds after
  the connection was lost is cancelled.
- A message that does not decode (the `decode` hook: the handler's `In` type) closes the
  socket with 1007, "invalid frame payload data", the code for a message whose content is
  not what the endpoint accepts, with the reason; the handler sees None, as for any close.
"""

from __future__ import annotations

import asyncio
import traceback
from collections import deque
from typing import Any, Callable

from websockets.frames import CloseCode

from svc.process import fault_message
from svc.rules.contract import MESSAGE_LIMIT, close_code_problem
from svc.runtime.http import events
from svc.runtime.http.binding import BindError
from svc.runtime.http.websocket import OPEN, Framing, carry
from svc.runtime.lib.support import SvcError

#: Unsent bytes (the transport's write buffer) above which `send` waits.
SEND_BUFFER = 256 * 1024
#: Seconds a handler may run on after its client's connection was lost, before it is cancelled.
CANCEL_AFTER = 1.0
#: The most bytes of UTF-8 of a close reason: a Close frame's payload is at most 125 bytes,
#: two of them the code.
REASON_LIMIT = 123
#: The most bytes of a decoding error's message sent as the reason of its 1007.
DECODE_REASON_LIMIT = 120


class Socket(Framing):
    """One WebSocket route's request, as its handler sees it (`WebSocket[In, Out]`), and the
    framing of its connection once upgraded.

    `upgraded` once the 101 is sent; `closed` once nothing more is received or sent (the
    closing handshake began, from either side, or the connection was lost: `gone`).
    `queue` holds the messages received and not yet read (each with its size on the wire),
    `queued` their bytes;
    `readers` and `writers` are the futures `receive` and `send` calls wait on; `tasks` the
    `forward` tasks; `last_write` the loop time of the last frame sent (the heartbeat
    measures idleness from it).
    """

    def __init__(self, conn: Any, req: Any, route: Any) -> None:
        super().__init__()
        self.conn = conn
        self.req = req
        self.route = route
        self.upgraded = False
        self.closed = False
        self.gone = False
        self.queue: deque[tuple[str | bytes, int]] = deque()
        self.queued = 0
        self.readers: list[asyncio.Future] = []
        self.writers: list[asyncio.Future] = []
        self.tasks: set[asyncio.Task] = set()
        self.last_write = 0.0
        self.cancelling: asyncio.TimerHandle | None = None

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open" if self.upgraded else "not upgraded"
        return f"Socket({self.req.target.decode('latin-1')!r}, {state}, {len(self.queue)} queued)"

    # --- the framing: what the connection feeds it ------------------------------------------

    def message(self, data: str | bytes, raw: bytes) -> None:
        """A whole message: queued for `receive`. Past MESSAGE_LIMIT bytes queued unread,
        the connection stops reading until the handler catches up."""
        self.queue.append((data, len(raw)))
        self.queued += len(raw)
        _wake(self.readers)
        conn = self.conn
        if self.queued > MESSAGE_LIMIT and not conn.paused:
            conn.paused = True
            conn.transport.pause_reading()

    def receive(self, data: bytes) -> tuple[list[bytes], bool]:
        out = super().receive(data)
        if self.protocol.state is not OPEN:  # the client's Close, or its protocol error
            self._shut(ours=False)
        return out

    def receive_eof(self) -> tuple[list[bytes], bool]:
        out = super().receive_eof()
        self._shut(ours=False)
        return out

    def close(self, code: int = CloseCode.GOING_AWAY, reason: str = "") -> tuple[list[bytes], bool]:
        """Our closing handshake (1001 when the server stops): what was queued is dropped."""
        self._shut(ours=True)
        return super().close(code, reason)

    def _shut(self, ours: bool) -> None:
        """Nothing more is received or sent: readers get None (after what was queued, when
        the client closed), writers False, and the `forward` tasks end."""
        if ours:
            self.queue.clear()
            self.queued = 0
        if self.closed:
            return
        self.closed = True
        _wake(self.readers)
        _wake(self.writers)
        for task in list(self.tasks):
            task.cancel()

    # --- as the connection's `session` (Connection.session), once upgraded ------------------

    def drained(self) -> None:
        """The transport's buffer went below its low-water mark: waiting senders go on."""
        _wake(self.writers)

    def beat(self, now: float) -> None:
        """The connection's deadline passed: a Ping if nothing was sent for a heartbeat
        interval (events.HEARTBEAT_SECONDS) and the client keeps up, so that proxies keep an
        idle socket open; the client's Pong is websockets' to read."""
        conn = self.conn
        if self.closed:
            conn.deadline = 0.0
            return
        ping = now - self.last_write >= events.HEARTBEAT_SECONDS * 0.999
        if ping:
            self.last_write = now
        conn.deadline = self.last_write + events.HEARTBEAT_SECONDS
        if ping and conn.transport.get_write_buffer_size() <= SEND_BUFFER:
            self.protocol.send_ping(b"")
            conn.send_frames(*self.outgoing())

    def lost(self) -> bool:
        """The connection is gone while the handler runs: it is woken (receive None, send
        False) and, if still running CANCEL_AFTER seconds later, cancelled. True: the
        connection is let go when the handler ends (`end_socket`), not now."""
        self.gone = True
        self._shut(ours=False)
        self.cancelling = self.conn.loop.call_later(CANCEL_AFTER, self._cancel)
        return True

    def _cancel(self) -> None:
        conn = self.conn
        if conn.session is self and conn.task is not None:
            conn.task.cancel()  # its end comes back as a fault (failed)

    def ended(self, req: Any, route: Any, outcome: Any) -> None:
        """The handler returned: close with 1000, or 1011 for an error value (logged)."""
        if outcome.__class__ is SvcError:
            self.conn.app.log.request_error(
                req, route, f"the WebSocket's handler returned an error after the upgrade "
                            f"(closed with 1011): {outcome.kind}: {outcome.message}")
            return self._end(CloseCode.INTERNAL_ERROR)
        self._end(CloseCode.NORMAL_CLOSURE)

    def failed(self, req: Any, exc: BaseException, trace: str, fault: str) -> None:
        """The handler raised (or was cancelled, its client gone): logged as any handler's
        fault, the client told 1011 without a word of it."""
        log = self.conn.app.log
        if self.gone and isinstance(exc, asyncio.CancelledError):
            log.request_warning(req, self.route, f"the WebSocket's handler was still running "
                                                 f"{CANCEL_AFTER:g} s after its client left: "
                                                 f"cancelled")
        else:
            log.request_error(req, self.route, "internal error", trace, fault)
        self._end(CloseCode.INTERNAL_ERROR)

    def _end(self, code: int) -> None:
        conn = self.conn
        if not self.closed:
            conn.send_frames(*self.close(code))
        self._shut(ours=True)
        if self.cancelling is not None:
            self.cancelling.cancel()
        end_socket(conn, self, self.gone)


# --- what generated code calls -----------------------------------------------------------------

async def run(sock: Socket, handler: Any) -> Any:
    """The handler of a WebSocket route, as started (answers.UpgradeToSocket). One that
    returns without an error and without having used its socket accepted it all the same: it
    is upgraded, then closed by the end (1000). One whose first act is an error (a guard's
    refusal) is answered with it, and its socket is never upgraded."""
    try:
        outcome = await handler
        if not sock.upgraded and outcome.__class__ is not SvcError:
            _upgrade(sock)
        return outcome
    finally:
        if not sock.upgraded:  # answered as a request: it never will be, whoever holds it
            sock.closed = True


def _upgrade(sock: Socket) -> None:
    """The first use: the 101, and the connection carries the socket from now on. A socket
    that starts while the server stops is closed at once (1001), as the open ones were."""
    if sock.upgraded or sock.closed:
        return
    sock.upgraded = True
    conn = sock.conn
    conn.transport.set_write_buffer_limits(high=SEND_BUFFER)
    sock.last_write = conn.loop.time()
    begin_socket(conn, sock, sock.last_write + events.HEARTBEAT_SECONDS)
    if conn.app.shutting_down and not sock.closed:
        conn.send_frames(*sock.close(CloseCode.GOING_AWAY))


async def receive(sock: Socket, decode: Callable[[str | bytes], Any] | None = None) -> Any:
    """The client's next whole message, waiting for one: a text message as str, a binary one
    as bytes, or `decode(message)` when given; None once the socket is closed (the client
    closed it, after its messages; the connection was lost; the handler closed it; the server
    stops). A message `decode` refuses (BindError, ValueError) closes the socket with 1007 and
    the reason, with one warn line, and is None."""
    if not sock.upgraded:
        _upgrade(sock)
    while not sock.queue:
        if sock.closed:
            return None
        await _wait(sock.readers, sock.conn.loop)
    data, size = sock.queue.popleft()
    sock.queued -= size
    conn = sock.conn
    if conn.paused and sock.queued <= MESSAGE_LIMIT and not sock.closed:
        conn.paused = False  # caught up: read again
        conn.transport.resume_reading()
    if decode is None:
        return data
    try:
        return decode(data)
    except (BindError, ValueError) as problem:
        _refuse(sock, problem)
        return None


def _refuse(sock: Socket, problem: Exception) -> None:
    """A message that does not decode: 1007 with the reason, one warn line."""
    reason = str(problem)
    if isinstance(problem, BindError) and problem.fields:
        reason += ": " + "; ".join(f"{name}: {what}" for name, what in problem.fields.items())
    sock.conn.app.log.request_warning(
        sock.req, sock.route, f"a WebSocket message does not decode (closed with 1007): {reason}")
    if not sock.closed:
        sock.conn.send_frames(*sock.close(CloseCode.INVALID_DATA,
                                          _truncated(reason, DECODE_REASON_LIMIT)))


async def send(sock: Socket, data: str | bytes) -> bool:
    """Send one message, text for a str, binary for bytes; waits while the client is behind
    (more than SEND_BUFFER unsent). False once the socket is closed."""
    if isinstance(data, str):
        return await _send(sock, True, data.encode("utf-8"))
    return await _send(sock, False, data)


async def send_json(sock: Socket, data: bytes) -> bool:
    """Send one text message holding `data`, JSON already encoded (UTF-8)."""
    return await _send(sock, True, data)


async def _send(sock: Socket, text: bool, payload: bytes) -> bool:
    if not sock.upgraded:
        _upgrade(sock)
    conn = sock.conn
    while conn.write_paused and not sock.closed:
        await _wait(sock.writers, conn.loop)
    if sock.closed:
        return False
    if text:
        sock.protocol.send_text(payload)
    else:
        sock.protocol.send_binary(payload)
    conn.send_frames(*sock.outgoing())
    sock.last_write = conn.loop.time()
    return True


def close(sock: Socket, code: int = 1000, reason: str = "") -> None:
    """Start the closing handshake with `code` and `reason` (its first 123 bytes of UTF-8);
    afterwards `receive` answers None and `send` False. A code no endpoint may send (below
    1000, 1004-1006, 1015, 1016-2999, 5000 and above) is a ValueError: the compiler checks
    literals, so at run time it is a fault."""
    problem = close_code_problem(code)
    if problem is not None:
        raise ValueError(problem)
    if not sock.upgraded:
        _upgrade(sock)
    if not sock.closed:
        sock.conn.send_frames(*sock.close(code, _truncated(reason, REASON_LIMIT)))


def forward(sock: Socket, subscription: Any) -> None:
    """Send every message of `subscription` (a topics Subscription: JSON bytes, None once
    it is closed) to the client as a text message, by a task of the socket's, until either
    closes; the socket's close cancels it."""
    if not sock.upgraded:
        _upgrade(sock)
    if sock.closed:
        return
    task = sock.conn.loop.create_task(_forward(sock, subscription))
    sock.tasks.add(task)
    task.add_done_callback(lambda done: _forwarded(sock, done))


async def _forward(sock: Socket, subscription: Any) -> None:
    while (payload := await subscription.next()) is not None:
        if not await send_json(sock, payload):
            return


def _forwarded(sock: Socket, task: asyncio.Task) -> None:
    """A `forward` task ended: one that failed is logged as a fault of the request's."""
    sock.tasks.discard(task)
    if not task.cancelled() and (problem := task.exception()) is not None:
        sock.conn.app.log.request_error(
            sock.req, sock.route, "internal error (forwarding a subscription)",
            "".join(traceback.format_exception(problem)), fault_message(problem))


# --- helpers -----------------------------------------------------------------------------------

async def _wait(waiters: list[asyncio.Future], loop: asyncio.AbstractEventLoop) -> None:
    """Wait until `_wake(waiters)`. A future each: a cancelled waiter cancels only its own."""
    waiter = loop.create_future()
    waiters.append(waiter)
    try:
        await waiter
    finally:
        if waiter in waiters:
            waiters.remove(waiter)


def _wake(waiters: list[asyncio.Future]) -> None:
    for waiter in waiters:
        if not waiter.done():
            waiter.set_result(None)
    waiters.clear()


def _truncated(text: str, limit: int) -> str:
    """`text`'s first `limit` bytes of UTF-8, not cutting a character."""
    data = text.encode("utf-8")
    return text if len(data) <= limit else data[:limit].decode("utf-8", "ignore")


# --- the connection's side: held reading, the upgrade, the end -----------------------------------

def hold_reading(conn: Any) -> None:
    """Read nothing more until the upgrade (`begin_socket`) or the answer (lingering): a
    program socket's client could otherwise pile up bytes while its handler decides."""
    conn.paused = True
    conn.transport.pause_reading()


def begin_socket(conn: Any, sock: Socket, deadline: float) -> None:
    """A program's socket, at its handler's first use of it: the 101 (with the request id and
    CORS fields, as any answer), reading on, UPGRADED until it closes; `deadline` is its first
    heartbeat's (Socket.beat)."""
    sock.accept(conn.id_line(sock.req))
    conn.session = sock
    conn.paused = False
    conn.transport.resume_reading()
    carry(conn, sock, deadline)


def end_socket(conn: Any, sock: Socket, lost: bool) -> None:
    """A program socket's handler ended, its socket closed: the access line (101, for the
    whole session) and the trace's end; a connection already `lost` is let go now."""
    conn.session = None
    req = sock.req
    log = conn.app.log
    if log.on:
        log.access(req.method, req.target, 101, req.started, sock.route, req.rid, conn)
    if conn.app.tracer is not None:
        conn.app.tracer.request_done(conn, req, 101)
    if lost:
        conn.app.forget(conn)
