"""Python time per GET /health through svc's connection code vs the bare protocol, no sockets.

Feeds the same request bytes straight into `Connection.data_received` (and into the bare
uvloop peer's protocol) with a transport whose `write` does nothing, so what is timed is only
the Python path: parsing callbacks, the Request, routing, the answer, the response bytes. The
third protocol, `peers/minimal_http.py`, is the bare one plus only what docs/reference/http.md asks of every
server (no routing): how far below svc any conforming Python server could go. The
kernel half of a request (one recv, one send) is the same for both and is left out. This is
a measuring tool, not a test: it tells how far svc's per-request Python is from the ceiling,
without the noise of a shared machine's scheduler.
"""

import asyncio
import sys
import time
from pathlib import Path

import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent / "peers"))

import bare_uvloop  # noqa: E402
import minimal_http  # noqa: E402
from svc.runtime import builtin_routes  # noqa: E402
from svc.runtime.routing import Router  # noqa: E402
from svc.runtime.connection import App, Connection  # noqa: E402
from svc.runtime.serverlog import ServerLog  # noqa: E402

REQUEST = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"


class NullTransport:
    """Accepts writes and drops them; says it is open."""

    def write(self, data: bytes) -> None:
        pass

    def is_closing(self) -> bool:
        return False


def per_request_us(protocol, count: int) -> float:
    feed = protocol.data_received
    started = time.perf_counter()
    for _ in range(count):
        feed(REQUEST)
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


def main() -> str:
    svc_us, bare_us, minimal_us = uvloop.run(measure(50_000))
    return (f"Python per GET /health, no sockets (best of 5 × 50,000): svc {svc_us:.2f} µs, "
            f"bare uvloop {bare_us:.2f} µs, bare + the HTTP reference's minimum {minimal_us:.2f} µs.")


if __name__ == "__main__":
    print(main())
