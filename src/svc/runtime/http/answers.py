"""How each route is answered, chosen once per route at start-up: one strategy object each.

A route is answered in one of nine ways, and which one never changes while the server runs:

    FixedBytes      /health: the same bytes every time (responses.Fixed)
    CallNow         a plain `def` handler: bind, call, answer, all in the callback that read
                    the request (generated code's route handlers whose bodies never await)
    StartCoroutine  an `async def` handler, which may await: bind, then run its first step
                    at once (`Connection.start_handler`, eager.py); answered when it ends
    StartRetried    the same, for a handler the compiler proved safe to run again when its
                    transaction clashes with another one (retries.py)
    StartEventStream  an event stream route (an `Events[T]` parameter): started as
                    StartCoroutine starts one, with the handler's `EventStream` (events.py)
    UpgradeToSocket   a WebSocket route (a `WebSocket[In, Out]` parameter): the upgrade
                    request checked, then started as StartCoroutine starts one, with the
                    handler's `Socket`, whose first use upgrades (sockets.py)
    StreamBody      /stream: a chunked body the handler writes piece by piece
    UpgradeToWebSocket  /ws: the connection becomes the echo's WebSocket session
    AnswerOptions   OPTIONS on a known path (and `OPTIONS *`): 204 with the `Allow` line

`answer_for(route)` picks the strategy (`CompiledRoute.answer`), so `Connection._handle` makes
one call, `route.answer.serve(conn, req, route, captures)`, instead of testing the route's
properties on every request. The strategies decide what happens to a request; writing bytes,
phases and deadlines stay with the `Connection` (sockets) and the rendering with
responses.py (HTTP).
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

from svc.rules.contract import ParamSource, ResultKind, Route
from svc.runtime.http import builtin_routes, events, responses, sockets, websocket
from svc.runtime.http.binding import BindError
from svc.runtime.http.protocol import Request
from svc.runtime.http.retries import run_retried
from svc.runtime.lib.support import SvcError

if TYPE_CHECKING:  # both call into this module; only their types are named here
    from svc.runtime.http.connection import Connection
    from svc.runtime.http.routing import CompiledRoute


class Answer:
    """How requests to one route are answered."""

    def serve(self, conn: Connection, req: Request, route: CompiledRoute,
              captures: tuple[bytes, ...]) -> None:
        raise NotImplementedError


class FixedBytes(Answer):
    """/health: bytes rendered once per Date second (the handler is called once, here)."""

    def __init__(self, fixed: responses.Fixed) -> None:
        self.fixed = fixed

    def serve(self, conn: Connection, req: Request, route: CompiledRoute,
              captures: tuple[bytes, ...]) -> None:
        keep = conn.keeps_alive(req)
        line = conn.id_line(req)
        if line:  # an answer with an X-Request-Id field is rendered anew
            fixed = self.fixed
            return conn.send(req, 200, keep, responses.render(
                200, fixed.content_type, fixed.body, keep, line, req.method != "HEAD"))
        conn.send(req, 200, keep, self.fixed.render(keep, req.method != "HEAD"))


class CallNow(Answer):
    """A plain `def` handler: it cannot await, so it is called and answered on the spot, with
    no coroutine, no Resumer and no request deadline in the context (nothing could read it);
    `running.request` is the request while it runs (for the `log_*` builtins' request id)."""

    def serve(self, conn: Connection, req: Request, route: CompiledRoute,
              captures: tuple[bytes, ...]) -> None:
        try:
            args = route.arguments(captures, req, conn.app.db)
        except BindError as refusal:
            return conn.refuse(req, refusal)
        running = conn.app.running
        running.request = req
        try:
            outcome = route.handler(*args)
        except Exception as exc:
            running.request = None
            return conn.fault(req, exc)
        running.request = None
        conn.answer(req, route, outcome)


class StartCoroutine(Answer):
    """An `async def` handler: its first step runs at once; most finish there."""

    def serve(self, conn: Connection, req: Request, route: CompiledRoute,
              captures: tuple[bytes, ...]) -> None:
        try:
            args = route.arguments(captures, req, conn.app.db)
        except BindError as refusal:
            return conn.refuse(req, refusal)
        conn.start_handler(req, route, route.handler(*args))


class StartRetried(Answer):
    """An `async def` handler marked `retried`: run as StartCoroutine runs one, inside
    retries.run_retried, which runs it again after a transaction's clash. (Its own `serve`,
    rather than a hook StartCoroutine calls: the hook cost every coroutine route about 490
    instructions per request on the pure-Python runtime, bench/instructions.py users.)"""

    def serve(self, conn: Connection, req: Request, route: CompiledRoute,
              captures: tuple[bytes, ...]) -> None:
        try:
            args = route.arguments(captures, req, conn.app.db)
        except BindError as refusal:
            return conn.refuse(req, refusal)
        conn.start_handler(req, route, run_retried(conn, req, route, captures, args))


class StartEventStream(Answer):
    """An event stream route: its handler gets an `events.EventStream` at `at` among its
    arguments and is started as any `async def` one; its first event starts the stream
    (events.begin_stream). HEAD is answered with the stream's head alone, the handler
    not run (it could only send a body nobody reads, for as long as it likes)."""

    def __init__(self, at: int) -> None:
        self.at = at

    def serve(self, conn: Connection, req: Request, route: CompiledRoute,
              captures: tuple[bytes, ...]) -> None:
        if req.method == "HEAD":
            keep = conn.keeps_alive(req)
            return conn.send(req, 200, keep, responses.head(
                200, events.CONTENT_TYPE, None, keep, events.HEAD_FIELDS + conn.id_line(req)))
        try:
            args = route.arguments(captures, req, conn.app.db)
        except BindError as refusal:
            return conn.refuse(req, refusal)
        args[self.at] = events.EventStream(conn, req, route)
        conn.start_handler(req, route, route.handler(*args))


class UpgradeToSocket(Answer):
    """A WebSocket route: its handler gets a `sockets.Socket` at `at` among its arguments.
    The upgrade request is checked first (426, 400: nothing runs for a refusal), then bound
    and started as any `async def` handler, with reading held; the 101 goes out at the
    handler's first use of its socket (sockets.py), so that its guards, and any error it
    returns before, are answered as on any route."""

    def __init__(self, at: int) -> None:
        self.at = at

    def serve(self, conn: Connection, req: Request, route: CompiledRoute,
              captures: tuple[bytes, ...]) -> None:
        sock = sockets.Socket(conn, req, route)
        if not websocket.handshake(conn, req, sock):
            return
        try:
            args = route.arguments(captures, req, conn.app.db)
        except BindError as refusal:
            return conn.refuse(req, refusal)
        args[self.at] = sock
        sockets.hold_reading(conn)
        conn.start_handler(req, route, sockets.run(sock, route.handler(*args)))


class StreamBody(Answer):
    """/stream: the connection writes the head, the handler the chunks, the connection the end."""

    def serve(self, conn: Connection, req: Request, route: CompiledRoute,
              captures: tuple[bytes, ...]) -> None:
        builtin_routes.serve_stream(conn, req, route)


class UpgradeToWebSocket(Answer):
    """/ws: the handshake, then the connection carries an echo session."""

    def serve(self, conn: Connection, req: Request, route: CompiledRoute,
              captures: tuple[bytes, ...]) -> None:
        websocket.upgrade(conn, req)


class AnswerOptions(Answer):
    """OPTIONS on a known path, or `OPTIONS *`: the methods there, answered by the server
    (programs declare no OPTIONS handlers). `allow` is the path's `Allow` line, made once."""

    def __init__(self, allow: bytes) -> None:
        self.allow = allow

    def serve(self, conn: Connection, req: Request, route: CompiledRoute,
              captures: tuple[bytes, ...]) -> None:
        answer_options(conn, req, self.allow)


def answer_options(conn: Connection, req: Request, allow: bytes) -> None:
    """The plain OPTIONS answer (RFC 9110 §9.3.7): 204 with the `Allow` line and no body (a
    204 has no Content-Length either). The one place it is made: a CORS preflight (an OPTIONS
    request with Origin and Access-Control-Request-Method) is answered in front of this."""
    keep = conn.keeps_alive(req)
    conn.send(req, 204, keep, responses.head(204, None, None, keep, allow + conn.id_line(req)))


def answer_error(conn: Connection, req: Request, route: CompiledRoute | None,
                 err: SvcError) -> None:
    """An svc `Error` as the answer, whoever returned it (a handler, a guard, a helper through
    `try`): its kind's status, its JSON body and the header fields it carries
    (responses.error_answer); the detail of a 500 goes to the log with the request."""
    status, body, extra, detail = responses.error_answer(err)
    if detail is not None:
        conn.app.log.request_error(req, route, detail)
    conn.finish(req, status, responses.JSON, body, extra)


CALL_NOW = CallNow()
START_COROUTINE = StartCoroutine()
START_RETRIED = StartRetried()
STREAM_BODY = StreamBody()
UPGRADE_TO_WEBSOCKET = UpgradeToWebSocket()


def answer_for(route: Route) -> Answer:
    """The one strategy for `route`: by its result kind for the built-in routes, otherwise by
    whether its handler is a plain function or a coroutine function."""
    if route.result is ResultKind.TEXT:
        return FixedBytes(responses.Fixed(200, responses.TEXT, route.handler()))
    if route.result is ResultKind.STREAM:
        return STREAM_BODY
    if route.result is ResultKind.WEBSOCKET:
        return UPGRADE_TO_WEBSOCKET
    for at, param in enumerate(route.params):
        if param.source is ParamSource.EVENTS:
            return StartEventStream(at)
        if param.source is ParamSource.SOCKET:
            return UpgradeToSocket(at)
    if inspect.iscoroutinefunction(route.handler):
        return START_RETRIED if route.retried else START_COROUTINE
    return CALL_NOW
