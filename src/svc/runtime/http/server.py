"""Listening and graceful shutdown of the built-in HTTP/1.1 server.

`serve(db, port, routes)` is what generated code calls for the `serve` builtin
(docs/internals.md, "Server API"). It listens on 127.0.0.1, gives each TCP connection a
`Connection` (connection.py), keeps a `Watchdog` (watchdog.py) on the event loop while it
serves, and returns at SIGINT/SIGTERM once the requests in flight are answered.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import gc
import os
import socket
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from svc.rules.contract import DEFAULT_WAIT_SECONDS, PROCESSING_LIMIT, Job, Route, Schedule
from svc.process import close_databases, stop_on_signals
from svc.runtime.http import builtin_routes, workers
from svc.runtime.observability import metrics, serverlog, tracing
from svc.runtime.http.connection import App, Connection
from svc.runtime.http.routing import Router
from svc.runtime.traffic.gate import Gate, gate_for, install_guard_limits
from svc.runtime.observability.serverlog import ServerLog, log_format_from_env, quiet_from_env
from svc.runtime.lib.support import SvcError
from svc.runtime.http.watchdog import watch_loop

if TYPE_CHECKING:
    from svc.runtime.background.service import Background

WAIT_VARIABLE = "SVC_HTTP_REQUEST_WAIT_SECONDS"
#: Requests in flight at shutdown get their processing limit and a little more; then the
#: connections still open are cut.
SHUTDOWN_GRACE = PROCESSING_LIMIT + 0.5
#: Seconds between deadline sweeps while shutting down.
SHUTDOWN_TICK = 0.02
#: Net new container objects before a youngest-generation collection (Python's default: 700).
#: Each suspended handler keeps a few dozen alive (its Task, frames, futures), so at 64
#: connections the default threshold is crossed by live objects alone and the collector runs
#: every few requests without finding garbage (measured: ~1.8 µs per database request).
GEN0_THRESHOLD = 20_000


async def serve(db: Any, port: int, routes: list[Route], jobs: list[Job] | None = None,
                schedules: list[Schedule] | None = None,
                demo_routes: bool = True,
                traffic: dict[str, dict] | None = None) -> None | SvcError:
    """Serve `routes` (plus /health, /ready, and /stream and /ws unless `demo_routes` is
    False) on 127.0.0.1:port until SIGINT/SIGTERM, and run the program's `jobs` and
    `schedules` (svc.runtime.background.service) meanwhile. `traffic`: svc.toml's `[cors]` and
    `[rate_limit]` tables (svc.runtime.traffic.gate), the rate limit's buckets shared by the workers.

    With `SVC_WORKERS` above 1 this process becomes the supervisor of that many worker
    processes (svc.runtime.http.workers), each serving through `serve_worker`; unset or 1, it
    serves here, with no supervisor and nothing more to pay.
    """
    routes = [*builtin_routes.serving(demo_routes), *routes]  # what every process serves
    log_format = log_format_from_env()  # refused once, before anything starts
    if isinstance(log_format, SvcError):
        return log_format
    metrics_port = metrics.port_from_env()
    if isinstance(metrics_port, SvcError):
        return metrics_port
    if metrics_port is not None and metrics_port == port:
        return SvcError("invalid", f"SVC_METRICS_PORT must be another port than the "
                                   f"program's own ({port})")
    if tracing.wanted():  # refused once, before any worker starts
        traces = tracing.check_settings()
        if traces is not None:
            return traces
    if os.environ.get(workers.VARIABLE) is not None:
        count = workers.worker_count_from_env()
        if isinstance(count, SvcError):
            return count
        if count > 1:
            wait = wait_seconds_from_env()  # refused once, by the supervisor, not per worker
            if isinstance(wait, SvcError):
                return wait
            install_guard_limits(traffic, shared=True)
            worker = functools.partial(serve_worker, jobs=jobs or [], schedules=schedules or [],
                                       gate=gate_for(traffic, shared=True))
            return await workers.supervise(db, port, routes, count, worker, metrics_port)
    with watch_loop(asyncio.get_running_loop()):
        install_guard_limits(traffic, shared=False)
        return await _serve(db, port, routes, jobs or [], schedules or [],
                            gate=gate_for(traffic, shared=False))


async def serve_worker(db: Any, listener: socket.socket, routes: list[Route],
                       ready: Callable[[], None], jobs: list[Job] | None = None,
                       schedules: list[Schedule] | None = None,
                       gate: Gate | None = None) -> None | SvcError:
    """One worker process of several: serve on the `listener` the supervisor made, and call
    `ready()` where a single server prints its listening line (the supervisor prints it once).
    `gate`: made by the supervisor before forking, so its rate-limit buckets are shared."""
    with watch_loop(asyncio.get_running_loop()):
        return await _serve(db, listener.getsockname()[1], routes, jobs or [], schedules or [],
                            listener, ready, gate)


async def _serve(db: Any, port: int, routes: list[Route], jobs: list[Job],
                 schedules: list[Schedule], listener: socket.socket | None = None,
                 ready: Callable[[], None] | None = None,
                 gate: Gate | None = None) -> None | SvcError:
    wait = wait_seconds_from_env()
    if isinstance(wait, SvcError):
        return wait
    if not isinstance(port, int) or not 0 <= port <= 65535:
        return SvcError("invalid", f"invalid port {port}")
    log_format = log_format_from_env()
    if isinstance(log_format, SvcError):
        return log_format
    metrics_port = metrics.port_from_env()
    if isinstance(metrics_port, SvcError):
        return metrics_port
    raise_open_file_limit()
    loop = asyncio.get_running_loop()
    log = ServerLog(quiet=quiet_from_env(), json=log_format == "json")
    app = App(loop, Router(tuple(routes)), db, wait, log)  # the built-in ones included
    app.gate = gate
    settle_collector()
    try:
        if listener is not None:
            server = await loop.create_server(lambda: Connection(app), sock=listener,
                                              backlog=workers.LISTEN_BACKLOG)
        else:
            server = await loop.create_server(lambda: Connection(app), "127.0.0.1", port,
                                              backlog=workers.LISTEN_BACKLOG, reuse_address=True)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            return SvcError("invalid", f"port {port} is already in use")
        return SvcError("invalid", f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}")
    bound = server.sockets[0].getsockname()[1]
    traced = _start_traces(app, bound)
    if isinstance(traced, SvcError):
        server.close()
        return traced
    endpoint = await _start_metrics(app, metrics_port)
    if isinstance(endpoint, SvcError):
        server.close()
        await tracing.stop()
        return endpoint
    background: Background | None = None
    if jobs or schedules:  # imported only by programs that have them
        from svc.runtime.background.service import start_background

        started = await start_background(db, jobs, schedules, log)
        if isinstance(started, SvcError):
            server.close()
            if endpoint is not None:
                endpoint.close()
            await tracing.stop()
            return started
        background = started
    app.sweeper.start()
    serverlog.active = log  # the log_* builtins' lines join the access lines
    stop = asyncio.Event()
    # Handlers go in before the "listening" line (a supervisor may signal as soon as it reads
    # it) and stay until shutdown is over, so a second Ctrl+C/SIGTERM cannot cut it short.
    with stop_on_signals(loop, stop):
        if ready is None:
            print(f"listening on http://127.0.0.1:{bound}", flush=True)
        else:
            ready()
        try:
            await stop.wait()
        finally:
            if endpoint is not None:
                endpoint.close()
            await shut_down(app, server, background=background)
            serverlog.active = None
            metrics.stop(app)
            await tracing.stop()  # after the last answers: their spans are exported too
    return None


def _start_traces(app: App, port: int) -> SvcError | None:
    """With an OTLP endpoint set (svc.runtime.observability.tracing): export this process's spans, and
    give every request an id (its span and its answer carry the same one)."""
    started = tracing.start(port, app.log, app.loop)
    if started is not None:
        return started
    if tracing.active is not None:
        app.tracer = tracing.active
        app.every_id = True
    return None



async def _start_metrics(app: App, port: int | None) -> asyncio.AbstractServer | None | SvcError:
    """With `SVC_METRICS_PORT` set: count this process's requests, and serve them on that
    port (one process), or write them for the supervisor to serve (a worker: its sweep
    writes them out once per tick). Returns the endpoint this process serves, if any."""
    if port is None:
        return None
    counts = metrics.start(app)
    app.log.set_metrics(counts.requests)
    if metrics.folder is not None:  # a worker: the supervisor serves the sum of the workers
        app.sweeper.hooks.append(metrics.write_snapshot)
        return None
    from svc.runtime.observability import metrics_endpoint  # the client library, only when asked for

    return await metrics_endpoint.start(port, lambda: metrics.merge([counts.snapshot()]))


def settle_collector() -> None:
    """Before serving: what the program built so far (its code, the router, the compiled
    routes, the database handle) lives as long as the server, so it is frozen out of the
    collector's scans (`gc.freeze`, after one collection so no garbage is frozen with it);
    and young collections wait for `GEN0_THRESHOLD` new objects. Cycles are still collected."""
    gc.collect()
    gc.freeze()
    gen0, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(max(GEN0_THRESHOLD, gen0), gen1, gen2)


def stop_password_threads() -> None:
    """Shut down the password hashing pool if the program uses one: svc.runtime.lib.passwords is
    imported by programs that call hash_password or verify_password, and only by them, so a
    server that never hashes neither loads nor stops it (as process.database_module does)."""
    passwords = sys.modules.get("svc.runtime.lib.passwords")
    if passwords is not None:
        passwords.shut_down_pool()


def wait_seconds_from_env() -> int | SvcError:
    raw = os.environ.get(WAIT_VARIABLE)
    if raw is None:
        return DEFAULT_WAIT_SECONDS
    text = raw.strip()
    if not text.isascii() or not text.isdigit() or int(text) <= 0:
        return SvcError("invalid", f"{WAIT_VARIABLE} must be a positive integer (got {raw!r})")
    return int(text)


def raise_open_file_limit() -> None:
    """10,000 connections need more descriptors than the usual soft limit of 1024."""
    try:
        import resource
    except ImportError:  # Windows
        return
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard == resource.RLIM_INFINITY or soft < hard:
            target = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (OSError, ValueError):
        pass


async def shut_down(app: App, server: asyncio.AbstractServer | None,
                    grace: float = SHUTDOWN_GRACE, background: Background | None = None) -> None:
    """Stop accepting, let requests in flight finish (bounded by `grace`), let running jobs and
    scheduled runs finish (bounded by `grace` again; unfinished jobs go back to the queue), stop
    the password hashing threads, close the db.

    Idle connections close at once, so with nothing in flight this returns as soon as their
    close is through: it waits on `app.all_closed`, not on a polling timer.
    """
    app.shutting_down = True
    if server is not None:
        server.close()
    app.sweeper.restart(SHUTDOWN_TICK)
    for conn in list(app.connections):
        conn.shutdown()
    if app.connections:
        try:
            await asyncio.wait_for(app.all_closed.wait(), grace)
        except asyncio.TimeoutError:
            pass
    for conn in list(app.connections):
        if conn.transport is not None:
            conn.transport.abort()
    if background is not None:
        await background.stop(grace)
    app.sweeper.stop()
    app.log.flush()
    try:
        stop_password_threads()
        close_databases()
    finally:
        sys.stdout.flush()
