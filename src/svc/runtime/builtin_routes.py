"""The reserved routes every svc server answers: GET /health, /stream and /ws.

`/health` is an ordinary (synchronous) route. `/stream` and `/ws` need the connection itself
(a chunked body written piece by piece; an upgraded socket), so their routes carry the
result kinds STREAM and WEBSOCKET that the connection recognises.
"""

from __future__ import annotations

import asyncio
from typing import Callable

from svc.contract import ResultKind, Route

STREAM_CHUNKS = tuple(f"chunk:{i}\n".encode() for i in range(5))
STREAM_HEAD_EXTRA = b"Transfer-Encoding: chunked\r\n"
#: The last chunk, written by the connection once the handler is done (it frames the body).
STREAM_END = b"0\r\n\r\n"


def health() -> bytes:
    return b"ok"


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


ROUTES = (
    Route("GET", "/health", health, (), ResultKind.TEXT),
    Route("GET", "/stream", stream, (), ResultKind.STREAM),
    Route("GET", "/ws", _websocket_marker, (), ResultKind.WEBSOCKET),
)
