"""Server-sent events: the stream an event stream route's handler writes (`Events[T]`).

A route with an `Events[T]` parameter (`ParamSource.EVENTS`) is an event stream route. Its
`async def` handler receives an `EventStream` and calls the two functions generated code
calls, `send_event(stream, data, event, id)` and `last_event_id(stream)`.

The stream starts at the first `send_event`, not before: until then the request is an
ordinary one (the processing limit applies, an error result answers its status and JSON, a
handler that sends nothing answers 204), so a handler can refuse with a proper status after
looking at the request. At the first event the connection writes the head
(`begin_stream`: 200, `text/event-stream`, chunked) and `retry:`; from then on the
connection is STREAMING (phases.py), with no processing limit, and the handler's return ends
the body (`end_stream`), whatever it returns: the status is sent already.

Why the choices (docs/decisions/http.md, "Server-sent events"):
- A slow reader is bounded by the transport's own write buffer: an event that finds more
  than SLOW_READER_BYTES unsent is dropped (send_event returns False), so memory per stream
  never grows past about that bound plus one event, and no queue of our own is kept. One
  warn line per episode, when it ends (the reader caught up, or the stream ended), says how
  many were dropped: a line per event would flood the log exactly when things go wrong.
- Heartbeats ride on the server's one Sweeper: a streaming connection's `deadline` is the
  moment its stream has been idle for HEARTBEAT_SECONDS (`heartbeat`), so nothing is
  scheduled per stream.
- The encoding is WHATWG HTML's "server-sent events": `id:`/`event:` lines, one `data:` line
  per line of the JSON text, a blank line. An id or event name that holds CR, LF or NUL
  cannot be encoded (it would end the field early, or inject one): a fault.
"""

from __future__ import annotations

from typing import Any

from svc.runtime.http import responses
from svc.runtime.http.builtin_routes import STREAM_END
from svc.runtime.http.phases import STREAMING
from svc.runtime.lib.support import SvcError

#: Seconds a stream may be idle before a `: ping` comment keeps proxies from closing it.
#: A module constant, read when a stream starts and at each sweep (tests shorten it).
HEARTBEAT_SECONDS = 15.0
#: Unsent bytes (the transport's write buffer) above which new events are dropped.
SLOW_READER_BYTES = 256 * 1024
#: The reconnection time a client is told at the start of each stream, in milliseconds.
RETRY_MS = 2000

#: The head's fields after the status line and Date (the connection adds the request id,
#: the CORS fields and Connection).
CONTENT_TYPE = b"text/event-stream"
HEAD_FIELDS = b"Cache-Control: no-store\r\nTransfer-Encoding: chunked\r\n"
#: The first chunk of every stream: the `retry:` field on its own (a block with no data
#: dispatches no event).
RETRY = b"retry: %d\n\n" % RETRY_MS
FIRST_CHUNK = b"%x\r\n%s\r\n" % (len(RETRY), RETRY)
PING = b": ping\n\n"
PING_CHUNK = b"%x\r\n%s\r\n" % (len(PING), PING)

_FORBIDDEN = ("\r", "\n", "\0")


class EventStream:
    """One event stream route's request, as its handler sees it (`Events[T]`).

    `started` once the head is written; `gone` once nothing more can be sent (the client
    left, the server stopped the stream, or it ended); `dropped` counts the events of the
    slow-reader episode in progress; `last_write` is the loop time of the last bytes written
    (what the heartbeat measures idleness from).
    """

    __slots__ = ("conn", "req", "route", "started", "gone", "dropped", "last_write")

    def __init__(self, conn: Any, req: Any, route: Any) -> None:
        self.conn = conn
        self.req = req
        self.route = route
        self.started = False
        self.gone = False
        self.dropped = 0
        self.last_write = 0.0

    def heartbeat(self, now: float) -> float:
        """Called by the connection when its deadline passes: a `: ping` if the stream has
        been idle for HEARTBEAT_SECONDS (and its reader is keeping up). Returns the next
        deadline."""
        if not self.gone and now - self.last_write >= HEARTBEAT_SECONDS * 0.999:
            transport = self.conn.transport
            if transport.get_write_buffer_size() <= SLOW_READER_BYTES:
                transport.write(PING_CHUNK)
            self.last_write = now
        return self.last_write + HEARTBEAT_SECONDS

    # --- as the connection's `session` (Connection.session), once started -----------------

    def ended(self, req: Any, route: Any, outcome: Any) -> None:
        """Its handler returned `outcome`: the stream ends (the last chunk, the access line)."""
        end_stream(self.conn, req, route, outcome)

    def failed(self, req: Any, exc: BaseException, trace: str, fault: str) -> None:
        """Its handler raised: logged as any handler's fault, and the stream ends."""
        conn = self.conn
        conn.app.log.request_error(req, conn.route, "internal error", trace, fault)
        end_stream(conn, req, conn.route, None)

    def lost(self) -> bool:
        """The client left: the access line now; False: the connection cancels the handler."""
        stream_lost(self.conn)
        return False

    def stop(self) -> None:
        """The server stops: the handler is cancelled and the stream ends now."""
        conn = self.conn
        conn.drop_handler()
        end_stream(conn, self.req, conn.route, None)

    def beat(self, now: float) -> None:
        """The connection's deadline passed: a heartbeat, or the end of a stream that started
        after the server's stop began (begin_stream)."""
        conn = self.conn
        if conn.app.shutting_down:
            return conn.shutdown()
        conn.deadline = self.heartbeat(now)

    def end(self, outcome: Any) -> None:
        """The stream is over (its handler returned `outcome`, or None when it ended by a
        fault, the server's stop or the client's leaving): log what the client was not told."""
        self.gone = True
        self.episode_over()
        if outcome.__class__ is SvcError:
            self.conn.app.log.request_error(
                self.req, self.route,
                f"the event stream's handler returned an error after the stream started "
                f"(the client saw a normal end): {outcome.kind}: {outcome.message}")

    def episode_over(self) -> None:
        """A slow-reader episode ends: its one warn line, with how many events were dropped."""
        if self.dropped:
            count, self.dropped = self.dropped, 0
            self.conn.app.log.request_warning(
                self.req, self.route,
                f"the client reads too slowly: {count} event{'s' if count != 1 else ''} dropped "
                f"(more than {SLOW_READER_BYTES // 1024} KiB unsent)")


