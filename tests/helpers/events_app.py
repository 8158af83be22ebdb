"""A small svc-like program with event stream routes, for the server-sent events tests: the
`Route`s and `async def` handlers generated code would register for `Events[T]` parameters,
the handlers calling svc.runtime.http.events as generated code does. `GET /seen` answers
what the handlers recorded (a cancel, what a flood sent and dropped), so a test asks the
server itself.

Run as `python events_app.py [port]`; it prints `listening on ...` and serves until
SIGINT/SIGTERM. `EVENTS_APP_HEARTBEAT=S` sets the heartbeat interval (seconds) first.
"""

from __future__ import annotations

import asyncio
import os
import time

from svc.rules.contract import Param, Route
from svc.rules.contract import ParamSource as S
from svc.rules.contract import ResultKind as R
from svc.runtime.http import events as ev
from svc.runtime.lib.support import SvcError
from tests.helpers.app_main import run_app

SEEN: list[dict] = []


async def numbered(stream, n):
    """n events, the second with an event name, the third with multi-line JSON text."""
    for i in range(n):
        data = b'{\n  "i": %d\n}' % i if i == 2 else b'{"i":%d}' % i
        ev.send_event(stream, data, "tick" if i == 1 else None, str(i))
        await asyncio.sleep(0)
    return None


async def nothing(stream):
    await asyncio.sleep(0.01)
    return None


async def refuse(stream):
    await asyncio.sleep(0.01)
    return SvcError("forbidden", "not yours")


async def resume(stream):
    last = ev.last_event_id(stream)
    ev.send_event(stream, b'"none"' if last is None else b'"%s"' % last.encode())
    return None


async def idle(stream, ms):
    ev.send_event(stream, b'"hello"')
    await asyncio.sleep(ms / 1000)
    return None


async def forever(stream, tag, ms):
    if ms:  # its stream starts `ms` later
        await asyncio.sleep(ms / 1000)
    ev.send_event(stream, b'"started"')
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        SEEN.append({"tag": tag, "cancelled": time.time()})
        raise
    return None


async def flood(stream, ms):
    """Events of 1 KiB as fast as the loop allows for `ms`, then ends; records the counts."""
    data = b'"' + b"x" * 1022 + b'"'
    sent = dropped = 0
    end = time.monotonic() + ms / 1000
    while time.monotonic() < end:
        for _ in range(50):
            if ev.send_event(stream, data):
                sent += 1
            else:
                dropped += 1
        await asyncio.sleep(0)
    SEEN.append({"tag": "flood", "sent": sent, "dropped": dropped})
    return None


async def steady(stream, ms):
    """An event every 200 ms for `ms`: a stream longer than the processing limit."""
    end = time.monotonic() + ms / 1000
    i = 0
    while time.monotonic() < end:
        ev.send_event(stream, b"%d" % i)
        i += 1
        await asyncio.sleep(0.2)
    return None


async def late(stream, ms):
    await asyncio.sleep(ms / 1000)
    ev.send_event(stream, b'"too late"')
    return None


async def bad_id(stream, after):
    if after:
        ev.send_event(stream, b'"first"')
    sent = ev.send_event(stream, b'"x"', None, "a\nb")
    ev.send_event(stream, b'"%s"' % (b"sent" if sent else b"dropped"))
    return None


async def fails_after(stream):
    ev.send_event(stream, b'"one"')
    await asyncio.sleep(0.01)
    return SvcError("conflict", "changed meanwhile")


async def seen():
    return SEEN


async def ping():
    return {"pong": True}


def routes() -> list[Route]:
    events = Param("stream", S.EVENTS, "Events")
    return [
        Route("GET", "/events", numbered, (events, Param("n", S.QUERY, "i64")), R.UNIT),
        Route("GET", "/nothing", nothing, (events,), R.UNIT),
        Route("GET", "/refuse", refuse, (events,), R.UNIT),
        Route("GET", "/resume", resume, (events,), R.UNIT),
        Route("GET", "/idle", idle, (events, Param("ms", S.QUERY, "i64")), R.UNIT),
        Route("GET", "/forever", forever, (events, Param("tag", S.QUERY, "str"),
                                           Param("ms", S.QUERY, "i64", optional=True)), R.UNIT),
        Route("GET", "/flood", flood, (events, Param("ms", S.QUERY, "i64")), R.UNIT),
        Route("GET", "/steady", steady, (events, Param("ms", S.QUERY, "i64")), R.UNIT),
        Route("GET", "/late", late, (events, Param("ms", S.QUERY, "i64")), R.UNIT),
        Route("GET", "/bad-id", bad_id, (events, Param("after", S.QUERY, "bool")), R.UNIT),
        Route("GET", "/fails-after", fails_after, (events,), R.UNIT),
        Route("GET", "/seen", seen, (), R.JSON),
        Route("GET", "/ping", ping, (), R.JSON),
    ]


if __name__ == "__main__":
    if os.environ.get("EVENTS_APP_HEARTBEAT"):
        ev.HEARTBEAT_SECONDS = float(os.environ["EVENTS_APP_HEARTBEAT"])
    run_app(routes())
