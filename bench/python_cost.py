"""Python time per GET /health through svc's connection code vs the bare protocol, no sockets.

Feeds the same request bytes straight into `Connection.data_received` (and into the bare
uvloop peer's protocol) with a transport whose `write` does nothing, so what is timed is only
the Python path: parsing callbacks, the Request, routing, the answer, the response bytes. The
third protocol, `peers/minimal_http.py`, is the bare one plus only what docs/reference/http.md asks of every
server (no routing): how far below svc any conforming Python server could go. The
kernel half of a request (one recv, one send) is the same for both and is left out. This is
a measuring tool, not a test: it tells how far svc's per-request Python is from the ceiling,
without the noise of a shared machine's scheduler.

It also times svc alone on handler routes (plain Python handlers standing in for generated
ones): a plain JSON route with a path capture, a route that takes `Headers` and one that
answers a `Response` with header fields. The first shows that routes using neither pay nothing
for them (compare with an older checkout: `PYTHONPATH=<old>/src python bench/python_cost.py`;
the other two are skipped where the runtime has no such routes).
"""

import asyncio
import sys
import time
from pathlib import Path

import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent / "peers"))

import bare_uvloop  # noqa: E402
import minimal_http  # noqa: E402
from svc.rules.contract import Param, ParamSource, ResultKind, Route  # noqa: E402
from svc.runtime.http import builtin_routes  # noqa: E402
from svc.runtime.http.routing import Router  # noqa: E402
from svc.runtime.http.connection import App, Connection  # noqa: E402
from svc.runtime.observability.serverlog import ServerLog  # noqa: E402
from svc.runtime.lib.support import T_I32, T_I64, Struct  # noqa: E402

REQUEST = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"
#: name → request bytes, for the handler routes of `handler_routes`
HANDLER_REQUESTS = {
    "plain JSON route GET /items/{id}": b"GET /items/7 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
                                        b"User-Agent: bench\r\nAccept: */*\r\n\r\n",
    "POST /echo 5 B name": b"POST /echo HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
                           b"Content-Type: application/json\r\nContent-Length: 32\r\n\r\n"
                           b'{"id":1,"name":"alice","age":30}',
    "POST /echo 4 KiB name": b"POST /echo HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
                             b"Content-Type: application/json\r\nContent-Length: 4123\r\n\r\n"
                             + b'{"id":1,"name":"' + b"a" * 4096 + b'","age":30}',
    "GET /query?limit=5&name=x": b"GET /query?limit=5&name=x HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n",
    "Headers route GET /whoami": b"GET /whoami HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
                                 b"User-Agent: bench\r\nAccept: */*\r\nX-User: ada\r\n\r\n",
    "Response route GET /created": b"GET /created HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
                                   b"User-Agent: bench\r\nAccept: */*\r\n\r\n",
}


def handler_routes() -> list[Route]:
    """The handler routes this runtime has: what generated code would describe."""
    def item(id):
        return {"id": id, "name": "pen"}

    def echo(user):
        return user

    def query(limit, name):
        return {"id": limit, "name": name, "age": 30}

    routes = [Route("GET", "/items/{id}", item, (Param("id", ParamSource.PATH, "i64"),)),
              Route("POST", "/echo", echo, (Param("user", ParamSource.BODY, User),)),
              Route("GET", "/query", query, (Param("limit", ParamSource.QUERY, "i64"),
                                             Param("name", ParamSource.QUERY, "str")))]
    if hasattr(ParamSource, "HEADERS"):  # the runtime has Headers and Response routes
        from svc.runtime.http import custom_response, headers

        def whoami(h):
            return headers.header(h, "x-user")

        def created():
            r = custom_response.respond(201, {"id": 8})
            custom_response.set_header(r, "Location", "/items/8")
            custom_response.add_header(r, "Set-Cookie", "seen=1")
            return r

        routes.append(Route("GET", "/whoami", whoami, (Param("h", ParamSource.HEADERS, "Headers"),)))
        routes.append(Route("GET", "/created", created, (), ResultKind.RESPONSE_JSON))
    return routes


class User(Struct, forbid_unknown_fields=True):
    """The workload's body class, as generated code declares it."""

    id: T_I64
    name: str
    age: T_I32


class NullTransport:
    """Accepts writes and drops them; says it is open."""

    def write(self, data: bytes) -> None:
        pass

    def is_closing(self) -> bool:
        return False


def per_request_us(protocol, count: int, request: bytes = REQUEST) -> float:
    feed = protocol.data_received
    started = time.perf_counter()
    for _ in range(count):
        feed(request)
    return (time.perf_counter() - started) / count * 1e6


async def measure(count: int) -> tuple[float, float, float]:
    app = App(asyncio.get_running_loop(), Router(tuple(builtin_routes.ROUTES)), None, 10, ServerLog(quiet=True))
    svc = Connection(app)
    svc.transport = NullTransport()
    bare = bare_uvloop.FixedProtocol()
    bare.connection_made(NullTransport())
    minimal_http.DateLine.refresh()
    minimal = minimal_http.MinimalProtocol()
    minimal.connection_made(NullTransport())
    return (min(per_request_us(svc, count) for _ in range(5)),
            min(per_request_us(bare, count) for _ in range(5)),
            min(per_request_us(minimal, count) for _ in range(5)))


async def measure_handlers(count: int) -> dict[str, float]:
    """svc alone on the handler routes: name → best µs per request."""
    app = App(asyncio.get_running_loop(), Router(handler_routes()), None, 10, ServerLog(quiet=True))
    svc = Connection(app)
    svc.transport = NullTransport()
    times = {}
    for name, request in HANDLER_REQUESTS.items():
        method, target = request.split(b" ")[:2]
        if app.router.resolve(method.decode(), target.split(b"?")[0].decode()).__class__ is tuple:
            times[name] = min(per_request_us(svc, count, request) for _ in range(5))
    return times


def main() -> str:
    svc_us, bare_us, minimal_us = uvloop.run(measure(50_000))
    lines = [f"Python per GET /health, no sockets (best of 5 × 50,000): svc {svc_us:.2f} µs, "
             f"bare uvloop {bare_us:.2f} µs, bare + the HTTP reference's minimum {minimal_us:.2f} µs."]
    for name, us in uvloop.run(measure_handlers(50_000)).items():
        lines.append(f"svc per {name}, no sockets (best of 5 × 50,000): {us:.2f} µs.")
    return "\n".join(lines)


if __name__ == "__main__":
    print(main())
