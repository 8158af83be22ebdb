"""watchdog.watch_loop: a handler that never awaits is interrupted at the processing limit."""

from __future__ import annotations

import asyncio
import re
import time

from svc.rules.contract import PROCESSING_LIMIT
from svc.process import Watchdog
from svc.runtime.http.watchdog import SvcTimeout, watch_loop

# Catastrophic backtracking: one C call that holds the GIL, like a svc handler concatenating
# huge strings (one long copy per statement). Its time doubles with each extra "a".
_SLOW_PATTERN = re.compile(r"(a+)+$")


def _input_slower_than(seconds: float) -> str:
    """The shortest input whose one match call takes at least `seconds` on this machine."""
    for n in range(18, 30):
        text = "a" * n + "b"
        started = time.monotonic()
        _SLOW_PATTERN.match(text)
        if time.monotonic() - started >= seconds:
            return text
    raise AssertionError("no input slow enough")


def _computes_without_awaiting(text: str, give_up: float) -> float | None:
    """Long GIL-holding calls in a row, as a handler would; seconds until interrupted."""
    started = time.monotonic()
    try:
        while time.monotonic() - started < give_up:
            _SLOW_PATTERN.match(text)
    except SvcTimeout:
        return time.monotonic() - started
    return None


async def _run_with_watchdog(text: str, give_up: float) -> float | None:
    watchdog = watch_loop(asyncio.get_running_loop())
    try:
        await asyncio.sleep(0.3)  # a few heartbeats first, as in a running server
        return _computes_without_awaiting(text, give_up)
    finally:
        watchdog.stop()


def test_long_c_calls_that_hold_the_gil_are_still_interrupted():
    """Each call delays the watchdog's own wake-up; that must not read as a stalled process."""
    # each call outlasts the watchdog's "the process was stalled" gap (5 polls, 0.5 s)
    text = _input_slower_than(6 * Watchdog.POLL_SECONDS)
    elapsed = asyncio.run(_run_with_watchdog(text, give_up=8.0))
    assert elapsed is not None, "the watchdog never interrupted the computation"
    assert PROCESSING_LIMIT - 0.5 <= elapsed <= PROCESSING_LIMIT + 3.0
