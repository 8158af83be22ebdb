"""Calling a program's routes from its tests: `headers_of`, `test_request`, and reading a
`Response[T]` with `status`, `header` and `body`.

`test_request(db, method, path, headers, body)` answers exactly as the server would, because
it IS the server's path: the request is written as HTTP/1.1 bytes and handed to a real
`Connection` (the server's asyncio Protocol) over an in-memory transport, so the parser and
its limits, the router, the binding, the handler's eager start and the rendering all run as
they do behind a socket; only the socket is missing. The bytes written back are read into a
`Response[str]`: the status, every header field the server wrote, and the body as text.

A new `Connection` per request keeps requests apart (no keep-alive state carries over). The
`Router`, and the traffic gate of svc.toml's `[cors]` and `[rate_limit]` with its buckets, are
made once per test and kept in the test's services (svc.runtime.services), so CORS and rate
limits apply as the server applies them, and a test that sends past a limit gets its 429.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from svc.rules.contract import (
    DEFAULT_WAIT_SECONDS, Route, header_line_problem, method_problem, target_problem,
)
from svc.runtime.http import builtin_routes
from svc.runtime.http.connection import App, Connection, Phase
from svc.runtime.http.custom_response import Response
from svc.runtime.http.headers import Headers, header as request_header
from svc.runtime.http.routing import Router
from svc.runtime.observability.serverlog import ServerLog
from svc.runtime.lib.support import SvcFault
from svc.runtime.services import Services, current as current_services
from svc.runtime.traffic.gate import Gate, gate_for, install_guard_limits

if TYPE_CHECKING:
    from svc.rules.settings import Settings

#: The phases a connection enters once its answer is written: the request is over.
_ANSWERED = frozenset({Phase.WAITING, Phase.LINGERING, Phase.CLOSED, Phase.UPGRADED})
#: Fields test_request writes itself from the body; given in `headers` they are refused.
_FRAMING = frozenset({"content-length", "transfer-encoding"})


# --- headers_of --------------------------------------------------------------------------------

def headers_of(lines: list[str]) -> Headers:
    """`headers_of(["Authorization: Bearer t", ...])`: a `Headers` as a request would carry
    them, each line `Name: value` (spaces around the value dropped, as the parser drops them).
    A line that is not a header field is a fault naming it (a literal one, a compile error)."""
    fields = []
    for line in lines:
        problem = header_line_problem(line)
        if problem is not None:
            raise SvcFault(f"headers_of: {problem}")
        name, _, value = line.partition(":")
        fields.append((name.encode("ascii"), value.strip(" \t").encode("utf-8")))
    return Headers(fields)


# --- reading a Response --------------------------------------------------------------------------

def status(r: Response) -> int:
    """`status(r)`: the status a handler chose, or the one the server answered."""
    return r.status


def body(r: Response) -> Any:
    """`body(r)`: the T of a Response[T]; the text of the body for test_request's answer."""
    return r.body


def response_header(r: Response, name: str) -> str | None:
    """`header(r, name)` on a Response: its field called `name` (any case), several fields of
    one name joined with ", " as for a request's, or None."""
    lower = name.lower()
    found = [value for key, value in r.fields if key.lower() == lower]
    return ", ".join(found) if found else None


# --- test_request ------------------------------------------------------------------------------

async def test_request(db: Any, method: str, path: str, headers: Headers, text: str,
                       routes: list[Route], settings: Settings) -> Response:
    """`test_request(db, method, path, headers, body)`: the server's answer to that request,
    `routes` and `settings` being the program's (code generation hands them in, as for
    `serve`)."""
    problem = request_problem(method, path, headers)
    if problem is not None:
        raise SvcFault(f"test_request: {problem}")
    loop = asyncio.get_running_loop()
    services = current_services()
    app = App(loop, _router(services, routes, settings), db, DEFAULT_WAIT_SECONDS,
              ServerLog(quiet=True))
    app.gate, app.services = _gate(services, settings), services
    transport = MemoryTransport(loop)
    conn = Connection(app)
    conn.connection_made(transport)
    conn.on_phase = transport.phase_changed
    app.sweeper.start()  # the processing limit (504) as the server keeps it
    try:
        # As a socket delivers bytes: from a loop callback, outside the test's own Task.
        loop.call_soon(conn.data_received, request_bytes(method, path, headers, text))
        await transport.answered
    finally:
        app.sweeper.stop()
        if conn.phase is not Phase.CLOSED:
            conn.connection_lost(None)
        app.log.flush()  # a fault's traceback, as the server would log it
    return read_answer(bytes(transport.data), method == "HEAD")


