"""Process glue: what every way of running svc code needs from the process around it, said once.

`svcc` itself (cli.py), `svcc run` (runner.py), built executables (launcher.py), the server and
its worker processes (svc.runtime.http.server, svc.runtime.http.workers) and `svcc test`
(tools/test_runner.py) share:

- the standard streams: /dev/null behind the ones the caller closed, stdout silenced once its
  reader is gone, flushing that never raises;
- signals: SIGINT and SIGTERM mean "stop gracefully"; a process whose parent is killed
  outright must not keep serving with nobody to stop it;
- an event loop: uvloop where it is installed, asyncio's own elsewhere (Windows);
- the recursion limit svc calls may nest to;
- a thread watchdog, the one way to interrupt code that never gives control back;
- closing every open database;
- a run-time fault as one line.

The module sits outside svc.runtime and imports asyncio, threading and ctypes only in the
functions that use them: every `svcc` command imports it for the streams, and importing
svc.runtime (its native-build check) or asyncio would add ~55 ms to `svcc check`.
"""

from __future__ import annotations

import os
import signal
import sys
import time
import traceback
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from svc.rules.contract import RECURSION_LIMIT

if TYPE_CHECKING:
    import asyncio

T = TypeVar("T")

# --- the standard streams ---------------------------------------------------------------------


def reopen_closed_standard_streams() -> None:
    """Put /dev/null behind descriptors 0-2 and sys.stdin/out/err when the caller closed them
    (`svcc run prog <&- >&-`); called first thing by `svcc` and by built executables.

    Otherwise the server's listening socket takes one of those numbers, and libuv aborts the
    process when it closes a socket numbered 0-2 (at the end of a graceful shutdown); and
    Python leaves `sys.stdout` None, which printing and flushing do not expect.
    """
    for fd, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        try:
            os.fstat(fd)
        except OSError:
            opened = os.open(os.devnull, os.O_RDWR)  # the lowest free number: this one
            if opened != fd:
                os.dup2(opened, fd)
                os.close(opened)
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, mode, encoding="utf-8", closefd=False))


