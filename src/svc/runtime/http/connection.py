"""One client connection: bytes in, requests answered one at a time and in order, deadlines kept.

`Connection` is the asyncio Protocol of one TCP connection. It feeds the bytes it receives to
the sans-I/O `HttpConnection` (protocol.py), asks the `Router` (routing.py) what each request
resolves to, hands it to the route's answer strategy (answers.py: call a plain handler, start
an `async def` one eagerly with eager.py, fixed bytes, /stream, /ws) and writes the answer
(responses.py). Only the strategies call back into this one (`answer`, `fault`, `finish`,
`send`, `start_handler`), and the modules of what a connection carries once it is past
request and answer, with `write`, `flush`, `enter` and `send_frames`: /stream's chunks
(builtin_routes.py), an event stream's start and end (events.py), a WebSocket's handshake and
upgrade (websocket.py) and a program socket's start and end (sockets.py); the others return
events, matches and bytes.

An event stream or a program's WebSocket, once started, is the connection's `session`: a
handler that outlives its status line. Its end (`answer`, `fault`), the sweep (`deadline_passed`:
heartbeats), a lost connection, shutdown and, for a socket, the transport's write pauses go to
it, each behind a test that only those paths reach.

A connection is always in one `Phase` (phases.py: what its single `deadline` attribute means
in each, checked by the one `Sweeper` timer of deadlines.py, and the moves `TRANSITIONS`
allows); `enter(phase, deadline)` is the only place a connection changes phase. Handlers start eagerly: most finish without suspending and are answered on the spot, with no
Task; one that really awaits is driven on by an `eager.Resumer` (no Task either).
A request's uploaded files (uploads.py) are closed when it is answered (`send`) or dropped
with its connection (`_let_go`: lingering, or gone), a body still arriving's too.
"""

from __future__ import annotations

import asyncio
import traceback
from collections import deque
from time import perf_counter
from typing import TYPE_CHECKING, Any

from svc.rules.contract import BODY_RATE_MIN, PROCESSING_LIMIT, ResultKind
from svc.process import fault_message
from svc.runtime.http import custom_response, eager, responses
from svc.runtime.http.context import request_deadline_var as _deadline_var
from svc.runtime.http.deadlines import Sweeper
from svc.runtime.http.phases import (  # noqa: F401 - Phase and TRANSITIONS: this module's API
    CLOSED, HANDLING, LINGERING, RECEIVING, STREAMING, TRANSITIONS, UPGRADED, WAITING, Phase,
)
from svc.runtime.http.protocol import Continue, HttpConnection, Reject, Request
from svc.runtime.http.responses import JSON, encode_result, error_body, render
from svc.runtime.http.routing import BindError, CompiledRoute, Refusal, Router
from svc.runtime.observability.accesslog import ServerLog, new_request_id
from svc.runtime.observability.serverlog import standalone
from svc.runtime.http.answers import answer_error
from svc.runtime.lib.support import SvcError
from svc.runtime.http.watchdog import SvcTimeout

if TYPE_CHECKING:  # the serving services, as the App holds them
    from svc.runtime.observability.tracing import Tracer
    from svc.runtime.services import Services
    from svc.runtime.traffic.gate import Gate

#: Seconds a closed response waits for the peer to finish sending before the socket closes.
LINGER_SECONDS = 1.0
#: The same once the server is shutting down: the process is about to exit anyway.
SHUTDOWN_LINGER_SECONDS = 0.1
#: Queued requests before we stop reading from a pipelining client.
PIPELINE_PAUSE = 16

SHUTTING_DOWN = error_body("shutting down")


# The result kinds, compared with `is` on the hot path (the phases' names: phases.py).
_JSON = ResultKind.JSON
_JSON_OPTIONAL = ResultKind.JSON_OPTIONAL