def request_problem(method: str, path: str, headers: Headers) -> str | None:
    """Why test_request cannot send this request, or None; the compiler asks the same of
    a literal method and path (svc.rules.contract's rules)."""
    problem = method_problem(method) or target_problem(path)
    if problem is not None:
        return problem
    for name in _FRAMING:
        if request_header(headers, name) is not None:
            return (f"do not give a {name.title()} field: test_request frames the body "
                    "itself")
    return None


def _router(services: Services, routes: list[Route], settings: Settings) -> Router:
    """The server's router over the built-in routes and the program's, built once per list."""
    found = services.routers.get(id(routes))
    if found is None or found[0] is not routes:
        builtin = builtin_routes.serving(settings.demo_routes)
        found = services.routers[id(routes)] = (routes, Router(tuple(builtin) + tuple(routes)))
    return found[1]


def _gate(services: Services, settings: Settings) -> Gate | None:
    """The test's traffic gate and guard-limit buckets, made at its first request."""
    if services.gate is None and settings.has_gate:
        services.gate = gate_for(settings, shared=False)
    if not services.guard_buckets and settings.guard_limits:
        services.settings = settings
        install_guard_limits(services, shared=False)
    return services.gate


def request_bytes(method: str, path: str, headers: Headers, text: str) -> bytes:
    """The request as a client writes it: a Host field unless given, the fields in order, and
    Content-Length for a body (and for POST, PUT and PATCH without one, as clients do)."""
    data = bytes(text, "utf-8")
    head = [f"{method} {path} HTTP/1.1\r\n".encode("utf-8")]
    if request_header(headers, "host") is None:
        head.append(b"Host: svc-test\r\n")
    head += [name + b": " + value + b"\r\n" for name, value in headers.fields]
    if data or method in ("POST", "PUT", "PATCH"):
        head.append(b"Content-Length: %d\r\n" % len(data))
    return b"".join(head) + b"\r\n" + data


class MemoryTransport(asyncio.Transport):
    """The connection's transport: keeps what the server writes, and resolves `answered` when
    the connection moves to a phase that follows an answer."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self.data = bytearray()
        self.answered: asyncio.Future[None] = loop.create_future()
        self.closing = False

    def phase_changed(self, old: Phase, new: Phase) -> None:
        if new in _ANSWERED and not self.answered.done():
            self.answered.set_result(None)

    def write(self, data: Any) -> None:
        self.data += data

    def writelines(self, chunks: Any) -> None:
        for chunk in chunks:
            self.data += chunk

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def abort(self) -> None:
        self.closing = True

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default


def read_answer(data: bytes, head_only: bool) -> Response:
    """The server's bytes as a Response[str]; interim 1xx answers (100 Continue) skipped."""
    while True:
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        code = int(lines[0].split(b" ", 2)[1])
        if not 100 <= code < 200 or code == 101:
            break
        data = rest
    fields = []
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        fields.append((name.decode("latin-1"), value.strip(b" \t").decode("utf-8", "replace")))
    response = Response(code, "", fields)
    if head_only or code in (101, 204, 304):
        return response
    if (response_header(response, "transfer-encoding") or "").lower() == "chunked":
        content = _dechunked(rest)
    else:
        length = response_header(response, "content-length")
        content = rest if length is None else rest[:int(length)]
    response.body = content.decode("utf-8", "replace")
    return response


def _dechunked(data: bytes) -> bytes:
    """A chunked body (the /stream route's) as one."""
    out = bytearray()
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out += data[:size]
        data = data[size + 2:]
    return bytes(out)
