"""Giving up on a PostgreSQL statement just before its request's processing limit.

A server that stops answering (frozen, unreachable without a reset) must not hold a request
past its limit: docs/reference/http.md asks for a 503 from the database layer first. The
statement runs on the handler's own task (its eager.Resumer, or `main`'s Task); when its time
comes it is cancelled as `asyncio.timeout` would, and the cancellation it caused becomes
`busy`.

One sweep per event loop watches every statement in flight (a dict of tasks), instead of a
timer per statement: a uvloop timer is made, armed and closed for each one otherwise, which
cost more than the rest of the deadline handling (bench/PERF.md). The sweep runs every
`SWEEP_SECONDS` while statements are in flight, so a statement gives up between
`MARGIN_SECONDS` and `MARGIN_SECONDS - SWEEP_SECONDS` before the limit, always before the
server's own 504.
"""

from __future__ import annotations

# Private, so typeshed leaves it out; the public `current_task()` would first look up the
# running loop (a getpid system call on Python 3.11), see `watch`.
from asyncio.tasks import _current_tasks  # type: ignore[attr-defined]

from svc.runtime.http.context import request_deadline_var

#: Seconds between two looks at the statements in flight.
SWEEP_SECONDS = 0.05
#: A statement gives up this long (at most) before its request's processing limit.
MARGIN_SECONDS = 0.15


class _Sweep:
    """The statements in flight on one event loop and the timer that looks at them."""

    __slots__ = ("loop", "times", "expired", "timer")

    def __init__(self, loop) -> None:
        self.loop = loop
        self.times: dict = {}  # task -> (give-up loop time, its cancel count before)
        self.expired: dict = {}  # task -> its cancel count before, once cancelled here
        self.timer = None

    def look(self) -> None:
        self.timer = None
        now = self.loop.time()
        due = [(task, entry) for task, entry in self.times.items() if entry[0] <= now]
        for task, entry in due:
            del self.times[task]
            self.expired[task] = entry[1]
            task.cancel()
        if self.times:
            self.timer = self.loop.call_later(SWEEP_SECONDS, self.look)


_sweep: _Sweep | None = None


def watch(loop):
    """Watch the current task's statement on `loop` (its pool's: Python 3.11's
    get_running_loop costs a getpid system call) if a request deadline applies: the task,
    or None."""
    global _sweep
    deadline = request_deadline_var.get()
    if deadline is None:
        return None
    task = _current_tasks.get(loop)
    if task is None:  # pragma: no cover - a request's code always runs in its task
        return None
    sweep = _sweep
    if sweep is None or sweep.loop is not loop:
        sweep = _sweep = _Sweep(loop)
    sweep.times[task] = (deadline - MARGIN_SECONDS, task.cancelling())
    if sweep.timer is None:
        sweep.timer = loop.call_later(SWEEP_SECONDS, sweep.look)
    return task


def gave_up(task) -> bool:
    """After a CancelledError in a watched statement: True if the sweep caused it (and no one
    else cancelled the task meanwhile), which the caller answers with `busy`."""
    sweep = _sweep  # set by the `watch` that returned the task
    if sweep is None:
        return False
    before = sweep.expired.pop(task, None)
    return before is not None and task.uncancel() <= before


def unwatch(task) -> None:
    """The statement ended (any way)."""
    sweep = _sweep  # set by the `watch` that returned the task
    if sweep is None:
        return
    sweep.times.pop(task, None)
    if sweep.expired:
        sweep.expired.pop(task, None)
