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
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

from svc.rules.contract import DEFAULT_WAIT_SECONDS, PROCESSING_LIMIT, Job, Route, Schedule
from svc.process import close_databases, stop_on_signals
from svc.rules.settings import Settings
from svc.runtime.http import builtin_routes, workers
from svc.runtime.observability import metrics, tracing
from svc.runtime.http.connection import App, Connection
from svc.runtime.http.routing import Router
from svc.runtime.traffic.gate import Gate, gate_for, install_guard_limits
from svc.runtime.observability.serverlog import ServerLog, log_format_from_env, quiet_from_env
from svc.runtime.lib.support import SvcError
from svc.runtime.http.watchdog import watch_loop
from svc.runtime.services import current as current_services

if TYPE_CHECKING:
    from svc.runtime.observability.tracing import Tracer
    from svc.runtime.services import Services

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
                settings: Settings | None = None) -> None | SvcError:
    """Serve `routes` (plus /health, /ready, and /stream and /ws unless svc.toml's `[server]
    demo_routes = false`) on 127.0.0.1:port until SIGINT/SIGTERM, and run the program's `jobs`
    and `schedules` (svc.runtime.background) meanwhile, as `settings` (svc.toml's tables) say.

    With `SVC_WORKERS` above 1 this process becomes the supervisor of that many worker
    processes (svc.runtime.http.workers), each serving through `serve_worker`; unset or 1, it
    serves here, with no supervisor and nothing more to pay.
    """
    settings = settings or Settings()
    jobs, schedules = jobs or [], schedules or []
    routes = [*builtin_routes.serving(settings.demo_routes), *routes]  # what every process serves
    problem = _settings_problem(port)  # refused once, before anything starts
    if problem is not None:
        return problem
    services = current_services()
    services.settings = settings
    if os.environ.get(workers.VARIABLE) is not None:
        count = workers.worker_count_from_env()
        if isinstance(count, SvcError):
            return count
        if count > 1:
            wait = wait_seconds_from_env()  # refused once, by the supervisor, not per worker
            if isinstance(wait, SvcError):
                return wait
            install_guard_limits(services, shared=True)  # before the fork: shared buckets
            worker = functools.partial(serve_worker, jobs=jobs, schedules=schedules,
                                       gate=gate_for(settings, shared=True))
            return await workers.supervise(db, port, routes, count, worker,
                                           metrics.port_from_env())  # type: ignore[arg-type]
    with watch_loop(asyncio.get_running_loop()):
        install_guard_limits(services, shared=False)
        return await _serve(db, port, routes, jobs, schedules,
                            gate=gate_for(settings, shared=False))


def _settings_problem(port: Any) -> SvcError | None:
    """The first environment setting the server refuses (each named once, by the one process
    or the supervisor): the log format, the metrics port, the OTEL_* settings."""
    log_format = log_format_from_env()
    if isinstance(log_format, SvcError):
        return log_format
    metrics_port = metrics.port_from_env()
    if isinstance(metrics_port, SvcError):
        return metrics_port
    if metrics_port is not None and metrics_port == port:
        return SvcError("invalid", f"SVC_METRICS_PORT must be another port than the "
                                   f"program's own ({port})")
    return tracing.check_settings() if tracing.wanted() else None


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
    """Start the server and the serving services in order, serve until a stop signal, then
    stop them in the reverse order: one exit stack, so a service that fails to start stops
    the ones started before it, and shutdown is the same list read backwards."""
    wait = wait_seconds_from_env()
    if isinstance(wait, SvcError):
        return wait
    if not isinstance(port, int) or not 0 <= port <= 65535:
        return SvcError("invalid", f"invalid port {port}")
    # `serve` refused a bad log format or metrics port before any process started
    setting = metrics.port_from_env()
    metrics_port = None if isinstance(setting, SvcError) else setting
    raise_open_file_limit()
    loop = asyncio.get_running_loop()
    services = current_services()
    log = ServerLog(quiet=quiet_from_env(), json=log_format_from_env() == "json")
    app = App(loop, Router(tuple(routes)), db, wait, log)  # the built-in ones included
    app.gate, app.services = gate, services
    settle_collector()
    async with AsyncExitStack() as stack:
        server = await _listen(app, port, listener)
        if isinstance(server, SvcError):
            return server
        stack.callback(_close_services)  # last: after the last answer
        started = await _start_services(stack, app, _bound_port(server),
                                        metrics_port, db, jobs, schedules)
        if started is not None:
            server.close()
            return started
        stop = asyncio.Event()
        # Handlers go in before the "listening" line (a supervisor may signal as soon as it
        # reads it) and stay until shutdown is over, so a second Ctrl+C/SIGTERM cannot cut it
        # short.
        with stop_on_signals(loop, stop):
            if ready is None:
                print(f"listening on http://127.0.0.1:{_bound_port(server)}",
                      flush=True)
            else:
                ready()
            try:
                await stop.wait()
            finally:
                await shut_down(app, server)
                await stack.aclose()  # the services, in reverse order of their start
    return None


