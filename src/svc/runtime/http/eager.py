"""Run a handler coroutine's first step at once; if it suspends, resume it without a Task.

Most handlers finish without ever waiting (a computed JSON value, a cached lookup). Creating
an asyncio Task for each costs a scheduling round trip through the event loop; running the
first step inline with `coro.send(None)` answers them in the same callback that read the
request. A handler that does suspend (a database query) is driven on by its `Resumer`: the
awaited future's done callback sends the next step in, as a Task's would, but without the
Task's creation, its registration in asyncio's set of all tasks, the loop pass of its first
step and the loop pass of its done callbacks (measured in bench/PERF.md).

The `Resumer` is the current task (`asyncio.current_task()`) during every step, the inline
one included, and does what asyncio's own code asks of a current task: `cancel` (delivered
at the awaited future, or at the next step, exactly as `Task.cancel`), `cancelling`,
`uncancel` (`asyncio.TaskGroup`, `asyncio.timeout`), `add_done_callback` (a transaction
rolled back when its owner ends), `done`, `result`. Each step runs in the request's own
context (a copy taken when it first suspends, with the request deadline in it), as a Task's
steps run in the context copied at its creation. This is what Python 3.12's eager task
factory does natively, minus the Task; 3.11 has no such factory.
"""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any, Callable, Coroutine

from asyncio import tasks as _tasks

# asyncio's own bookkeeping of the current task (C functions). Typed by hand: typeshed says
# they take a Task, and any object that plays one is accepted (a Resumer is one).
_enter_task: Callable[[asyncio.AbstractEventLoop, Any], None] = getattr(_tasks, "_enter_task")
_leave_task: Callable[[asyncio.AbstractEventLoop, Any], None] = getattr(_tasks, "_leave_task")

_PENDING, _FINISHED, _FAILED, _CANCELLED = 0, 1, 2, 3
_CancelledError = asyncio.CancelledError
_Future = asyncio.Future
_InvalidStateError = asyncio.InvalidStateError
_copy_context = contextvars.copy_context


class Running:
    """What the code running now is for: `request`, the request whose handler step runs, or
    None between steps and outside requests. The connection sets it around a handler's first
    step (and around a plain handler's call), each Resumer around its later steps: two
    attribute stores a step, where a context variable would cost a context copy per request.
    The `log_*` builtins read it for the request id (svc.runtime.observability.serverlog)."""

    __slots__ = ("request",)

    def __init__(self) -> None:
        self.request: Any = None


running = Running()