class App:
    """What every connection of one server shares."""

    def __init__(self, loop: asyncio.AbstractEventLoop, router: Router, db: Any,
                 wait_seconds: float, log: ServerLog,
                 processing_limit: float = PROCESSING_LIMIT) -> None:
        self.loop = loop
        self.router = router
        self.db = db
        self.wait = wait_seconds
        self.processing_limit = processing_limit
        self.log = log
        #: Every request gets an id and every answer carries it (JSON logs); otherwise only
        #: the requests that brought one or had a line written about them (serverlog.py).
        self.every_id = log.json
        #: Requests whose handler is suspended or whose /stream body is being written: the
        #: metrics' in-flight gauge (a plain handler never is, between two loop callbacks).
        self.in_flight = 0
        #: eager.running, reached through the App: a module global costs a dict lookup.
        self.running: eager.Running = eager.running
        self.tracer: Tracer | None = None  #: the spans (observability.otel) while tracing
        self.gate: Gate | None = None  #: svc.toml's [cors] and [rate_limit] (traffic.gate)
        self.services: Services | None = None  #: the program's (svc.runtime.services)
        self.sweeper = Sweeper(loop)
        self.sweeper.hooks += [responses.date.refresh, log.flush]
        self.connections: set[Connection] = set()
        self.shutting_down = False
        self.all_closed = asyncio.Event()  #: set once shutting down and the last one is gone

    def forget(self, conn: Connection) -> None:
        self.connections.discard(conn)
        self.sweeper.discard(conn)
        if self.shutting_down and not self.connections:
            self.all_closed.set()