def _bound_port(server: asyncio.AbstractServer) -> int:
    return server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]


async def _listen(app: App, port: int, listener: socket.socket | None
                  ) -> asyncio.AbstractServer | SvcError:
    loop = app.loop
    try:
        if listener is not None:
            return await loop.create_server(lambda: Connection(app), sock=listener,
                                            backlog=workers.LISTEN_BACKLOG)
        return await loop.create_server(lambda: Connection(app), "127.0.0.1", port,
                                        backlog=workers.LISTEN_BACKLOG, reuse_address=True)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            return SvcError("invalid", f"port {port} is already in use")
        return SvcError("invalid", f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}")


async def _start_services(stack: AsyncExitStack, app: App, port: int, metrics_port: int | None,
                          db: Any, jobs: list[Job], schedules: list[Schedule]) -> SvcError | None:
    """The serving services, each pushed on `stack` with its stop as soon as it started:
    traces, metrics (and their endpoint), the log the `log_*` builtins write to, the job and
    schedule runners, the deadline sweep. The first that cannot start is returned."""
    services = app.services
    assert services is not None
    tracer = tracing.start(port, app.log, app.loop, services.name)
    if isinstance(tracer, SvcError):
        return tracer
    if tracer is not None:  # every request gets an id: its span and its answer carry it
        app.tracer, app.every_id, services.tracer = tracer, True, tracer
        stack.push_async_callback(_stop_traces, services, tracer)
    endpoint = await _start_metrics(app, metrics_port)
    if isinstance(endpoint, SvcError):
        return endpoint
    if metrics_port is not None:
        stack.callback(metrics.stop, app)
    if endpoint is not None:
        stack.callback(endpoint.close)
    services.log = app.log  # the log_* builtins' lines join the access lines
    stack.callback(setattr, services, "log", None)
    stack.callback(app.log.flush)  # what the runners wrote while they stopped
    if jobs or schedules:  # imported only by programs that have them
        from svc.runtime.background.service import start_background

        background = await start_background(db, jobs, schedules, app.log,
                                            services.settings.jobs)
        if isinstance(background, SvcError):
            return background
        stack.push_async_callback(background.stop, SHUTDOWN_GRACE)
    app.sweeper.start()
    return None


async def _stop_traces(services: Services, tracer: Tracer) -> None:
    """After the last answers, so their spans are exported too: what is still queued is sent
    (bounded: a collector that does not answer cannot hold the shutdown up for long)."""
    services.tracer = None
    await tracer.shut_down()


def _close_services() -> None:
    """The lazily imported modules' resources (databases, thread pools), once nothing serves."""
    try:
        close_databases()
    finally:
        sys.stdout.flush()


async def _start_metrics(app: App, port: int | None) -> asyncio.AbstractServer | None | SvcError:
    """With `SVC_METRICS_PORT` set: count this process's requests, and serve them on that
    port (one process), or write them for the supervisor to serve (a worker: its sweep
    writes them out once per tick). Returns the endpoint this process serves, if any."""
    if port is None:
        return None
    counts = metrics.start(app)
    app.log.set_metrics(counts.requests)
    assert app.services is not None
    if app.services.metrics_folder is not None:  # a worker: the supervisor serves the sum
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
                    grace: float = SHUTDOWN_GRACE) -> None:
    """Stop accepting, and let requests in flight finish (bounded by `grace`); then stop the
    deadline sweep and write the last lines. The services stop after this (`_serve`'s exit
    stack: running jobs and scheduled runs get their own grace, the databases close last).

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
    app.sweeper.stop()
    app.log.flush()
