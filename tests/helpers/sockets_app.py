"""A small svc-like program with WebSocket routes, for the WebSocket handler tests: the
`Route`s and `async def` handlers generated code would register for `WebSocket[In, Out]`
parameters, the handlers calling svc.runtime.http.sockets as generated code does (through
svc.runtime.lib.live). `GET /seen` answers what the handlers recorded (how they ended, what
a reader that never reads let pile up, what a writer to a client that never reads managed),
so a test asks the server itself.

Run as `python sockets_app.py [port]`; it prints `listening on ...` and serves until
SIGINT/SIGTERM. `SOCKETS_APP_HEARTBEAT=S` sets the heartbeat interval (seconds) first.
"""

from __future__ import annotations

import asyncio
import json
import os
import time

from svc.rules.contract import Param, Route
from svc.rules.contract import ParamSource as S
from svc.rules.contract import ResultKind as R
from svc.runtime.http import events
from svc.runtime.http import sockets as ws
from svc.runtime.lib.support import SvcError
from tests.helpers.app_main import run_app

SEEN: list[dict] = []


def record(tag: str, **what) -> None:
    SEEN.append({"tag": tag, "at": time.time(), **what})


async def chat(sock, tag):
    """The chat-like echo: each message back, a text as "echo: <text>", a binary as it came;
    records how it ended."""
    count = 0
    while (message := await ws.receive(sock)) is not None:
        count += 1
        if isinstance(message, str):
            await ws.send(sock, "echo: " + message)
        else:
            await ws.send(sock, message)
    record(tag or "chat", ended=True, count=count)
    return None


def decode_number(data):
    """The typed-ish `In`: a JSON object with an integer `n` (as generated code's decoder
    refuses anything else, with a ValueError)."""
    if isinstance(data, bytes):
        raise ValueError("a binary message where a JSON text message was expected")
    value = json.loads(data)  # json.JSONDecodeError is a ValueError
    if not isinstance(value, dict) or not isinstance(value.get("n"), int):
        raise ValueError("expected an object with an integer n: " + data)
    return value["n"]


async def typed(sock):
    """Typed messages in and out: {"n": n} answered {"n": n + 1}, until None."""
    while (n := await ws.receive(sock, decode_number)) is not None:
        await ws.send_json(sock, json.dumps({"n": n + 1}).encode())
    record("typed", ended=True)
    return None


async def guarded(sock, user):
    """A guarded route as generated code runs one: its guard first, whose Err is the answer."""
    if user != "ada":
        return SvcError("forbidden", "not for you")
    await ws.send(sock, "welcome " + user)
    return None


async def closes(sock, code, reason):
    """Greets, then closes with the code and reason it is given, and returns at once."""
    await ws.send(sock, "bye")
    ws.close(sock, code, reason)
    record("closes", receive=await ws.receive(sock), send=await ws.send(sock, "late"))
    return None


async def nothing(sock):
    """Returns without ever using its socket."""
    return None


async def fault(sock):
    """Greets, reads one message, then fails: a secret in its exception is for the log only."""
    await ws.send(sock, "hello")
    await ws.receive(sock)
    raise RuntimeError("the secret detail of a fault")


async def fails_after(sock):
    """Greets, then returns an error value."""
    await ws.send(sock, "hello")
    await asyncio.sleep(0.01)
    return SvcError("conflict", "changed meanwhile")


async def stuck(sock):
    """Greets, then waits on something else than its socket, forever: cancelled a second
    after its client left."""
    await ws.send(sock, "hello")
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        record("stuck", cancelled=True)
        raise
    return None


async def never_reads(sock, ms):
    """Greets, then reads nothing for `ms`, recording the most its socket held queued, then
    reads it all and counts."""
    await ws.send(sock, "ready")
    peak = 0
    end = time.monotonic() + ms / 1000
    while time.monotonic() < end and not sock.closed:
        peak = max(peak, sock.queued)
        await asyncio.sleep(0.01)
    total = 0
    while (message := await ws.receive(sock)) is not None:
        total += len(message)
        peak = max(peak, sock.queued)
        if message == b"last":
            break
    record("never-reads", peak=peak, total=total)
    return None