class Connection(asyncio.Protocol):
    """One client connection: parse, route, answer in order, enforce deadlines."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.loop = app.loop
        self.transport: Any = None  # set by connection_made, before any other call
        self.http = HttpConnection()
        self.http.body_hook = app.router.body_hook  # routes' own body limits and uploads
        self.pending: deque = deque()  # events waiting for the request in progress
        self.phase = WAITING
        self.deadline = 0.0
        self.head_at = 0.0  # perf_counter() when the current body's headers completed
        self.paced = False  # the body may pass 1 MiB: a second more per BODY_RATE_MIN bytes
        self.paced_from = 0.0  # ... from this deadline (its headers' time + processing limit)
        self.started = 0.0  # the request in progress's `started`, read here for the log
        self.closing = False  # no keep-alive after the current answer
        self.paused = False  # reading paused: too many queued requests
        self.write_paused = False  # reading paused: the peer does not read its answers
        self.out: list[bytes] | None = None  # answers gathered for one write (pipelining)
        self.task: eager.Resumer | asyncio.Task | None = None  # a suspended handler, /stream
        #: Called with (old, new) on every phase change when set: how tests watch the moves
        #: (the class may be compiled, and a compiled class cannot be subclassed in Python).
        self.on_phase: Any = None
        self.current: Any = None  # (Request, CompiledRoute) while a handler runs
        self.ws: Any = None  # the websocket.Framing once upgraded (the echo, a program socket)
        #: An event stream (events.EventStream) from its first event, or a program's WebSocket
        #: (sockets.Socket) from its upgrade, until its handler ends: what its handler's end,
        #: the sweep and a lost connection are handed to (`ended`, `failed`, `beat`, `lost`).
        #: STREAMING with one means heartbeats, not /stream; UPGRADED, a program's socket.
        self.session: Any = None
        #: The route of the request in progress (None for a 404 or 405), for the log line
        #: and the metrics: one attribute store a request.
        self.route: CompiledRoute | None = None
        #: what this connection's JSON access lines share, once asked (accesslog.line_parts)
        self.client: Any = None
        self.span: Any = None  #: while tracing, the span of the request a handler runs for
        #: Header lines for the answer to the request in progress, whatever it is: its CORS
        #: fields, set by svc.runtime.traffic.gate for each request when svc.toml has [cors], else
        #: always b"" (an attribute of this compiled class: reading it costs next to nothing,
        #: where a field of the msgspec Request cost ~200 instructions a request, measured)
        self.extra = b""

    def enter(self, phase: Phase, deadline: float) -> None:
        """Move to `phase`, whose deadline (a loop time, 0.0 for none) is `deadline`."""
        if self.on_phase is not None:
            self.on_phase(self.phase, phase)
        self.phase = phase
        self.deadline = deadline

    def keeps_alive(self, req: Request) -> bool:
        """The one keep-alive rule: the request allows another after it (the protocol says no
        for `Connection: close`, HTTP/1.0 and upgrade requests) and we are not closing."""
        return req.keep_alive and not self.closing

    # --- asyncio callbacks -----------------------------------------------------------------

    def connection_made(self, transport) -> None:
        self.transport = transport
        self.enter(WAITING, self.loop.time() + self.app.wait)
        self.app.connections.add(self)
        self.app.sweeper.add(self)

    def connection_lost(self, exc) -> None:
        if self.phase is not CLOSED:  # not closed by us: the peer left, or a write failed
            self.enter(CLOSED, 0.0)
        self.closing = True
        if self.session is not None and self.session.lost():  # its handler may run on a
            return self._let_go()  # while: the rest is done when it ends (sockets.Socket)
        self.app.forget(self)
        self._let_go()
        task = self.task
        if task is not None:
            self.task = None
            self.app.in_flight -= 1
            task.cancel()
        if self.span is not None and self.app.tracer is not None:
            self.app.tracer.abandoned(self)

    def data_received(self, data: bytes) -> None:
        phase = self.phase
        if phase is not WAITING:
            if phase is RECEIVING:
                if self.paced:  # the bytes arriving now buy their time
                    self.deadline = self.paced_from + (self.http.received + len(data)) / BODY_RATE_MIN
            elif phase is UPGRADED:
                return self.send_frames(*self.ws.receive(data))
            elif phase is LINGERING or phase is CLOSED:
                return
        events = self.http.feed(data)
        if self.pending or phase is HANDLING or phase is STREAMING:
            self._queue(events)
            return
        if len(events) == 1:  # speed-only twin of the loop below: `_dispatch` inlined, no queue
            event = events[0]
            if event.__class__ is Request:
                self._handle(event)
            else:
                self._dispatch(event)
        elif events:
            self.out = []
            self.pending.extend(events)
            self._drain_pending()
            self.flush()
        if self.http.in_body and self.phase is WAITING:
            self._start_receiving()

    def _queue(self, events: list) -> None:
        """Requests that arrive while one is in progress wait their turn (pipelining)."""
        self.pending.extend(events)
        if len(self.pending) > PIPELINE_PAUSE and not self.paused:
            self.paused = True
            if not self.write_paused:
                self.transport.pause_reading()

    def _start_receiving(self) -> None:
        """Headers complete, body still to come: the processing limit starts now (paced)."""
        deadline = self.loop.time() + self.app.processing_limit
        self.paced = self.http.paced
        if self.paced:
            self.paced_from = deadline
            deadline += self.http.received / BODY_RATE_MIN
        self.enter(RECEIVING, deadline)
        self.head_at = perf_counter()

    def pause_writing(self) -> None:
        """The peer reads slower than we answer: stop reading its requests until it catches up.
        (A program's socket reads on: its senders wait instead, sockets.send.)"""
        self.write_paused = True
        if not self.paused and (self.phase is not UPGRADED or self.session is None):
            self.transport.pause_reading()

    def resume_writing(self) -> None:
        self.write_paused = False
        if self.phase is UPGRADED and self.session is not None:
            return self.session.drained()
        if not self.paused and not self.transport.is_closing():
            self.transport.resume_reading()

    def eof_received(self) -> bool:
        phase = self.phase
        if phase is UPGRADED:
            self.send_frames(*self.ws.receive_eof())
            return True
        if self.session is not None:  # an event stream's client left: close, cancelling it
            return False
        if self.pending or phase is HANDLING or phase is STREAMING:
            self.closing = True  # answer what was asked, then close
            return True
        return False

    def deadline_passed(self, now: float) -> None:
        phase = self.phase
        if phase is HANDLING:
            self._timed_out()
        elif phase is RECEIVING:
            self._reject(Reject(504, "request timed out", *self.http.target()), self.head_at)
        elif phase is WAITING or phase is LINGERING:
            self._close()
        elif self.session is not None:  # an event stream or socket idle for a heartbeat
            self.session.beat(now)

    # --- requests --------------------------------------------------------------------------

    def _drain_pending(self) -> None:
        pending = self.pending
        while pending and (self.phase is WAITING or self.phase is RECEIVING) \
                and not self.transport.is_closing():
            self._dispatch(pending.popleft())
        if self.paused and not pending:
            self.paused = False
            if not self.write_paused:
                self.transport.resume_reading()

    def _dispatch(self, event) -> None:
        if event.__class__ is Request:
            self._handle(event)
        elif event.__class__ is Continue:
            self._continue(event)
        else:
            self._reject(event)

    def _continue(self, ask: Continue) -> None:
        """`100 Continue` only for a body the route will take; otherwise its final answer now."""
        found: Any = self.app.router.resolve(ask.method, ask.path)
        refusal = found if found.__class__ is Refusal else found[0].body_refusal(ask.content_type)
        if refusal is None:
            return self.write(responses.CONTINUE)
        # the body was never asked for: answer and close rather than read it
        self._reject(Reject(refusal.status, refusal.reason, ask.method, ask.target),
                     extra=refusal.extra)

    def _handle(self, req: Request) -> None:
        """Route the request and hand it to its route's answer strategy (answers.py), which
        answers at once unless the handler suspends (the hot path)."""
        req.started = self.started = self.head_at if self.phase is RECEIVING else perf_counter()
        gate = self.app.gate
        if gate is not None and gate.stops(self, req):  # answered: a preflight, a 429
            return
        found: Any = self.app.router.resolve(req.method, req.path)
        if found.__class__ is Refusal:
            self.route = None
            return self.finish(req, found.status, JSON, found.body, found.extra)
        route: CompiledRoute
        route, captures = found
        self.route = route
        route.answer.serve(self, req, route, captures)

    def refuse(self, req: Request, refusal: BindError) -> None:
        """Arguments that do not bind: 400 (or 415, 422) naming the parameter or fields."""
        self.finish(req, refusal.status, JSON, refusal.body())

    def start_handler(self, req: Request, route: CompiledRoute, run) -> None:
        """A handler's coroutine that may await: run its first step now, deadline set (from
        the headers, or now after a paced body)."""
        if self.phase is RECEIVING and not self.paced:
            deadline = self.deadline
        else:
            deadline = self.loop.time() + self.app.processing_limit
        token = _deadline_var.set(deadline)
        running = self.app.running
        running.request = req
        tracer = self.app.tracer
        traced = None if tracer is None else tracer.request_started(self, req)
        try:
            finished, outcome = eager.start(self.loop, run)
        except Exception as exc:
            return self.fault(req, exc)
        finally:
            running.request = None
            _deadline_var.reset(token)
            if traced is not None and tracer is not None:
                tracer.request_left(traced)
        if finished:
            return self.answer(req, route, outcome)
        # It awaits something: its Resumer answers when done, or the sweep at the limit
        # (not a session that started in its first step: no limit from then on).
        if self.session is None:
            self.enter(HANDLING, deadline)
        self.current = (req, route)
        resumer: eager.Resumer = outcome
        self.task = resumer
        self.app.in_flight += 1
        resumer.request = req
        resumer.on_done(self._handler_done)

    def _handler_done(self, task: eager.Resumer) -> None:
        if task is not self.task:  # timed out or connection gone: nobody waits for it
            if not task.cancelled():
                task.exception()  # retrieved, so asyncio does not complain about it
            return
        self.task = None
        self.app.in_flight -= 1
        req, route = self.current
        self.current = None
        if task.cancelled():
            self.fault(req, asyncio.CancelledError("handler cancelled"))
        elif (exc := task.exception()) is not None:
            self.fault(req, exc)
        else:
            self.answer(req, route, task.result())
        self.after_async()

    def _timed_out(self) -> None:
        task, self.task = self.task, None
        req, _route = self.current
        self.current = None
        if task is not None:
            self.app.in_flight -= 1
            task.cancel()
        self.finish(req, 504, JSON, responses.TIMED_OUT)
        self.after_async()

    def after_async(self) -> None:
        """A response finished outside data_received: carry on with queued requests."""
        if self.transport.is_closing():
            return
        self._drain_pending()
        if self.http.in_body and self.phase is WAITING:
            self._start_receiving()

    def answer(self, req: Request, route: CompiledRoute, value) -> None:
        kind = route.result
        # the common cases: a JSON value, or a `T?` one that is there (a database lookup);
        # speed-only twin of `responses.result_for`'s JSON branches, without its tuple
        if (kind is _JSON or kind is _JSON_OPTIONAL and value is not None) \
                and value.__class__ is not SvcError:
            try:
                body = encode_result(value, route.floats)
            except Exception as exc:
                return self.fault(req, exc)
            return self.finish(req, 200, JSON, body)
        if self.session is not None:  # an event stream's or socket's handler returned
            return self.session.ended(req, route, value)
        if value.__class__ is SvcError:  # with its header fields (answers.answer_error)
            return answer_error(self, req, route, value)
        if route.responds:
            return self._respond(req, route, value)
        try:
            status, ctype, body, detail = responses.result_for(route.result, value, route.floats)
        except Exception as exc:
            return self.fault(req, exc)
        if detail is not None:
            self.app.log.request_error(req, route, detail)
        self.finish(req, status, ctype, body)

    def _respond(self, req: Request, route: CompiledRoute, value) -> None:
        """A `Response[T]`: the status and header fields its handler chose."""
        keep = self.keeps_alive(req)
        try:
            data = custom_response.render(value, route.result, route.floats, keep,
                                          req.method != "HEAD", self.id_line(req))
        except Exception as exc:
            return self.fault(req, exc)
        self.send(req, value.status, keep, data)

    def fault(self, req: Request, exc: BaseException) -> None:
        """A raised exception: the traceback and target go to the log (with the request id,
        which the answer carries too), the client gets 500."""
        trace = "".join(traceback.format_exception(exc))
        fault = fault_message(exc)
        if self.session is not None:  # its status is sent: the session logs it and ends
            return self.session.failed(req, exc, trace, fault)
        if isinstance(exc, SvcTimeout):  # the watchdog interrupted a handler that never awaited
            self.app.log.request_error(req, self.route, "request timed out", trace, fault)
            return self.finish(req, 504, JSON, responses.TIMED_OUT)
        self.app.log.request_error(req, self.route, "internal error", trace, fault)
        self.finish(req, 500, JSON, responses.INTERNAL)

    # --- answers -----------------------------------------------------------------------------

    def finish(self, req: Request, status: int, ctype, body: bytes, extra: bytes = b"") -> None:
        keep = self.keeps_alive(req)
        rid = req.rid
        if not rid and self.app.every_id:
            rid = req.rid = new_request_id()
        data = render(status, ctype, body, keep, extra + self.extra, req.method != "HEAD", rid)
        self.send(req, status, keep, data)

    def id_line(self, req: Request) -> bytes:
        """The answer's `X-Request-Id` field (`finish`'s in `render`), or b"" when it carries
        none: with JSON logs always (the id made now if the request brought none), otherwise
        when it has an id (brought, or made for a line about it). After the connection's
        `extra` lines (the CORS fields of the request in progress)."""
        rid = req.rid
        if not rid:
            if not self.app.every_id:
                return self.extra
            rid = req.rid = new_request_id()
        return self.extra + responses.id_field(rid)

    def send(self, req: Request, status: int, keep: bool, data: bytes) -> None:
        """Write (the rest of) a response, log it, and wait for the next request or linger."""
        if req.form is not None:  # its uploaded files
            req.release()
        self.write(data)
        log = self.app.log
        if log.on:
            log.access(req.method, req.target, status, self.started, self.route, req.rid, self)
        if self.app.tracer is not None:
            self.app.tracer.request_done(self, req, status)
        if keep:
            self.enter(WAITING, self.loop.time() + self.app.wait)
        else:
            self._linger()

    def _reject(self, reject: Reject, started: float | None = None, extra: bytes = b"") -> None:
        """A request refused before its body was read: answer and close (the body is unread)."""
        rid = new_request_id() if self.app.every_id else ""
        if rid:
            extra += responses.id_field(rid)
        self.write(render(reject.status, JSON, error_body(reject.reason), False, extra))
        log = self.app.log
        if reject.detail:  # an upload that could not be stored: the OS's words
            target = reject.target.decode("latin-1")
            standalone(log, "warn", f"{reject.method} {target}: {reject.detail}")
        if log.on:
            log.access(reject.method, reject.target, reject.status,
                       perf_counter() if started is None else started, None, rid, self)
        if self.app.tracer is not None:
            self.app.tracer.rejected(self, reject.method, reject.target, reject.status, rid)
        self._linger()

    def write(self, data: bytes) -> None:
        out = self.out
        if out is None:
            self.transport.write(data)
        else:
            out.append(data)

    def flush(self) -> None:
        out, self.out = self.out, None
        if out:
            self.transport.write(b"".join(out))

    # --- closing -----------------------------------------------------------------------------

    def _linger(self) -> None:
        """Close our side after the response; read and drop what the peer still sends.

        Closing a socket with unread input makes the kernel send a reset, which can destroy
        the response before the client reads it (a 413 for an unread body, for instance).
        """
        if self.app.shutting_down:
            self._refuse_queued()
        self.flush()
        self._let_go()
        self.pending.clear()
        transport = self.transport
        if not transport.can_write_eof():
            return self._close()
        transport.write_eof()
        self.enter(LINGERING, self.loop.time() + self._linger_seconds())
        if self.paused or self.write_paused:  # drain what the peer still sends
            self.paused = self.write_paused = False
            transport.resume_reading()

    def _let_go(self) -> None:
        """Nothing more is read or answered: close the files of the body arriving, of queued
        requests and of the one a handler runs for (the peer gone)."""
        self.http.drop_body()
        for event in self.pending:
            if event.__class__ is Request:
                event.release()
        if self.current is not None:
            self.current[0].release()

    def _linger_seconds(self) -> float:
        return SHUTDOWN_LINGER_SECONDS if self.app.shutting_down else LINGER_SECONDS

    def _close(self) -> None:
        self.enter(CLOSED, 0.0)
        self.transport.close()

    def _refuse_queued(self) -> None:
        """At shutdown, pipelined requests that had not started are answered 503 (Retry-After)."""
        for event in self.pending:
            if event.__class__ is Request:
                event.started = perf_counter()
                self.write(render(503, JSON, SHUTTING_DOWN, False, responses.RETRY_AFTER
                                   + self.id_line(event), event.method != "HEAD"))
                log = self.app.log
                if log.on:
                    log.access(event.method, event.target, 503, event.started, None, event.rid,
                               self)

    def shutdown(self) -> None:
        """Stop after what is in flight: idle connections close now, busy ones after answering,
        lingering ones after a short drain, WebSocket sessions with close code 1001 (a
        program's socket's handler then receives None, and ends as it will), event streams
        at once."""
        self.closing = True
        phase = self.phase
        if phase is UPGRADED:
            self.send_frames(*self.ws.close())
        elif phase is STREAMING and self.session is not None:
            self.session.stop()
        elif phase is WAITING and not self.pending:
            self._close()
        elif phase is LINGERING:
            self.enter(LINGERING, min(self.deadline, self.loop.time() + SHUTDOWN_LINGER_SECONDS))

    def drop_handler(self) -> None:
        """Cancel the suspended handler, if any, whose end nobody waits for now."""
        task, self.task = self.task, None
        self.current = None
        if task is not None:
            self.app.in_flight -= 1
            task.cancel()

    # --- WebSockets: the frames of the /ws echo (websocket.py) and of a program's socket -------

    def send_frames(self, chunks: list[bytes], done: bool) -> None:
        """Write what a framing gave; `done`: the WebSocket is over, linger and close."""
        transport = self.transport
        if transport.is_closing():
            return
        if chunks:
            transport.writelines(chunks) if len(chunks) > 1 else transport.write(chunks[0])
        if done:
            self.ws = None
            self._linger()
