"""Calling Python functions an svc program declares with `@python(module, attribute)`.

Generated code makes one svc function per declaration at module level
(`f = python_calls.function("f", "markdown", "markdown", "internal", (str,), str,
"notes.svc:3")`), so the Python module is imported as the program starts and a missing one
stops it with one line naming the declaration. Each call then crosses a strict boundary
(docs/reference/python.md):

- arguments go over as plain Python values (`_to_python`): lists, maps, classes and enums as
  JSON would show them (a class a dict of its fields, an enum its member's name), bytes as
  bytes; copies, so the Python side cannot change an svc value;
- the result must be a value of the declared type as it is (`_from_python`: msgspec's strict
  conversion, no text read as a number or as base64): anything else is an `internal` error
  whose log line names the declaration and what came back, never shown to the client;
- an exception becomes an `Err` of the declaration's kind; `internal` keeps the Python detail
  for the log, another kind gives the client the exception's first line.

A blocking (plain `def`) callable runs on this module's pool of threads (`_Pool`), so the
event loop never waits on it; a coroutine function is awaited on the loop. Both run inside
the calling request's processing limit: when the server answers 504 it cancels the handler,
the await ends at once, and a thread already running the call is left to finish (Python
cannot stop a thread), with a warning when the request gives up and one when the thread ends.

In `svcc test`, `python_stub(f, answer)` answers the calls of `f` for the rest of the test
from the test's own services (`Services.python_stubs`), without calling Python.
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import inspect
import os
import queue
import threading
import time
from typing import Any, Callable

import msgspec

from svc.runtime import services
from svc.runtime.http import eager
from svc.runtime.lib.support import SvcError, SvcFault, copy
from svc.runtime.observability import serverlog
from svc.runtime.observability.accesslog import ServerLog

#: An exception's text as a non-internal error's message: its first line, at most this long.
MESSAGE_CHARS = 200
#: A wrong result as the log shows it: its repr, at most this long.
SHOWN_CHARS = 80
#: Values handed to Python as they are: immutable, and already what Python would use.
_AS_THEY_ARE = frozenset({int, float, str, bool, bytes, type(None)})


def default_threads() -> int:
    """The pool's size when svc.toml's `[python] threads` is not set: what Python's own
    ThreadPoolExecutor takes for blocking work."""
    return min(32, (os.cpu_count() or 1) + 4)


# --- the svc function of a declaration -------------------------------------------------------------

def function(name: str, module: str, attribute: str, error_kind: str,
             param_types: tuple[Any, ...], result_type: Any, where: str) -> Callable[..., Any]:
    """The svc function `name` declared at `where` ("file.svc:LINE"): an `async def` that takes
    its svc arguments positionally and returns the value of its `Result[T, Error]` (T's
    runtime value) or an `SvcError`."""
    declaration = Declaration(name, module, attribute, error_kind, param_types, result_type,
                              where)
    target = _load(declaration)
    run = _awaited if inspect.iscoroutinefunction(target) else _on_a_thread

    async def call(*args: Any) -> Any:
        stubbed = _stubbed(name)
        if stubbed is not _NONE:
            return stubbed
        return await run(declaration, target, args)
    call.__name__ = call.__qualname__ = name
    return call


def python_stub(name: str, answer: Any) -> None:
    """`python_stub(f, answer)` in a test file: calls of the `@python` function `f` return
    `answer` (a value of its result type, an `SvcError` for an `Err`) for the rest of the
    test."""
    running = services.current()
    if not running.testing:
        raise SvcFault("python_stub: stubs are for `svcc test` only")
    running.python_stubs[name] = copy(answer)


class Declaration:
    """What one `@python` declaration says, for its calls and their messages."""

    __slots__ = ("name", "module", "attribute", "error_kind", "param_types", "result_type",
                 "where")

    def __init__(self, name: str, module: str, attribute: str, error_kind: str,
                 param_types: tuple[Any, ...], result_type: Any, where: str) -> None:
        self.name = name
        self.module = module
        self.attribute = attribute
        self.error_kind = error_kind
        self.param_types = param_types
        self.result_type = result_type
        self.where = where

    @property
    def shown(self) -> str:
        """How messages name it: `python function slugify (app.svc:4, slugs.slugify)`."""
        return f"python function {self.name} ({self.where}, {self.module}.{self.attribute})"


def _load(declaration: Declaration) -> Callable[..., Any]:
    """The callable a declaration names, imported now (the program's start); a failure is
    a fault with one line naming the declaration (the runner prints it and exits 1)."""
    try:
        found = importlib.import_module(declaration.module)
    except Exception as exc:  # noqa: BLE001 - whatever the import raised, as one line
        raise SvcFault(f"{declaration.shown}: importing Python module "
                       f"'{declaration.module}' failed: {_one_line(exc)}") from None
    target = getattr(found, declaration.attribute, None)
    if target is None:
        raise SvcFault(f"{declaration.shown}: Python module '{declaration.module}' has no "
                       f"'{declaration.attribute}'")
    if not callable(target):
        raise SvcFault(f"{declaration.shown}: '{declaration.module}.{declaration.attribute}' "
                       "is not callable")
    return target


#: What `_stubbed` returns when no stub answers (None is a stub's answer for a unit result).
_NONE: Any = object()


def _stubbed(name: str) -> Any:
    """In `svcc test`: a copy of the stub's answer for `name`, else `_NONE`."""
    running = services.current()
    if not running.testing:
        return _NONE
    found = running.python_stubs.get(name, _NONE)
    return found if found is _NONE else copy(found)


# --- one call ------------------------------------------------------------------------------------------

async def _awaited(declaration: Declaration, target: Callable[..., Any],
                   args: tuple[Any, ...]) -> Any:
    """A coroutine function's call, awaited on the loop (cancelled with its request)."""
    try:
        value = await target(*_to_python(args))
    except Exception as exc:  # noqa: BLE001 - the boundary: every exception is an Err
        return _raised(declaration, exc)
    return _from_python(declaration, value)


async def _on_a_thread(declaration: Declaration, target: Callable[..., Any],
                       args: tuple[Any, ...]) -> Any:
    """A blocking call, run by a thread of the pool while the loop goes on. The thread
    settles `done` with what the call returned or raised."""
    loop = asyncio.get_running_loop()
    request = eager.running.request  # set during this first step only: kept for the log
    done = loop.create_future()
    call = _Call(loop, done, target, _to_python(args), contextvars.copy_context())
    _the_pool().submit(call)
    try:
        returned, raised = await done
    except asyncio.CancelledError:
        _given_up(declaration, call, request)
        raise
    if raised is not None:
        return _raised(declaration, raised)
    return _from_python(declaration, returned)


def _to_python(args: tuple[Any, ...]) -> list[Any]:
    """The arguments as plain Python values: scalars as they are, anything else (lists,
    maps, classes, with enums inside as their names) as a fresh copy of builtins."""
    return [value if value.__class__ in _AS_THEY_ARE
            else msgspec.to_builtins(value, builtin_types=(bytes,)) for value in args]


def _from_python(declaration: Declaration, value: Any) -> Any:
    """The result as the svc value of the declared type, or an `internal` error saying what
    came back (the log shows it; the client sees "internal error")."""
    wanted = declaration.result_type
    if wanted is None:  # unit
        if value is None:
            return None
        return _wrong_result(declaration, "expected None (unit)", value)
    try:
        return msgspec.convert(value, wanted, strict=True, builtin_types=(bytes,))
    except msgspec.ValidationError as exc:
        return _wrong_result(declaration, str(exc), value)


def _wrong_result(declaration: Declaration, why: str, value: Any) -> SvcError:
    shown = repr(value)
    if len(shown) > SHOWN_CHARS:
        shown = shown[:SHOWN_CHARS] + "..."
    return SvcError("internal", f"{declaration.shown} returned a value that is not of its "
                                f"declared type: {why} (got {type(value).__name__} {shown})")


def _raised(declaration: Declaration, exc: BaseException) -> SvcError:
    """An exception as the declaration's error: `internal` keeps the Python detail for the
    log; another kind's message, which the client sees, is the exception's first line."""
    if declaration.error_kind == "internal":
        return SvcError("internal", f"{declaration.shown} raised {_one_line(exc)}")
    text = str(exc).strip().split("\n", 1)[0][:MESSAGE_CHARS]
    return SvcError(declaration.error_kind, text or type(exc).__name__)


def _one_line(exc: BaseException) -> str:
    """`ValueError: the message`, on one line."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


# --- the threads ----------------------------------------------------------------------------------------

class _Call:
    """One blocking call handed to the pool: run in the caller's context (copied), its
    outcome sent back to the caller's loop."""

    __slots__ = ("loop", "done", "target", "args", "context", "started", "took", "abandoned")

    def __init__(self, loop: asyncio.AbstractEventLoop, done: asyncio.Future,
                 target: Callable[..., Any], args: list[Any],
                 context: contextvars.Context) -> None:
        self.loop = loop
        self.done = done
        self.target = target
        self.args = args
        self.context = context
        #: `time.monotonic()` when a thread took it (0.0: still queued).
        self.started = 0.0
        #: Seconds the call ran, once the loop has heard it ended.
        self.took: float | None = None
        #: Set by the loop when the request gave up: the thread says when it ends.
        self.abandoned: Callable[[float], None] | None = None

    def run(self) -> None:
        """On a pool thread: a call its request gave up while it was queued is dropped."""
        if self.done.cancelled():
            return
        self.started = time.monotonic()
        returned: Any = None
        raised: BaseException | None = None
        try:
            returned = self.context.run(self.target, *self.args)
        except BaseException as exc:  # noqa: BLE001 - SystemExit too: never out of a thread
            raised = exc
        took = time.monotonic() - self.started
        try:
            self.loop.call_soon_threadsafe(self._settle, returned, raised, took)
        except RuntimeError:  # the loop is closed: nobody waits any more
            pass

    def _settle(self, returned: Any, raised: BaseException | None, took: float) -> None:
        """On the loop: the outcome to the caller, or, to a caller that gave up, the line
        saying the thread is free again."""
        self.took = took
        if self.abandoned is not None:
            self.abandoned(took)
        elif not self.done.done():
            self.done.set_result((returned, raised))


class _Pool:
    """Threads taking blocking calls from one queue, started as calls need them, at most
    `size`. Daemon threads, unlike ThreadPoolExecutor's: a call that hangs for good must not
    keep the process from ending when the server stops (docs/decisions/build-and-runtime.md)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.threads = 0
        self.idle = 0  # threads waiting for a call
        self.queued = 0  # calls not yet taken
        self.busy = 0  # calls running

    def submit(self, call: _Call) -> None:
        with self.lock:
            self.queued += 1
            if self.queued > self.idle and self.threads < self.size:
                self.threads += 1
                threading.Thread(target=self._work, name=f"svc-python-{self.threads}",
                                 daemon=True).start()
        self.calls.put(call)

    def stop(self) -> None:
        """Each thread ends once the calls queued before are done (their outcome goes
        nowhere when their loop has ended)."""
        with self.lock:
            threads = self.threads
        for _ in range(threads):
            self.calls.put(None)

    def _work(self) -> None:
        while True:
            with self.lock:
                self.idle += 1
            call = self.calls.get()
            with self.lock:
                self.idle -= 1
                if call is None:
                    self.threads -= 1
                    return
                self.queued -= 1
                self.busy += 1
            try:
                call.run()
            finally:
                with self.lock:
                    self.busy -= 1


_pool: _Pool | None = None
_pool_lock = threading.Lock()


def _the_pool() -> _Pool:
    """The process's pool, made at the first blocking call with the running program's
    `[python] threads` (a later program run, a later test, makes its own after `stop_pool`)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            size = services.current().settings.python_threads
            _pool = _Pool(size if size is not None else default_threads())
        return _pool


def stop_pool() -> None:
    """At the server's shutdown and after each test: the threads end as their calls do."""
    global _pool
    with _pool_lock:
        pool, _pool = _pool, None
    if pool is not None:
        pool.stop()


def _forget_pool_after_fork() -> None:
    """A forked worker inherits the pool but not its threads: it makes its own."""
    global _pool, _pool_lock
    _pool = None
    _pool_lock = threading.Lock()


def _gauges(rows: services.GaugeRows) -> None:
    pool = _pool
    rows["svc_python_threads_busy"].append([[], 0 if pool is None else pool.busy])


# --- a request that gave up -------------------------------------------------------------------------

def _given_up(declaration: Declaration, call: _Call, request: Any) -> None:
    """The caller was cancelled (its request's 504, a job's deadline): a call still queued
    is never run; one running is left to finish, with a warning now and one when it ends
    (written to the same log: the thread's end is heard outside the request's context)."""
    if call.took is not None:
        return  # it ended just as its request gave up: its thread is free already
    log = services.current().log
    if not call.started:
        _warn(log, request, f"{declaration.shown} was still waiting for a thread when its "
                            "request gave up; it will not run")
        return
    _warn(log, request, f"{declaration.shown} was still running when its request gave up; "
                        "its thread is left to finish")

    def finished(took: float) -> None:
        _warn(log, request, f"{declaration.shown} finished after {took:.2f} s, on the thread "
                            "its request left")
    call.abandoned = finished


def _warn(log: ServerLog | None, request: Any, message: str) -> None:
    """A warning line: the request's (with its id) while serving, else the log's, else
    stderr at once (`main`, a test)."""
    if log is None:
        serverlog.write_line(message, "warn")
    elif request is not None:
        log.request_warning(request, None, message)
    else:
        serverlog.standalone(log, "warn", message)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_after_fork)

services.join(services.Component("python functions", at_shutdown=stop_pool, gauges=_gauges))
