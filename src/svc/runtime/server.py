"""Listening, the connection lifecycle and graceful shutdown of the built-in HTTP/1.1 server.

`serve(db, port, routes)` is what generated code calls (docs/internals.md, "Server API").
Each TCP connection is a `Connection` (an asyncio Protocol) that feeds bytes to the
sans-I/O `HttpConnection` and answers the requests it yields, one at a time and in order.

A connection is always in one phase, and its single `deadline` attribute means what the
phase says (checked by the one `Sweeper` timer, see deadlines.py):

    WAITING    until the next request's headers are complete → close silently
    RECEIVING  headers complete, body still arriving         → 504 and close
    HANDLING   a handler is running                          → 504, handler cancelled
    STREAMING  /stream is writing, WEBSOCKET an upgraded session (no deadline)
    LINGERING  our side is done; drain the peer, then close   → close

Handlers start eagerly (eager.py): most finish without suspending and are answered on the
spot, with no Task. Only a handler that really awaits is wrapped in a Task.
"""

from __future__ import annotations

import asyncio
import errno
import os
import signal
import sys
import traceback
from collections import deque
from time import perf_counter
from typing import Any

from svc.runtime import builtin_routes, eager, responses
from svc.runtime.context import request_deadline_var as _deadline_var
from svc.runtime.deadlines import Sweeper
from svc.runtime.protocol import Continue, HttpConnection, Reject, Request
from svc.runtime.responses import JSON, TEXT, encode_result, error_body, render
from svc.runtime.routing import BindError, Route, Router
from svc.runtime.serverlog import ServerLog
from svc.runtime.support import SvcError, SvcTimeout
from svc.runtime.websocket import EchoSession

PROCESSING_LIMIT = 2.0
DEFAULT_WAIT = 10
WAIT_VARIABLE = "SVC_HTTP_REQUEST_WAIT_SECONDS"
LINGER_SECONDS = 1.0
PIPELINE_PAUSE = 16  # queued requests before we stop reading from a pipelining client
SHUTDOWN_GRACE = PROCESSING_LIMIT + 0.5

SHUTTING_DOWN = error_body("shutting down")

WAITING, RECEIVING, HANDLING, STREAMING, WEBSOCKET, LINGERING = range(6)


class App:
    """What every connection of one server shares."""

    def __init__(self, loop: asyncio.AbstractEventLoop, router: Router, db: Any,
                 wait_seconds: float, log: ServerLog) -> None:
        self.loop = loop
        self.router = router
        self.db = db
        self.wait = wait_seconds
        self.log = log
        self.sweeper = Sweeper(loop)
        self.sweeper.hooks.append(responses.date.refresh)
        self.sweeper.hooks.append(log.flush)
        self.connections: set[Connection] = set()
        self.shutting_down = False