def silence_stdout() -> None:
    """Point stdout at /dev/null once its reader is gone (`svcc ... | head -1`), so later
    writes and the flush at exit go nowhere quietly instead of raising BrokenPipeError."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def flush_quietly(*streams: TextIO | None) -> None:
    """Flush each stream, ignoring one that is closed, gone or whose reader went away: what
    was written is all that can be saved at the end of a process."""
    for stream in streams:
        if stream is None:
            continue
        try:
            stream.flush()
        except (OSError, ValueError):
            pass


# --- signals ----------------------------------------------------------------------------------

#: Both mean "stop gracefully", in a server, a supervisor and its workers alike.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

SignalHandler = Callable[[int, FrameType | None], Any]


@contextmanager
def stop_on_signals(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> Iterator[None]:
    """While in the block, SIGINT and SIGTERM set `stop` (not on Windows, or off the main
    thread, where the loop cannot take them). The handlers stay until the block is left, so a
    second Ctrl+C during a graceful shutdown inside it cannot cut the shutdown short."""
    installed: list[signal.Signals] = []
    for signum in STOP_SIGNALS:
        try:
            loop.add_signal_handler(signum, stop.set)
            installed.append(signum)
        except (NotImplementedError, RuntimeError, ValueError):
            pass
    try:
        yield
    finally:
        for signum in installed:
            loop.remove_signal_handler(signum)


@contextmanager
def on_sigterm(handler: SignalHandler) -> Iterator[None]:
    """While in the block, SIGTERM calls `handler`; the previous handling is back after it."""
    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def stop_when_parent_dies() -> None:
    """On Linux, ask the kernel for SIGTERM (a graceful stop) when the parent process dies.

    A worker outliving its supervisor, or a program outliving its executable's bootloader,
    would hold the port with nobody to stop it. PR_SET_PDEATHSIG covers a parent that is
    killed outright; a parent that died before the call took effect is noticed by the change
    of parent pid.
    """
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, int(signal.SIGTERM))  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGTERM)


# --- the event loop and the stack -------------------------------------------------------------

def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop maker where uvloop is installed; None (asyncio's default) where it is
    not (Windows)."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A fresh event loop: uvloop's where available."""
    import asyncio

    factory = loop_factory()
    return factory() if factory is not None else asyncio.new_event_loop()


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run `coroutine` to its end on a fresh event loop (uvloop's where available), then close
    the loop, as `asyncio.run` does (Ctrl+C cancels it and raises KeyboardInterrupt)."""
    import asyncio

    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        try:
            return runner.run(coroutine)
        finally:
            from svc.runtime import services  # a program's run: svcc check never gets here

            runner.run(services.end_loop())  # what is bound to this loop (client sessions)


def raise_recursion_limit() -> None:
    """Let svc calls nest `contract.RECURSION_LIMIT` deep before "recursion too deep"."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))


# --- the watchdog -----------------------------------------------------------------------------

class Watchdog:
    """Raises `fault` in the thread that made it once `seconds` pass without a `feed()`, from
    a daemon thread (PyThreadState_SetAsyncExc): it surfaces at the watched code's next
    bytecode, which no `await`-based timeout can do for code that never awaits. Without a feed
    it fires again after another `seconds`; `stop()`, or the end of a `with` block, ends it.

    The server feeds it from a timer on its event loop (`feed_from`), so it fires only when a
    handler keeps the loop for `seconds` (svc.runtime.http.watchdog). The test runner never feeds
    it: it is the time limit of a test that does not await.

    A late wake-up of the watching thread with almost no CPU spent (under a tenth of the time
    slept) means the whole process was stalled (SIGSTOP, swap): not the watched code's fault,
    so the wait starts again. A process that merely shares a busy CPU still spends more than
    that (two CPU hogs on two cores leave it a third of a core or more), so it is not taken
    for stalled: its handler is still interrupted. A late
    wake-up with the CPU busy means the watched thread held the GIL in one long C call (a huge
    string copy): that time counts. A lock makes "stopped" and "fired" exclusive, and a fault
    fired but not yet delivered when it stops is withdrawn, so it never lands after the block.
    """

    POLL_SECONDS = 0.1
    #: A late wake-up with less than 1/STALLED_SHARE of its time in CPU is a stalled process.
    STALLED_SHARE = 10

    def __init__(self, fault: type[BaseException], seconds: float, name: str) -> None:
        import ctypes
        import threading

        self.seconds = seconds
        # Everything firing needs, made here: the watching thread runs only when the watched
        # code lets go of the GIL, so an import at firing time (ctypes' first) could take many
        # of its long C calls.
        self._set_async_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc
        self._target = ctypes.c_ulong(threading.get_ident())
        self._fault = ctypes.py_object(fault)
        self._no_fault = ctypes.py_object()  # NULL: withdraws a pending fault
        self._deadline = time.monotonic() + seconds
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._fired = False
        self._timer: asyncio.TimerHandle | None = None
        threading.Thread(target=self._watch, name=name, daemon=True).start()

    def feed(self) -> None:
        """The watched code is still giving control back: `seconds` start again."""
        self._deadline = time.monotonic() + self.seconds

    def feed_from(self, loop: asyncio.AbstractEventLoop) -> None:
        """Feed from a timer on `loop` every POLL_SECONDS: then it fires only when the loop
        stops turning. The cost is one timer tick per POLL_SECONDS."""

        def beat() -> None:
            self.feed()
            if not self._stopped.is_set():
                self._timer = loop.call_later(self.POLL_SECONDS, beat)

        self._timer = loop.call_later(self.POLL_SECONDS, beat)

    def stop(self) -> None:
        with self._lock:
            self._stopped.set()
            if self._fired:
                self._set_async_exc(self._target, self._no_fault)
        if self._timer is not None:
            self._timer.cancel()

    def __enter__(self) -> Watchdog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _watch(self) -> None:
        woke, used = time.monotonic(), time.process_time()  # the whole process's CPU time
        while not self._stopped.wait(min(self.POLL_SECONDS, self._deadline - woke)):
            now, cpu = time.monotonic(), time.process_time()
            slept, woke = now - woke, now
            spent, used = cpu - used, cpu
            if slept > 5 * self.POLL_SECONDS and spent < slept / self.STALLED_SHARE:
                self.feed()  # the process was stalled
            elif now >= self._deadline:
                self._fire()
                self.feed()  # once per `seconds`

    def _fire(self) -> None:
        with self._lock:
            if not self._stopped.is_set():
                self._fired = True
                self._set_async_exc(self._target, self._fault)  # raised at its next bytecode


# --- shutting down -------------------------------------------------------------------------------

def close_databases() -> None:
    """Release what the program's lazily imported modules hold (its databases closed, their
    threads stopped, SQLite's WAL checkpointed; the password hashing threads): at server
    shutdown, and after each test (svc.runtime.services' lifecycle registry)."""
    from svc.runtime import services

    services.shut_down()


# --- a fault as one line ----------------------------------------------------------------------

def fault_text(exc: BaseException) -> str:
    """What a run-time fault is, in words: the svc fault's own message, `recursion too deep`,
    or `internal fault: <type>: <message>` for a bug of ours."""
    from svc.runtime.lib.support import SvcFault

    if isinstance(exc, SvcFault):
        return str(exc)
    if isinstance(exc, RecursionError):
        return "recursion too deep"
    return f"internal fault: {type(exc).__name__}: {exc}"


def fault_message(exc: BaseException) -> str:
    """A run-time fault as one line: what happened and the innermost `.svc` line, e.g.
    `integer overflow (i64) (at prog.svc:12, in add)`."""
    text = fault_text(exc)
    where = svc_location(exc)
    return f"{text} (at {where})" if where else text


def svc_location(exc: BaseException) -> str | None:
    """`file.svc:line, in function` of the innermost frame of `exc` in svc code, or None."""
    found = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename.endswith(".svc"):
            found = frame
    if found is None:
        return None
    return f"{found.filename}:{found.lineno}, in {found.name}"
