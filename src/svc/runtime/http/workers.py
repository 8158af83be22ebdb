"""Every core: `SVC_WORKERS=N` runs `serve` in N worker processes on the one port.

`main` has run once, in this process, by the time `serve` is called. With more than one
worker, `serve` (server.py) hands over to `supervise`: this process takes the port, forks the
workers, prints the listening line once all of them are listening, and then only watches
them. Each worker escapes the parent's event loop, reopens the program's databases
(`svc.runtime.db.reopen_after_fork`: no connection is shared across a fork), and runs the
ordinary server (`server.serve_worker`) on a fresh event loop, with its own watchdog and
deadline sweeper.

How connections reach the workers: on Linux each worker listens on a socket of its own in
one SO_REUSEPORT group, and the kernel spreads new connections over them by a hash of the
address pair. Measured here (wrk, 64 connections for 5 s, two workers) the workers held
30/46 to 37/39 sockets that way, where with one shared listening socket they held as badly
as 64/10: a worker woken for a new connection accepts every one waiting, so whichever wakes
first takes most, and throughput suffered with it (docs/decisions/http.md). The price:
connections waiting in a killed worker's own queue are reset. Elsewhere (macOS, BSD:
SO_REUSEPORT does not balance there) the workers accept from one shared listening socket.

The supervisor replaces a worker that dies (logged on stderr) within `POLL_SECONDS`; a worker
that dies within a second of starting is replaced after a second, so a program that cannot
start does not fork in a tight loop. SIGINT/SIGTERM stop the workers with SIGTERM (each shuts
down gracefully, as a single server does) and `serve` returns once every one has exited.
"""

from __future__ import annotations

import asyncio
import errno
import gc
import os
import signal
import socket
import sys
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from svc.rules.contract import PROCESSING_LIMIT, Route
from svc.process import (STOP_SIGNALS, close_databases, flush_quietly,
                         new_event_loop, stop_on_signals, stop_when_parent_dies)
from svc.runtime import services
from svc.runtime.lib.support import SvcError
from svc.runtime.services import current as current_services

VARIABLE = "SVC_WORKERS"
#: The listening socket's queue of connections not yet accepted (10,000 may arrive at once).
LISTEN_BACKLOG = 8192
#: How often the supervisor looks for workers that died.
POLL_SECONDS = 0.1
#: A worker that dies younger than this is replaced only after this long.
MIN_LIFETIME = 1.0
#: How long all workers may take to start listening.
STARTUP_SECONDS = 60.0
#: How long stopping workers may take before they are killed: their own grace, and a margin.
STOP_SECONDS = 2 * PROCESSING_LIMIT + 5.0

#: server.serve_worker(db, listener, routes, ready): one worker's server, passed in so that
#: this module does not import the server (which imports this one).
ServeWorker = Callable[[Any, socket.socket, list[Route], Callable[[], None]], Awaitable[Any]]


def worker_count_from_env() -> int | SvcError:
    """`SVC_WORKERS`: a positive integer, or `auto` for the CPUs this process may use."""
    raw = os.environ.get(VARIABLE, "1")
    text = raw.strip().lower()
    if text == "auto":
        return available_cpus()
    if text.isascii() and text.isdigit() and int(text) > 0:
        return int(text)
    return SvcError("invalid", f"{VARIABLE} must be a positive integer or 'auto' (got {raw!r})")


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, which containers and `taskset`
    narrow), else the machine's count."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # macOS has no affinity masks
        return max(1, os.cpu_count() or 1)


