"""The watchdog: interrupts a handler that computes without ever awaiting.

The server cancels a slow handler at its next `await`, but code that never awaits (`while
True: pass`, a runaway loop) keeps the event loop, and so the whole server, to itself. The
server starts one `Watchdog` for as long as it serves.
"""

from __future__ import annotations

import asyncio
import ctypes
import threading
import time

from svc.contract import PROCESSING_LIMIT
from svc.runtime.support import SvcFault


class SvcTimeout(SvcFault):
    """Raised inside code that kept the event loop busy past the processing limit."""

    def __init__(self, message: str = "request timed out: the handler computed for more than "
                                      "2 seconds without yielding") -> None:
        super().__init__(message)


class Watchdog:
    """A heartbeat timer on the loop records that the loop still turns; a daemon thread that
    sees no beat for `STALL_SECONDS` raises `SvcTimeout` in the loop's thread
    (PyThreadState_SetAsyncExc), where it surfaces in the running svc code like any other
    run-time fault. The cost is one timer tick per 0.1 s.
    """

    STALL_SECONDS = PROCESSING_LIMIT
    BEAT_SECONDS = 0.1

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._clock = time.monotonic
        self._cpu_clock = time.process_time  # the whole process's CPU time, every thread
        self._beat = self._clock()
        self._stopped = threading.Event()
        self._target = threading.get_ident()
        self._timer = loop.call_later(self.BEAT_SECONDS, self._tick)
        threading.Thread(target=self._watch, name="svc-watchdog", daemon=True).start()

    def _tick(self) -> None:
        self._beat = self._clock()
        if not self._stopped.is_set():
            self._timer = self._loop.call_later(self.BEAT_SECONDS, self._tick)

    def _watch(self) -> None:
        woke, used = self._clock(), self._cpu_clock()
        while not self._stopped.wait(self.BEAT_SECONDS):
            now, cpu = self._clock(), self._cpu_clock()
            slept, woke = now - woke, now
            spent, used = cpu - used, cpu
            # A late wake-up with little CPU spent means the whole process was stalled (SIGSTOP,
            # swap): not the loop's fault, start counting again. A late wake-up with the CPU
            # busy means the loop's thread held the GIL in one long C call (a huge string
            # copy): that is the handler's time and counts.
            if slept > 5 * self.BEAT_SECONDS and spent < slept / 2:
                self._beat = now
            elif now - self._beat > self.STALL_SECONDS:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(
                    ctypes.c_ulong(self._target), ctypes.py_object(SvcTimeout))
                self._beat = self._clock()  # once per stall

    def stop(self) -> None:
        self._stopped.set()
        self._timer.cancel()