def encode_event(data: bytes, event: str | None, id: str | None) -> bytes:
    """One event as its chunk of the body (checked: the fields are known to be clean)."""
    parts = []
    if id is not None:
        parts.append(b"id: " + id.encode("utf-8") + b"\n")
    if event is not None:
        parts.append(b"event: " + event.encode("utf-8") + b"\n")
    if b"\n" in data or b"\r" in data:
        for line in data.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n"):
            parts.append(b"data: " + line + b"\n")
    else:
        parts.append(b"data: " + data + b"\n")
    parts.append(b"\n")
    body = b"".join(parts)
    return b"%x\r\n%s\r\n" % (len(body), body)


def _unclean(event: str | None, id: str | None) -> str | None:
    """What is wrong with the id or event name, or None."""
    for what, value in (("id", id), ("event name", event)):
        if value is not None and any(c in value for c in _FORBIDDEN):
            return f"an event's {what} holds CR, LF or NUL: {value!r}"
    return None


def send_event(stream: EventStream, data: bytes, event: str | None = None,
               id: str | None = None) -> bool:
    """Send one event (`data`: the JSON text of one value, already encoded). The first one
    starts the stream. False when it was dropped: the client reads too slowly, or is gone.

    An id or event name with CR, LF or NUL is a fault: raised before the stream started (the
    handler's request answers 500, logged), logged and dropped after it."""
    problem = _unclean(event, id)
    if problem is not None:
        if not stream.started:
            raise ValueError(problem)
        stream.conn.app.log.request_error(stream.req, stream.route, f"event dropped: {problem}")
        return False
    if stream.gone:
        return False
    conn = stream.conn
    if not stream.started:
        stream.started = True
        begin_stream(conn, stream)
        if stream.gone:
            return False
    transport = conn.transport
    if transport.is_closing():
        return False
    if transport.get_write_buffer_size() > SLOW_READER_BYTES:
        stream.dropped += 1
        return False
    if stream.dropped:
        stream.episode_over()
    transport.write(encode_event(data, event, id))
    stream.last_write = conn.loop.time()
    return True


def last_event_id(stream: EventStream) -> str | None:
    """The request's `Last-Event-ID` field (a reconnecting client's last id), None if absent."""
    value = stream.req.header(b"last-event-id")
    return None if value is None else value.decode("utf-8", "replace")


# --- the connection's side: the stream's start and end ------------------------------------------

def begin_stream(conn: Any, stream: EventStream) -> None:
    """An event stream's first event: the head and the `retry:` chunk, then STREAMING, whose
    deadline is the first heartbeat's (the processing limit no longer applies). A stream that
    starts once the server is stopping is ended by the next sweep (not here: its handler's step
    is still running, and must not be answered twice)."""
    req = stream.req
    keep = conn.keeps_alive(req)
    conn.write(responses.head(200, CONTENT_TYPE, None, keep, HEAD_FIELDS + conn.id_line(req))
               + FIRST_CHUNK)
    conn.flush()
    now = conn.loop.time()
    stream.last_write = now
    conn.session = stream
    conn.enter(STREAMING, now if conn.app.shutting_down else now + HEARTBEAT_SECONDS)


def end_stream(conn: Any, req: Any, route: Any, outcome: Any) -> None:
    """The stream is over (its handler returned `outcome`; None: a fault, or the server stops
    it): the last chunk, the access line (status 200, its whole duration)."""
    stream, conn.session = conn.session, None
    stream.end(outcome)
    conn.send(req, 200, conn.keeps_alive(req), STREAM_END)


def stream_lost(conn: Any) -> None:
    """The client of a started stream left: its handler is cancelled (by connection_lost), the
    stream logged as answered (200, until now)."""
    stream, conn.session = conn.session, None
    stream.end(None)
    req = stream.req
    log = conn.app.log
    if log.on:
        log.access(req.method, req.target, 200, conn.started, conn.route, req.rid, conn)
