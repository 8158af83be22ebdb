"""Run a handler coroutine's first step at once, and make a Task only if it suspends.

Most handlers finish without ever waiting (a computed JSON value, a cached lookup). Creating
an asyncio Task for each costs a scheduling round trip through the event loop; running the
first step inline with `coro.send(None)` answers them in the same callback that read the
request. Only a coroutine that actually suspends is handed to a Task, which resumes it from
where it stopped (see `_Resumed`).

During the inline step a stand-in is registered as the loop's current task, so code that
asks for one (`asyncio.TaskGroup`, `asyncio.timeout`) works; what it does to the stand-in
(cancel, uncancel) is forwarded to the real Task once there is one. This is what Python
3.12's eager task factory does natively; 3.11 has no such factory.
"""

from __future__ import annotations

import asyncio
import collections.abc
import dis
import inspect
from typing import Any, Callable, Coroutine

try:
    from asyncio.tasks import _enter_task, _leave_task
except ImportError:  # pragma: no cover - a Python without them: no stand-in
    _enter_task = _leave_task = None


class _StandIn:
    """Plays the current Task for the inline first step; forwards to the real Task later."""

    __slots__ = ("task", "cancel_requests", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.task: asyncio.Task | None = None
        self.cancel_requests = 0
        self.loop = loop

    def get_loop(self) -> asyncio.AbstractEventLoop:
        return self.loop

    def cancel(self, msg: Any = None) -> bool:
        if self.task is not None:
            return self.task.cancel(msg)
        self.cancel_requests += 1
        return True

    def cancelling(self) -> int:
        return self.task.cancelling() if self.task is not None else self.cancel_requests

    def uncancel(self) -> int:
        if self.task is not None:
            return self.task.uncancel()
        self.cancel_requests = max(0, self.cancel_requests - 1)
        return self.cancel_requests

    def done(self) -> bool:
        return False

    def cancelled(self) -> bool:
        return False


class _Resumed(collections.abc.Coroutine):
    """A coroutine that already ran its first step outside any Task, handed to a Task.

    `coro.send(None)` returned `yielded` (the future it waits on, or None for a bare
    yield). The Task's first step gets that same value back without touching the coroutine;
    every later step (a result sent in, or an exception such as cancellation thrown in) goes
    straight to it. A Task steps a non-native coroutine through `__next__` when it sends
    None, which is every step of an `await`ing handler, so that is the one Python call a step
    costs (measured: a wrapping `async def` awaiting a generator cost two frames per step).
    """

    __slots__ = ("coro", "yielded", "fresh")

    def __init__(self, coro, yielded) -> None:
        self.coro = coro
        self.yielded = yielded
        self.fresh = True

    def __next__(self):
        if self.fresh:
            self.fresh = False
            return self.yielded
        return self.coro.send(None)

    def send(self, value):
        if self.fresh:
            self.fresh = False
            return self.yielded
        return self.coro.send(value)

    def throw(self, *exc):
        self.fresh = False
        return self.coro.throw(*exc)

    def close(self) -> None:
        self.coro.close()

    def __await__(self):
        return self

    def __iter__(self):
        return self


_spare: _StandIn | None = None


def start(loop: asyncio.AbstractEventLoop, coro: Coroutine) -> tuple[bool, Any]:
    """Run the first step: (True, result) if it finished, else (False, the Task now driving it).

    Exceptions raised by the first step propagate to the caller. A stand-in whose
    coroutine finished at once is kept for the next call; one that was handed a Task
    stays bound to it.
    """
    global _spare
    stand_in = _spare
    if stand_in is None or stand_in.loop is not loop:
        stand_in = _StandIn(loop)
    _spare = None
    entered = False
    if _enter_task is not None:
        try:
            _enter_task(loop, stand_in)
            entered = True
        except RuntimeError:  # already inside a Task (only when driven from one, as in tests)
            pass
    try:
        yielded = coro.send(None)
    except StopIteration as stop:
        if not stand_in.cancel_requests:
            _spare = stand_in
        return True, stop.value
    finally:
        if entered:
            _leave_task(loop, stand_in)
    task = loop.create_task(_Resumed(coro, yielded))
    stand_in.task = task
    if stand_in.cancel_requests:
        task.cancel()
    return False, task


def never_suspends(function: Callable[..., Any]) -> bool:
    """True for an `async def` whose body has no `await` (no YIELD_VALUE in its bytecode).

    Such a coroutine always finishes in its first step and cannot reach anything that asks
    for the current task or the request deadline (those are behind awaits), so the server
    runs it with `run_to_end`, without the stand-in and the context variable of `start`
    (measured: ~1 µs of the ~20 µs of CPU a small JSON request costs).
    """
    code = getattr(function, "__code__", None)
    if code is None or not inspect.iscoroutinefunction(function):
        return False
    return not any(op.opname == "YIELD_VALUE" for op in dis.get_instructions(code))


def run_to_end(coro: Coroutine) -> Any:
    """The result of a coroutine that `never_suspends`; exceptions propagate."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError("a coroutine without await suspended")