class Connection(asyncio.Protocol):
    """One client connection: parse, route, answer in order, enforce deadlines."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.loop = app.loop
        self.transport: asyncio.Transport | None = None
        self.http = HttpConnection()
        self.pending: deque = deque()
        self.phase = WAITING
        self.deadline = 0.0
        self.head_at = 0.0  # perf_counter() when the current body's headers completed
        self.busy = False
        self.closing = False
        self.paused = False  # reading paused: too many queued requests
        self.write_paused = False  # reading paused: the peer does not read its answers
        self.out: list[bytes] | None = None
        self.task: asyncio.Task | None = None
        self.current: tuple | None = None
        self.ws: EchoSession | None = None

    # --- asyncio callbacks -----------------------------------------------------------------

    def connection_made(self, transport) -> None:
        self.transport = transport
        self.deadline = self.loop.time() + self.app.wait
        self.app.connections.add(self)
        self.app.sweeper.add(self)

    def connection_lost(self, exc) -> None:
        self.app.connections.discard(self)
        self.app.sweeper.discard(self)
        self.deadline = 0.0
        self.closing = True
        task = self.task
        if task is not None:
            self.task = None
            task.cancel()

    def data_received(self, data: bytes) -> None:
        if self.ws is not None:
            self._ws_send(*self.ws.receive(data))
            return
        if self.phase == LINGERING:
            return
        events = self.http.feed(data)
        if self.busy or self.pending:
            self.pending.extend(events)
            if len(self.pending) > PIPELINE_PAUSE and not self.paused:
                self.paused = True
                if not self.write_paused:
                    self.transport.pause_reading()
            return
        if len(events) == 1:
            event = events[0]
            if event.__class__ is Request:
                self._handle(event)
            else:
                self._dispatch(event)
        elif events:
            self.out = []
            self.pending.extend(events)
            self._drain_pending()
            self._flush()
        if self.phase == WAITING and self.http.in_body:
            self._start_receiving()

    def _start_receiving(self) -> None:
        """Headers complete, body still to come: the 2-second processing limit starts now."""
        self.phase = RECEIVING
        self.deadline = self.loop.time() + PROCESSING_LIMIT
        self.head_at = perf_counter()

    def pause_writing(self) -> None:
        """The peer reads slower than we answer: stop reading its requests until it catches up."""
        self.write_paused = True
        if not self.paused:
            self.transport.pause_reading()

    def resume_writing(self) -> None:
        self.write_paused = False
        if not self.paused and not self.transport.is_closing():
            self.transport.resume_reading()

    def eof_received(self) -> bool:
        if self.ws is not None:
            self._ws_send(*self.ws.receive_eof())
            return True
        if self.busy or self.pending:
            self.closing = True  # answer what was asked, then close
            return True
        return False

    def deadline_passed(self, now: float) -> None:
        phase = self.phase
        if phase == HANDLING:
            self._timed_out()
        elif phase == RECEIVING:
            self.deadline = 0.0
            self._reject(Reject(504, "request timed out", *self.http.target()), self.head_at)
        elif phase in (WAITING, LINGERING):
            self.deadline = 0.0
            self.transport.close()

    # --- requests --------------------------------------------------------------------------

    def _drain_pending(self) -> None:
        pending = self.pending
        while pending and not self.busy and not self.transport.is_closing():
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
        refusal = self.app.router.refusal(ask.method, ask.path, ask.content_type)
        if refusal is None:
            return self._write(responses.CONTINUE)
        status, reason, extra = refusal
        # the body was never asked for: answer and close rather than read it
        self._reject(Reject(status, reason, ask.method, ask.path), extra=extra)

    def _handle(self, req: Request) -> None:
        """Route, bind, run the handler; answer at once unless it suspends (the hot path)."""
        req.started = self.head_at if self.phase == RECEIVING else perf_counter()
        router = self.app.router
        entry = router.static.get(req.path)
        if entry is None:
            found = router.lookup(req.path)
            if found is None:
                return self._finish(req, 404, JSON, responses.NOT_FOUND)
            entry, captures = found
        else:
            captures = ()
        route = entry.by_method.get(req.method) or entry.find(req.method)
        if route is None:
            return self._finish(req, 405, JSON, responses.METHOD_NOT_ALLOWED, entry.allow)
        if route.fixed is not None:  # /health: bytes rendered once per second
            keep = req.keep_alive and not self.closing and not req.upgrade  # _keeps_alive
            return self._send(req, 200, keep, route.fixed.render(keep, req.method != "HEAD"))
        kind = route.result
        if kind == "stream":
            return self._stream(req, route)
        if kind == "websocket":
            return self._upgrade(req)
        if route.params:
            try:
                args = route.bind(captures, req.query, req.body, req.content_type, self.app.db)
            except BindError as exc:
                return self._finish(req, exc.status, JSON, error_body(exc.reason))
        else:
            args = ()
        if not route.is_async or route.never_suspends:
            try:
                outcome = route.handler(*args)
                if route.is_async:
                    outcome = eager.run_to_end(outcome)
            except Exception as exc:
                return self._fault(req, exc)
            return self._answer(req, route, outcome)
        deadline = self.deadline if self.phase == RECEIVING else self.loop.time() + PROCESSING_LIMIT
        token = _deadline_var.set(deadline)
        try:
            finished, outcome = eager.start(self.loop, route.handler(*args))
        except Exception as exc:
            return self._fault(req, exc)
        finally:
            _deadline_var.reset(token)
        if finished:
            self._answer(req, route, outcome)
        else:
            self._suspend(req, route, outcome, deadline)

    def _suspend(self, req: Request, route, task: asyncio.Task, deadline: float) -> None:
        """The handler awaits something: its Task answers when done, or the sweep at 2 s."""
        self.busy = True
        self.phase = HANDLING
        self.deadline = deadline
        self.current = (req, route)
        self.task = task
        task.add_done_callback(self._handler_done)

    def _handler_done(self, task: asyncio.Task) -> None:
        if task is not self.task:  # timed out or connection gone: nobody waits for it
            if not task.cancelled():
                task.exception()  # retrieved, so asyncio does not complain about it
            return
        self.task = None
        req, route = self.current
        self.current = None
        self.busy = False
        if task.cancelled():
            self._fault(req, asyncio.CancelledError("handler cancelled"))
        elif task.exception() is not None:
            self._fault(req, task.exception())
        else:
            self._answer(req, route, task.result())
        self._after_async()

    def _timed_out(self) -> None:
        task, self.task = self.task, None
        req, _route = self.current
        self.current = None
        self.busy = False
        if task is not None:
            task.cancel()
        self._finish(req, 504, JSON, responses.TIMED_OUT)
        self._after_async()

    def _after_async(self) -> None:
        """A response finished outside data_received: carry on with queued requests."""
        if self.transport.is_closing():
            return
        self._drain_pending()
        if self.phase == WAITING and self.http.in_body:
            self._start_receiving()

    def _answer(self, req: Request, route, value) -> None:
        if route.result == "json" and value.__class__ is not SvcError:  # the common case
            try:
                body = encode_result(value, route.floats)
            except Exception as exc:
                return self._fault(req, exc)
            return self._finish(req, 200, JSON, body)
        try:
            status, ctype, body, detail = responses.result_for(route.result, value, route.floats)
        except Exception as exc:
            return self._fault(req, exc)
        if detail is not None:
            self.app.log.error(f"{req.method} {req.path}: {detail}")
        self._finish(req, status, ctype, body)

    def _fault(self, req: Request, exc: BaseException) -> None:
        """A raised exception: the traceback and path go to the log, the client gets 500."""
        trace = "".join(traceback.format_exception(exc))
        if isinstance(exc, SvcTimeout):  # support.Watchdog interrupted a handler that never awaited
            self.app.log.error(f"{req.method} {req.path}: request timed out\n{trace}")
            return self._finish(req, 504, JSON, responses.TIMED_OUT)
        self.app.log.error(f"{req.method} {req.path}: internal error\n{trace}")
        self._finish(req, 500, JSON, responses.INTERNAL)

    def _finish(self, req: Request, status: int, ctype, body: bytes, extra: bytes = b"") -> None:
        keep = self._keeps_alive(req)
        self._send(req, status, keep, render(status, ctype, body, keep, extra, req.method != "HEAD"))

    def _keeps_alive(self, req: Request) -> bool:
        return req.keep_alive and not self.closing and not req.upgrade

    def _send(self, req: Request, status: int, keep: bool, data: bytes) -> None:
        """Write a rendered response, log it, and wait for the next request or close."""
        if self.out is None:
            self.transport.write(data)
        else:
            self.out.append(data)
        log = self.app.log
        if not log.quiet:
            log.access(req.method, req.path, status, req.started)
        if keep:
            self.phase = WAITING
            self.deadline = self.loop.time() + self.app.wait
        else:
            self._linger()

    def _reject(self, reject: Reject, started: float | None = None, extra: bytes = b"") -> None:
        """A request refused before its body was read: answer and close (the body is unread)."""
        self._write(render(reject.status, JSON, error_body(reject.reason), False, extra))
        self.app.log.access(reject.method, reject.path, reject.status,
                            perf_counter() if started is None else started)
        self._linger()

    # --- output and closing ------------------------------------------------------------------

    def _write(self, data: bytes) -> None:
        out = self.out
        if out is None:
            self.transport.write(data)
        else:
            out.append(data)

    def _flush(self) -> None:
        out, self.out = self.out, None
        if out:
            self.transport.write(b"".join(out))

    def _linger(self) -> None:
        """Close our side after the response; read and drop what the peer still sends.

        Closing a socket with unread input makes the kernel send a reset, which can destroy
        the response before the client reads it (a 413 for an unread body, for instance).
        """
        if self.app.shutting_down:
            self._refuse_queued()
        self._flush()
        self.phase = LINGERING
        self.pending.clear()
        self.busy = False
        transport = self.transport
        if transport.can_write_eof():
            transport.write_eof()
            self.deadline = self.loop.time() + LINGER_SECONDS
            if self.paused or self.write_paused:  # drain what the peer still sends
                self.paused = self.write_paused = False
                transport.resume_reading()
        else:
            transport.close()

    def _refuse_queued(self) -> None:
        """At shutdown, pipelined requests that had not started are answered 503."""
        for event in self.pending:
            if event.__class__ is Request:
                event.started = perf_counter()
                self._write(render(503, JSON, SHUTTING_DOWN, False, b"", event.method != "HEAD"))
                self.app.log.access(event.method, event.path, 503, event.started)

    # --- /stream and /ws ---------------------------------------------------------------------

    def _stream(self, req: Request, route) -> None:
        keep = req.keep_alive and not self.closing
        self._write(responses.head(200, TEXT, None, keep, builtin_routes.STREAM_HEAD_EXTRA))
        if req.method == "HEAD":
            self.app.log.access(req.method, req.path, 200, req.started)
            return self._after_response(keep)
        self._flush()
        self.busy = True
        self.phase = STREAMING
        self.deadline = 0.0
        self.current = (req, route)
        task = self.task = self.loop.create_task(route.handler(self.transport.write))
        task.add_done_callback(self._stream_done)

    def _stream_done(self, task: asyncio.Task) -> None:
        if task is not self.task:
            return
        self.task = None
        req, _route = self.current
        self.current = None
        self.busy = False
        keep = req.keep_alive and not self.closing
        self.app.log.access(req.method, req.path, 200, req.started)
        self._after_response(keep)
        self._after_async()

    def _after_response(self, keep: bool) -> None:
        if keep:
            self.phase = WAITING
            self.deadline = self.loop.time() + self.app.wait
        else:
            self._linger()

    def _upgrade(self, req: Request) -> None:
        if req.method != "GET" or not req.upgrade or self.closing:
            return self._finish(req, 426, JSON, error_body("WebSocket upgrade required"),
                                b"Upgrade: websocket\r\n")
        has_body = req.header(b"content-length") not in (None, b"0")
        if has_body or req.header(b"transfer-encoding") is not None:
            # its body would be read as WebSocket frames
            return self._finish(req, 400, JSON, error_body("a WebSocket upgrade request has no body"))
        session = EchoSession()
        status, reason, extra = session.handshake(req.path, req.headers)
        if status != 101:
            return self._finish(req, status, JSON, error_body(reason), extra)
        self._flush()
        self.app.log.access(req.method, req.path, 101, req.started)
        self.ws = session
        self.phase = WEBSOCKET
        self.deadline = 0.0
        self._ws_send(*session.outgoing())
        leftover = self.http.take_upgrade_data()
        if leftover:
            self._ws_send(*session.receive(leftover))

    def _ws_send(self, chunks: list[bytes], done: bool) -> None:
        transport = self.transport
        if transport.is_closing():
            return
        if chunks:
            transport.writelines(chunks) if len(chunks) > 1 else transport.write(chunks[0])
        if done:
            self.ws = None
            self._linger()

    # --- shutdown ----------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Stop after what is in flight: idle connections close now, busy ones after answering."""
        self.closing = True
        if self.ws is not None:
            self._ws_send(*self.ws.close())
        elif self.phase == WAITING and not self.pending:
            self.transport.close()