async def supervise(db: Any, port: int, routes: list[Route], count: int,
                    serve_worker: ServeWorker, metrics_port: int | None = None
                    ) -> None | SvcError:
    """Serve with `count` worker processes, each running `serve_worker` (server.py's); returns
    after SIGINT/SIGTERM once all have exited, or a startup error (nothing is left running).

    With `metrics_port` (`SVC_METRICS_PORT`) this process serves the metrics endpoint: the
    sum of the snapshots the workers write to a private folder (svc.runtime.observability.metrics)."""
    problem = _startup_problem(port)
    if problem is not None:
        return problem
    listener = _listen(port)
    if isinstance(listener, SvcError):
        return listener
    supervisor = Supervisor(db, listener, routes, count, serve_worker)
    endpoint = None
    if metrics_port is not None:
        endpoint = await supervisor.serve_metrics(metrics_port)
        if isinstance(endpoint, SvcError):
            listener.close()
            supervisor.forget_metrics()
            return endpoint
    try:
        return await supervisor.run()
    finally:
        if endpoint is not None:
            endpoint.close()
            supervisor.forget_metrics()
        listener.close()
        close_databases()


def _startup_problem(port: Any) -> SvcError | None:
    """What must be refused before any worker starts, each named once, by the supervisor."""
    if not hasattr(os, "fork"):
        return SvcError("invalid", f"{VARIABLE} above 1 needs an operating system that can "
                                   f"fork worker processes, and this one cannot")
    if not isinstance(port, int) or not 0 <= port <= 65535:
        return SvcError("invalid", f"invalid port {port}")
    refusal = services.fork_refusal()
    return None if refusal is None else SvcError("invalid", refusal)


#: Linux spreads connections over the listening sockets of one SO_REUSEPORT group evenly;
#: BSD and macOS give them all to the last socket bound, so there the workers share one.
KERNEL_BALANCES = sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT")


def _listen(port: int) -> socket.socket | SvcError:
    """The supervisor's socket on the port, made before the workers fork.

    Where the kernel balances (Linux) it is only bound, to hold the port and learn its number
    when the program asked for port 0, and every worker listens on a socket of its own in the
    same SO_REUSEPORT group (`_worker_listener`). Elsewhere it listens, and every worker
    accepts from it.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if KERNEL_BALANCES:
            _refuse_taken_port(port)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(("127.0.0.1", port))
        if not KERNEL_BALANCES:
            sock.listen(LISTEN_BACKLOG)
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            return SvcError("invalid", f"port {port} is already in use")
        return SvcError("invalid", f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}")
    return sock


def _refuse_taken_port(port: int) -> None:
    """Raise EADDRINUSE when anything listens on the port, SO_REUSEPORT or not: binding with
    SO_REUSEPORT would otherwise join another program's group and share its traffic."""
    if port == 0:
        return
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("127.0.0.1", port))


def _worker_listener(supervisor_socket: socket.socket) -> socket.socket:
    """The socket a worker accepts from: its own in the SO_REUSEPORT group (Linux), or the
    supervisor's."""
    if not KERNEL_BALANCES:
        return supervisor_socket
    own = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    own.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    own.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    own.bind(supervisor_socket.getsockname())
    own.listen(LISTEN_BACKLOG)
    own.setblocking(False)
    supervisor_socket.close()  # the worker needs only its own
    return own


@dataclass
class Worker:
    pid: int
    started: float  # time.monotonic() at fork
    report: asyncio.Task[str]  # reads its startup report: "ready" or an error line


