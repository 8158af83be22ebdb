"""The reserved routes every svc server answers: GET /health, /ready, /stream and /ws.

`/health` is an ordinary (synchronous) route: the process answers (liveness). `/ready` is an
async route given the server's `Db`: 200 when the database answers `SELECT 1` within
`READY_SECONDS`, else 503 with `Retry-After` (a `busy` error, its reason in the body and the
log). `/stream` and `/ws` need the connection itself (a chunked body written piece by piece;
an upgraded socket), so their routes carry the result kinds STREAM and WEBSOCKET that the
connection recognises; they are demonstrations, which `[server] demo_routes = false` in
svc.toml switches off (`serving`).
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable

from svc.rules.contract import Param, ParamSource, ResultKind, Route
from svc.runtime.http import responses
from svc.runtime.http.phases import STREAMING
from svc.runtime.lib.support import SvcError

STREAM_CHUNKS = tuple(f"chunk:{i}\n".encode() for i in range(5))
STREAM_HEAD_EXTRA = b"Transfer-Encoding: chunked\r\n"
#: The last chunk, written by the connection once the handler is done (it frames the body).
STREAM_END = b"0\r\n\r\n"


#: How long /ready waits for the database's answer: well inside the processing limit, so a
#: database that does not answer gives 503 rather than the server's 504.
READY_SECONDS = 1.0
READY = {"status": "ready"}


def health() -> bytes:
    return b"ok"


async def ready(db: Any) -> object:
    """`{"status":"ready"}` when `db` answers `SELECT 1` within READY_SECONDS, else a `busy`
    error (503, Retry-After) saying why; the details (the database's own message) go to the
    log. A server without a database is ready."""
    if db is None:
        return READY
    from svc.runtime.db.base import EXEC  # loaded already: the server has a Db

    try:
        answer = await asyncio.wait_for(db._submit(EXEC, "SELECT 1", (), None), READY_SECONDS)
    except asyncio.TimeoutError:
        why = f"the database did not answer within {READY_SECONDS:g} s"
        return SvcError("busy", f"not ready: {why}", detail=f"not ready: {why}")
    if isinstance(answer, SvcError):
        reason = answer.message if answer.kind == "busy" else "the database failed"
        return SvcError("busy", f"not ready: {reason}",
                        detail=f"not ready: {answer.detail or answer.message}")
    return READY


async def stream(write: Callable[[bytes], None]) -> None:
    """Write the five chunks of /stream, each in its own write, yielding to the loop between.

    The connection writes the head before and the last chunk after; uvloop sends each write
    at once when the socket can take it, so every chunk leaves in its own segment.
    """
    for chunk in STREAM_CHUNKS:
        write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        await asyncio.sleep(0)


def _websocket_marker() -> None:
    """Never called: the connection upgrades itself for routes of kind WEBSOCKET."""


HEALTH = Route("GET", "/health", health, (), ResultKind.TEXT)
READY_ROUTE = Route("GET", "/ready", ready, (Param("db", ParamSource.DB, "Db"),),
                    ResultKind.JSON)
#: The demonstration routes, on unless svc.toml's `[server] demo_routes = false`.
DEMO_ROUTES = (
    Route("GET", "/stream", stream, (), ResultKind.STREAM),
    Route("GET", "/ws", _websocket_marker, (), ResultKind.WEBSOCKET),
)
ROUTES = (HEALTH, READY_ROUTE, *DEMO_ROUTES)


def serving(demo_routes: bool = True) -> tuple[Route, ...]:
    """The built-in routes a server answers: all of them, or all but the demonstrations."""
    return ROUTES if demo_routes else (HEALTH, READY_ROUTE)


def serve_stream(conn: Any, req: Any, route: Any) -> None:
    """/stream on `conn`: the head, then the handler writes the chunks (on a task of its own),
    then the last chunk when it ends."""
    keep = conn.keeps_alive(req)
    head = responses.head(200, responses.TEXT, None, keep, STREAM_HEAD_EXTRA + conn.id_line(req))
    if req.method == "HEAD":
        return conn.send(req, 200, keep, head)
    conn.write(head)
    conn.flush()
    conn.enter(STREAMING, 0.0)
    conn.current = (req, route)
    task = conn.task = conn.loop.create_task(route.handler(conn.transport.write))
    conn.app.in_flight += 1
    task.add_done_callback(lambda done: _stream_done(conn, done))


def _stream_done(conn: Any, task: asyncio.Task) -> None:
    if task is not conn.task:
        return
    conn.task = None
    conn.app.in_flight -= 1
    req, _route = conn.current
    conn.current = None
    conn.send(req, 200, conn.keeps_alive(req), STREAM_END)
    conn.after_async()