# --- serve ------------------------------------------------------------------------------------

def wait_seconds_from_env() -> int | SvcError:
    raw = os.environ.get(WAIT_VARIABLE)
    if raw is None:
        return DEFAULT_WAIT
    text = raw.strip()
    if not text.isascii() or not text.isdigit() or int(text) <= 0:
        return SvcError("invalid", f"{WAIT_VARIABLE} must be a positive integer (got {raw!r})")
    return int(text)


def raise_open_file_limit() -> None:
    """10,000 connections need more descriptors than the usual soft limit of 1024."""
    try:
        import resource
    except ImportError:  # Windows
        return
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard == resource.RLIM_INFINITY or soft < hard:
            target = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (OSError, ValueError):
        pass


def _close_databases() -> None:
    try:
        from svc.runtime import db as db_module
    except ImportError:
        return
    close_all = getattr(db_module, "close_all", None)
    if close_all is not None:
        close_all()


async def serve(db: Any, port: int, routes) -> None | SvcError:
    """Serve `routes` (plus /health, /stream, /ws) on 127.0.0.1:port until SIGINT/SIGTERM."""
    wait = wait_seconds_from_env()
    if isinstance(wait, SvcError):
        return wait
    if not isinstance(port, int) or not 0 <= port <= 65535:
        return SvcError("invalid", f"invalid port {port}")
    raise_open_file_limit()
    loop = asyncio.get_running_loop()
    log = ServerLog(quiet=os.environ.get("SVC_LOG", "").strip().lower() == "quiet")
    app = App(loop, Router(tuple(builtin_routes.ROUTES) + tuple(routes)), db, wait, log)
    try:
        server = await loop.create_server(lambda: Connection(app), "127.0.0.1", port,
                                          backlog=8192, reuse_address=True)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            return SvcError("invalid", f"port {port} is already in use")
        return SvcError("invalid", f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}")
    bound = server.sockets[0].getsockname()[1]
    app.sweeper.start()
    stop = asyncio.Event()
    # Handlers go in before the "listening" line (a supervisor may signal as soon as it reads
    # it) and stay until shutdown is over, so a second Ctrl+C/SIGTERM cannot cut it short.
    installed = _install_stop_handlers(loop, stop)
    print(f"listening on http://127.0.0.1:{bound}", flush=True)
    try:
        await stop.wait()
    finally:
        try:
            await _shut_down(app, server)
        finally:
            for signum in installed:
                loop.remove_signal_handler(signum)
    return None


def _install_stop_handlers(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> list[int]:
    """SIGINT and SIGTERM set `stop`; returns the signals handled (none on Windows)."""
    installed = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(signum, stop.set)
            installed.append(signum)
        except (NotImplementedError, RuntimeError, ValueError):  # Windows, or not main thread
            pass
    return installed


async def _shut_down(app: App, server: asyncio.AbstractServer) -> None:
    """Stop accepting, let requests in flight finish (bounded by their limit), close the db."""
    app.shutting_down = True
    server.close()
    for conn in list(app.connections):
        conn.shutdown()
    give_up = app.loop.time() + SHUTDOWN_GRACE
    while app.connections and app.loop.time() < give_up:
        await asyncio.sleep(0.02)
    for conn in list(app.connections):
        if conn.transport is not None:
            conn.transport.abort()
    app.sweeper.stop()
    app.log.flush()
    try:
        _close_databases()
    finally:
        sys.stdout.flush()