class Supervisor:
    """Forks the workers, prints the listening line once, replaces the dead, stops them all."""

    def __init__(self, db: Any, listener: socket.socket, routes: list[Route], count: int,
                 serve_worker: ServeWorker) -> None:
        self.db = db
        self.serve_worker = serve_worker
        self.listener = listener
        self.routes = routes
        self.count = count
        self.workers: dict[int, Worker] = {}  # slot → its current worker
        self.stop = asyncio.Event()
        self.loop = asyncio.get_running_loop()
        #: The counts of the workers that died (their gauges no longer count), when metrics
        #: are on: svc.runtime.observability.metrics.merge's `counts_only`.
        self.retired: list[dict] = []

    async def serve_metrics(self, port: int) -> Any:
        """Make the folder the workers will write their metrics to (before they fork), and
        serve the sum of their files on `port`: the endpoint, or the SvcError of a port in
        use."""
        import tempfile

        from svc.runtime.observability import metrics, metrics_endpoint

        # private (mode 0700); the workers forked later find it in their copy of the services
        current_services().metrics_folder = tempfile.mkdtemp(prefix="svc-metrics-")
        return await metrics_endpoint.start(port, self.metrics_snapshot)

    def metrics_snapshot(self) -> dict:
        """At a scrape: the workers' last snapshots (at most one sweep tick old) summed, and
        the counts of the workers that died."""
        from svc.runtime.observability import metrics

        folder = current_services().metrics_folder
        found = [] if folder is None else [
            metrics.read_snapshot(folder, worker.pid) for worker in self.workers.values()]
        return metrics.merge([snapshot for snapshot in found if snapshot], self.retired)

    def _retire_metrics(self, pid: int) -> None:
        """A worker died: keep its counters (they must not go down), drop its file."""
        from svc.runtime.observability import metrics

        folder = current_services().metrics_folder
        if folder is None:
            return
        last = metrics.read_snapshot(folder, pid)
        if last is not None:
            self.retired = [metrics.merge([], self.retired + [last])]
        try:
            os.remove(metrics.worker_file(folder, pid))
        except OSError:
            pass

    def forget_metrics(self) -> None:
        owner = current_services()
        if owner.metrics_folder is not None:
            import shutil

            shutil.rmtree(owner.metrics_folder, ignore_errors=True)
            owner.metrics_folder = None

    async def run(self) -> None | SvcError:
        with stop_on_signals(self.loop, self.stop):
            failure = await self._start_all()
            if failure is None and not self.stop.is_set():
                port = self.listener.getsockname()[1]
                print(f"listening on http://127.0.0.1:{port}", flush=True)
                await self._watch()
            await self._stop_all()
            return failure

    async def _start_all(self) -> SvcError | None:
        """Fork every worker and wait until each is listening; the first failure stops all."""
        gc.freeze()  # objects made by main stay untouched by the workers' collections (COW)
        for slot in range(self.count):
            self.workers[slot] = self._fork(slot)
        reports = asyncio.gather(*(w.report for w in self.workers.values()))
        stopped = asyncio.ensure_future(self.stop.wait())
        either: set[asyncio.Future[Any]] = {reports, stopped}
        done, _ = await asyncio.wait(either, timeout=STARTUP_SECONDS,
                                     return_when=asyncio.FIRST_COMPLETED)
        stopped.cancel()
        if reports not in done:
            reports.cancel()
            return None if stopped in done else SvcError("internal", "workers did not start")
        for text in reports.result():
            if text != "ready":
                return SvcError("invalid", text or "a worker exited while starting")
        return None

    def _fork(self, slot: int) -> Worker:
        """Start worker `slot` (its replacement has the same); its startup report arrives on a
        pipe of its own."""
        read_end, write_end = os.pipe()
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            pid = os.fork()
            if pid == 0:  # the worker: never returns into the supervisor's coroutines
                current_services().worker_slot = slot  # this process's copy of them
                os.close(read_end)
                status = 1
                try:
                    status = _worker_main(self, write_end, blocked)
                finally:
                    os._exit(status)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
            os.close(write_end)
        return Worker(pid, time.monotonic(), asyncio.ensure_future(_read_report(read_end)))

    async def _watch(self) -> None:
        """Until SIGINT/SIGTERM: reap workers that died, log them, start their successors."""
        while not self.stop.is_set():
            try:
                await asyncio.wait_for(self.stop.wait(), POLL_SECONDS)
            except asyncio.TimeoutError:
                pass
            if self.stop.is_set():
                return
            for slot, worker in list(self.workers.items()):
                ended = _reap(worker.pid)
                if ended is None:
                    continue
                lived = time.monotonic() - worker.started
                _log(f"worker {worker.pid} {ended}; starting a new one")
                self._retire_metrics(worker.pid)
                if lived < MIN_LIFETIME:
                    await asyncio.sleep(MIN_LIFETIME - lived)
                    if self.stop.is_set():
                        del self.workers[slot]
                        return
                self.workers[slot] = self._fork(slot)
                self.workers[slot].report.add_done_callback(_log_failed_start)

    async def _stop_all(self) -> None:
        """SIGTERM every worker (each finishes its requests in flight), wait, kill stragglers."""
        alive = {w.pid for w in self.workers.values()}
        for pid in alive:
            _signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_SECONDS
        while alive and time.monotonic() < deadline:
            alive = {pid for pid in alive if _reap(pid) is None}
            if alive:
                await asyncio.sleep(0.02)
        for pid in alive:
            _signal(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        for worker in self.workers.values():
            worker.report.cancel()


def _reap(pid: int) -> str | None:
    """How the worker ended if it has (`exited with status 1`, `killed by signal 9`)."""
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return "is gone"
    if done == 0:
        return None
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return f"exited with status {os.waitstatus_to_exitcode(status)}"


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _log(message: str) -> None:
    """A line of the supervisor's own: `svc: ...`, or a JSON error line (`SVC_LOG_FORMAT`)."""
    from svc.runtime.observability.serverlog import log_format_from_env, standalone_error

    line = standalone_error(message) if log_format_from_env() == "json" else f"svc: {message}\n"
    try:
        sys.stderr.write(line)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _log_failed_start(report: asyncio.Task[str]) -> None:
    if not report.cancelled() and report.result() not in ("ready", ""):
        _log(f"a new worker could not start: {report.result()}")


async def _read_report(fd: int) -> str:
    """Everything a worker writes on its report pipe until it closes it: `ready`, an error
    line, or nothing (it died before saying)."""
    loop = asyncio.get_running_loop()
    chunks: list[bytes] = []
    closed = loop.create_future()

    def readable() -> None:
        data = os.read(fd, 4096)
        if data:
            chunks.append(data)
        elif not closed.done():
            closed.set_result(None)

    loop.add_reader(fd, readable)
    try:
        await closed
    finally:
        loop.remove_reader(fd)
        os.close(fd)
    return b"".join(chunks).decode("utf-8", "replace").strip()


# --- inside a worker process --------------------------------------------------------------------

def _worker_main(supervisor: Supervisor, report_fd: int, signal_mask: Iterable[int]) -> int:
    """The worker: leave the parent's loop behind, reopen the databases, serve on a new loop.

    The exit status is 0 after a graceful stop, 1 when it could not serve (its reason went to
    the supervisor on `report_fd`).
    """
    reported = False

    def report(text: str) -> None:
        nonlocal reported
        if not reported:
            reported = True
            try:
                os.write(report_fd, text.encode("utf-8", "replace"))
            finally:
                os.close(report_fd)

    try:
        _leave_parent_loop(signal_mask)
        stop_when_parent_dies()
        loop = new_event_loop()
        asyncio.set_event_loop(loop)
        problem = loop.run_until_complete(services.after_fork())
        if problem is not None:
            report(problem)
            return 1
        listener = _worker_listener(supervisor.listener)
        result = loop.run_until_complete(supervisor.serve_worker(
            supervisor.db, listener, supervisor.routes, lambda: report("ready")))
        if isinstance(result, SvcError):
            report(result.message)
            return 1
        return 0
    except BaseException as exc:  # noqa: BLE001 - a worker never shows a traceback
        report(f"internal error in a worker: {type(exc).__name__}: {exc}")
        return 1
    finally:
        flush_quietly(sys.stdout, sys.stderr)


def _leave_parent_loop(signal_mask: Iterable[int]) -> None:
    """Forget the supervisor's event loop (never close it: its epoll set is shared with the
    parent) and its signal handling, then let signals in again."""
    asyncio.events._set_running_loop(None)
    signal.set_wakeup_fd(-1)  # the parent's loop reads signal numbers from that descriptor
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_DFL)  # until the worker's loop installs its own
    signal.pthread_sigmask(signal.SIG_SETMASK, signal_mask)