async def writer(sock, ms):
    """Sends 64 KiB messages to a client that does not read, for `ms`: records how many went
    out, the largest write buffer seen, and whether a send ever waited."""
    data = b"w" * 65536
    sent = biggest = 0
    waited = False
    end = time.monotonic() + ms / 1000
    while time.monotonic() < end:
        before = time.monotonic()
        try:
            ok = await asyncio.wait_for(ws.send(sock, data), max(0.01, end - time.monotonic()))
        except asyncio.TimeoutError:
            waited = True
            break
        if not ok:
            break
        waited = waited or time.monotonic() - before > 0.05
        sent += 1
        biggest = max(biggest, sock.conn.transport.get_write_buffer_size())
    record("writer", sent=sent, biggest=biggest, waited=waited)
    ws.close(sock, 1000, "done")
    return None


async def slow_end(sock):
    """At None (the server stopping, say) takes 0.3 s to clean up before it returns."""
    await ws.send(sock, "hello")
    while await ws.receive(sock) is not None:
        pass
    await asyncio.sleep(0.3)
    return None


async def idle(sock):
    """Greets and then only reads: idle, but for the server's Pings."""
    await ws.send(sock, "hello")
    while await ws.receive(sock) is not None:
        pass
    return None


class FakeSubscription:
    """What ws.forward reads: `next()` answers JSON bytes, None once closed."""

    def __init__(self, messages: list[bytes]) -> None:
        self.queue: asyncio.Queue = asyncio.Queue()
        for message in messages:
            self.queue.put_nowait(message)

    async def next(self):
        return await self.queue.get()


async def forwards(sock, n):
    """Forwards n messages of a subscription while reading: each text read is answered."""
    ws.forward(sock, FakeSubscription([b'{"i":%d}' % i for i in range(n)]))
    while (message := await ws.receive(sock)) is not None:
        await ws.send(sock, "read: " + message)
    return None


async def seen():
    return SEEN


async def ping():
    return {"pong": True}


def routes() -> list[Route]:
    sock = Param("ws", S.SOCKET, "WebSocket")
    return [
        Route("GET", "/chat", chat, (sock, Param("tag", S.QUERY, "str", optional=True)), R.UNIT),
        Route("GET", "/typed", typed, (sock,), R.UNIT),
        Route("GET", "/guarded", guarded, (sock, Param("user", S.QUERY, "str")), R.UNIT),
        Route("GET", "/closes", closes, (sock, Param("code", S.QUERY, "i64"),
                                         Param("reason", S.QUERY, "str")), R.UNIT),
        Route("GET", "/nothing", nothing, (sock,), R.UNIT),
        Route("GET", "/fault", fault, (sock,), R.UNIT),
        Route("GET", "/fails-after", fails_after, (sock,), R.UNIT),
        Route("GET", "/stuck", stuck, (sock,), R.UNIT),
        Route("GET", "/never-reads", never_reads, (sock, Param("ms", S.QUERY, "i64")), R.UNIT),
        Route("GET", "/writer", writer, (sock, Param("ms", S.QUERY, "i64")), R.UNIT),
        Route("GET", "/slow-end", slow_end, (sock,), R.UNIT),
        Route("GET", "/idle", idle, (sock,), R.UNIT),
        Route("GET", "/forwards", forwards, (sock, Param("n", S.QUERY, "i64")), R.UNIT),
        Route("GET", "/seen", seen, (), R.JSON),
        Route("GET", "/ping", ping, (), R.JSON),
    ]


if __name__ == "__main__":
    if os.environ.get("SOCKETS_APP_HEARTBEAT"):
        events.HEARTBEAT_SECONDS = float(os.environ["SOCKETS_APP_HEARTBEAT"])
    run_app(routes())