class Resumer:
    """Plays the current Task of one handler coroutine and steps it on as its futures finish.

    Created for the inline first step. If that step suspends, `start` hands the coroutine
    to it (`_suspend`); from then on each wake-up (the awaited future done, or the next loop
    pass after a bare `yield`) runs one step in the request's context. When the coroutine
    ends, the one `on_done` callback (the connection) is called at once, in the context it
    was given in, and `add_done_callback` callbacks are scheduled as a Future's are.
    """

    __slots__ = ("loop", "coro", "context", "waiter", "state", "value", "must_cancel",
                 "cancel_message", "cancel_requests", "callbacks", "notify", "notify_context",
                 "throw_next", "request", "running")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.coro: Any = None
        self.context: contextvars.Context | None = None
        self.waiter: Any = None  # the future the coroutine awaits
        self.state = _PENDING
        self.value: Any = None  # the result, or the exception that ended the coroutine
        self.must_cancel = False  # cancel() found no future to cancel: throw at the next step
        self.cancel_message: Any = None
        self.cancel_requests = 0
        self.callbacks: list[tuple[Callable[[Any], Any], contextvars.Context]] | None = None
        self.notify: Callable[[Resumer], None] | None = None
        self.notify_context: contextvars.Context | None = None
        self.throw_next: BaseException | None = None  # what the next step throws in
        self.request: Any = None  # the request it runs for: `running.request` in its steps
        self.running = running  # the module's holder, without a module lookup per step

    # --- what asyncio asks of a current task ---------------------------------------------------

    def get_loop(self) -> asyncio.AbstractEventLoop:
        return self.loop

    def get_coro(self) -> Any:
        return self.coro

    def cancel(self, msg: Any = None) -> bool:
        """As `Task.cancel`: cancel the awaited future, or throw CancelledError at the next step."""
        if self.state != _PENDING:
            return False
        self.cancel_requests += 1
        waiter = self.waiter
        if waiter is not None and waiter.cancel(msg=msg):
            return True
        self.must_cancel = True
        self.cancel_message = msg
        return True

    def cancelling(self) -> int:
        return self.cancel_requests

    def uncancel(self) -> int:
        if self.cancel_requests > 0:
            self.cancel_requests -= 1
        return self.cancel_requests

    def done(self) -> bool:
        return self.state != _PENDING

    def cancelled(self) -> bool:
        return self.state == _CANCELLED

    def result(self) -> Any:
        if self.state == _FINISHED:
            return self.value
        if self.state == _PENDING:
            raise _InvalidStateError("the handler has not finished")
        raise self.value if self.state == _FAILED else _CancelledError()

    def exception(self) -> BaseException | None:
        if self.state == _PENDING:
            raise _InvalidStateError("the handler has not finished")
        if self.state == _CANCELLED:
            raise _CancelledError()
        return self.value if self.state == _FAILED else None

    def add_done_callback(self, fn: Callable[[Any], Any], *,
                          context: contextvars.Context | None = None) -> None:
        """As a Future's: `fn(self)` is scheduled once the coroutine has ended."""
        ctx = _copy_context() if context is None else context
        if self.state != _PENDING:
            self.loop.call_soon(fn, self, context=ctx)
        elif self.callbacks is None:
            self.callbacks = [(fn, ctx)]
        else:
            self.callbacks.append((fn, ctx))

    def remove_done_callback(self, fn: Callable[[Any], Any]) -> int:
        kept = [entry for entry in self.callbacks or () if entry[0] != fn]
        removed = len(self.callbacks or ()) - len(kept)
        self.callbacks = kept or None
        return removed

    def on_done(self, fn: Callable[[Resumer], None]) -> None:
        """`fn(self)` is called directly when the coroutine ends (no loop pass), in the
        context current now: the server answers the request from it."""
        self.notify = fn
        self.notify_context = _copy_context()
        if self.state != _PENDING:
            self._notify()

    # --- driving the coroutine ------------------------------------------------------------------

    def _suspend(self, yielded: Any) -> None:
        """After a step that suspended: wait for what it yielded, as `Task.__step` does."""
        if yielded.__class__ is _Future and yielded._asyncio_future_blocking \
                and not self.must_cancel and yielded.get_loop() is self.loop:
            # the common case first: a plain future of this loop, no cancel pending
            yielded._asyncio_future_blocking = False
            yielded.add_done_callback(self._wake, context=self.context)
            self.waiter = yielded
            return
        blocking = getattr(yielded, "_asyncio_future_blocking", None)
        if blocking is not None:
            loop_of = getattr(yielded, "get_loop", None)
            if blocking and loop_of is not None and loop_of() is self.loop:
                yielded._asyncio_future_blocking = False
                yielded.add_done_callback(self._wake, context=self.context)
                self.waiter = yielded
                if self.must_cancel and yielded.cancel(msg=self.cancel_message):
                    self.must_cancel = False
                return
            problem = RuntimeError(f"a handler awaited {yielded!r} wrongly (another loop's "
                                   "future, or `yield` instead of `await`)")
        elif yielded is None:  # a bare yield (asyncio.sleep(0)): one loop pass
            self.loop.call_soon(self._wake, None, context=self.context)
            return
        else:
            problem = RuntimeError(f"a handler yielded {yielded!r}, which is not a future")
        self.throw_next = problem
        self.loop.call_soon(self._wake, None, context=self.context)

    def _wake(self, _future: Any) -> None:
        """One step, run by the loop in the request's context: a future done, or a bare yield."""
        self.waiter = None
        exc = self.throw_next
        if self.must_cancel:
            if not isinstance(exc, _CancelledError):
                exc = _CancelledError() if self.cancel_message is None \
                    else _CancelledError(self.cancel_message)
            self.must_cancel = False
        loop = self.loop
        _enter_task(loop, self)
        running = self.running
        running.request = self.request
        try:
            if exc is None:
                yielded = self.coro.send(None)
            else:
                self.throw_next = None
                yielded = self.coro.throw(exc)
        except StopIteration as stop:
            # cancelled during its last step: the cancel wins, as it would over a Task
            state, value = (_CANCELLED, None) if self.must_cancel else (_FINISHED, stop.value)
        except _CancelledError:
            state, value = _CANCELLED, None
        except (KeyboardInterrupt, SystemExit) as fatal:
            running.request = None
            _leave_task(loop, self)
            self._end(_FAILED, fatal)
            raise
        except BaseException as error:
            state, value = _FAILED, error
        else:
            running.request = None
            _leave_task(loop, self)
            return self._suspend(yielded)
        running.request = None
        # Ended. Told outside the except blocks: the server's answer, and the next pipelined
        # request it may start, must not run "during the handling of" StopIteration.
        _leave_task(loop, self)
        self._end(state, value)

    def _end(self, state: int, value: Any) -> None:
        """The coroutine ended: record how, tell the server, schedule the other callbacks."""
        self.state = state
        self.value = value
        self.must_cancel = False
        callbacks, self.callbacks = self.callbacks, None
        if callbacks is not None:
            for fn, ctx in callbacks:
                self.loop.call_soon(fn, self, context=ctx)
        if self.notify is not None:
            self._notify()

    def _notify(self) -> None:
        notify, self.notify = self.notify, None
        ctx, self.notify_context = self.notify_context, None
        if ctx is not None and notify is not None:
            ctx.run(notify, self)


_spare: Resumer | None = None


def start(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any]) -> tuple[bool, Any]:
    """Run the first step: (True, result) if it finished, else (False, the Resumer now
    driving it, whose `on_done` the caller sets).

    Exceptions raised by the first step propagate to the caller. The first step runs in the
    caller's context; the later ones in a copy of it taken here (the request deadline is set
    in it), as a Task copies the context at its creation. A Resumer whose coroutine finished
    at once, untouched, is kept for the next call. The first step is a speed-only twin of
    `Resumer._wake` (no context copy, no waiter, no cancel to deliver yet).
    """
    global _spare
    resumer = _spare
    if resumer is None or resumer.loop is not loop:
        resumer = Resumer(loop)
    _spare = None
    entered = False
    try:
        _enter_task(loop, resumer)
        entered = True
    except RuntimeError:  # already inside a Task (only when driven from one, as in tests)
        pass
    try:
        yielded = coro.send(None)
    except StopIteration as stop:
        if entered:
            _leave_task(loop, resumer)
        if resumer.callbacks is not None:  # someone waits for its end: tell them
            resumer._end(_FINISHED, stop.value)
        elif not resumer.cancel_requests and not resumer.must_cancel:
            _spare = resumer
        return True, stop.value
    except BaseException as error:
        if entered:
            _leave_task(loop, resumer)
        if resumer.callbacks is not None:
            resumer._end(_FAILED, error)
        raise
    if entered:
        _leave_task(loop, resumer)
    resumer.coro = coro
    resumer.context = _copy_context()
    resumer._suspend(yielded)
    return False, resumer
