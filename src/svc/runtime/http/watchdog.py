"""The server's watchdog: interrupts a handler that computes without ever awaiting.

The server cancels a slow handler at its next `await`, but code that never awaits (`while
True: pass`, a runaway loop) keeps the event loop, and so the whole server, to itself. The
server keeps one watchdog (`svc.process.Watchdog`) on its loop for as long as it serves: a timer
on the loop feeds it every 0.1 s, and when the loop has not turned for the processing limit it
raises `SvcTimeout` in the loop's thread, where it surfaces in the running svc code like any
other run-time fault (answered 504).
"""

from __future__ import annotations

import asyncio

from svc.rules.contract import PROCESSING_LIMIT
from svc.process import Watchdog
from svc.runtime.lib.support import SvcFault


class SvcTimeout(SvcFault):
    """Raised inside code that kept the event loop busy past the processing limit."""

    def __init__(self, message: str = "request timed out: the handler computed for more than "
                                      "2 seconds without yielding") -> None:
        super().__init__(message)


def watch_loop(loop: asyncio.AbstractEventLoop) -> Watchdog:
    """Start watching `loop` from the thread running it; `stop()` the result when serving ends."""
    watchdog = Watchdog(SvcTimeout, PROCESSING_LIMIT, name="svc-watchdog")
    watchdog.feed_from(loop)
    return watchdog
