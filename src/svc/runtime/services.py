"""The optional services of a running program, owned in one place, and their lifecycle.

A program run (`main`, one `svcc test` test) has one `Services` value. It is made by whoever
runs generated code (svc.runner, svc.tools.test_runner) and is current, as a context variable,
while that code runs: every task and every connection callback started inside inherits it, so a
builtin called from generated code (`log_info`, `http_get`, a database statement, `enqueue`)
finds the services of its own program without a module global. `serve` fills in the serving
parts (the log, the tracer, the metrics, the traffic gate, the job runners) for as long as it
serves, and the `App` of the server holds the same value.

The services that a lazily imported module owns for the whole process (its open databases, its
thread pool, its per-loop client sessions) are not fields here: the module joins the lifecycle
registry (`join`) when it is imported, with what to do at loop end, at shutdown, between two
`svcc test` tests, and which gauges it adds to the metrics. Nothing looks modules up by name.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from svc.rules.settings import Settings

if TYPE_CHECKING:
    from svc.runtime.http.routing import Router
    from svc.runtime.observability.accesslog import ServerLog
    from svc.runtime.observability.metrics import ProcessMetrics
    from svc.runtime.observability.tracing import Tracer
    from svc.runtime.traffic.gate import Gate
    from svc.runtime.traffic.rate_limit import Buckets

#: A gauge's rows: metric name → [[label values], value] rows (svc.runtime.observability.metrics).
GaugeRows = dict[str, list]


@dataclass(eq=False)
class Services:
    """What one program run has beyond its code: settings, and while serving, the rest."""

    settings: Settings = field(default_factory=Settings)
    #: `svcc test`: outbound calls answer from `stubs` or reach local hosts only.
    testing: bool = False
    #: The server's log while serving; the `log_*` builtins add their lines to it (None: they
    #: write to stderr at once).
    log: ServerLog | None = None
    #: The spans of this process while it serves with tracing on (svc.runtime.observability.otel).
    tracer: Tracer | None = None
    #: What this process counts while `SVC_METRICS_PORT` is set.
    metrics: ProcessMetrics | None = None
    #: svc.toml's `[cors]` and `[rate_limit]` as the server applies them (test_request too).
    gate: Gate | None = None
    #: svc.toml's `[guard_limits]`: guard name → the buckets of its values.
    guard_buckets: dict[str, Buckets] = field(default_factory=dict)
    #: A supervisor's folder where its workers write their metrics (None: one process).
    metrics_folder: str | None = None
    #: Which worker this process is (0 to SVC_WORKERS-1; a replacement takes its
    #: predecessor's slot), None in a process that is not a worker. On SQLite only worker 0
    #: runs jobs (svc.runtime.background.service).
    worker_slot: int | None = None
    #: The program's name: the `service.name` of its spans unless OTEL_SERVICE_NAME says
    #: otherwise (the runner sets it: the project's folder, else the entry file's name).
    name: str = "svc"
    #: `http_stub` answers of the running `svcc test` test: (method, url) → Response.
    stubs: dict[tuple[str, str], Any] = field(default_factory=dict)
    #: `python_stub` answers of the running `svcc test` test: `@python` function name → its
    #: `Result` value (svc.runtime.lib.python_calls).
    python_stubs: dict[str, Any] = field(default_factory=dict)
    #: The job runners of this process: `enqueue` wakes them.
    job_wakers: set[asyncio.Event] = field(default_factory=set)
    #: test_request's routers, one per route list (each test loads the program anew).
    routers: dict[int, tuple[list, Router]] = field(default_factory=dict)

    def wake_job_runners(self) -> None:
        for event in self.job_wakers:
            event.set()


#: The services of code that runs outside any program run (the runtime's own unit tests, a
#: builtin called from Python): settings' defaults, nothing serving.
_outside = Services()
_current: ContextVar[Services] = ContextVar("svc_services", default=_outside)
#: `current()`: the services of the program run the calling code belongs to (one C call: the
#: database builtins ask it once per statement).
current = _current.get


def use(services: Services) -> None:
    """Make `services` current for the rest of the calling task (or thread), and for the tasks
    it starts: where no block encloses the run (a test's scenario, a benchmark's driver)."""
    _current.set(services)


@contextmanager
def running(services: Services) -> Iterator[Services]:
    """Make `services` current for the code run inside (and every task it starts)."""
    token = _current.set(services)
    try:
        yield services
    finally:
        _current.reset(token)


# --- the lifecycle registry ---------------------------------------------------------------------

@dataclass(frozen=True)
class Component:
    """What a lazily imported module does at each step of a program's life (each optional)."""

    name: str
    #: Before the event loop of a program run ends (close client sessions bound to it).
    at_loop_end: Callable[[], Awaitable[None]] | None = None
    #: When the server shuts down and after each `svcc test` test (close databases, stop
    #: thread pools). Must be safe to call when there is nothing to close.
    at_shutdown: Callable[[], None] | None = None
    #: Between two `svcc test` tests (tables of test doubles, caches of the program's values).
    between_tests: Callable[[], None] | None = None
    #: Adds the module's gauges to a metrics snapshot (queue depths, pool sizes).
    gauges: Callable[[GaugeRows], None] | None = None
    #: Before worker processes are forked (`SVC_WORKERS`): why they cannot be, or None.
    refuses_fork: Callable[[], str | None] | None = None
    #: In a worker just forked, on its own event loop: make fresh what the parent's was
    #: (threads, connections, pools); a message when that fails.
    after_fork: Callable[[], Awaitable[str | None]] | None = None


_components: dict[str, Component] = {}


def join(component: Component) -> None:
    """Called once by a module when it is imported; joining again replaces the entry."""
    _components[component.name] = component


def joined() -> list[Component]:
    return list(_components.values())


async def end_loop() -> None:
    """Before a program run's event loop ends."""
    for component in joined():
        if component.at_loop_end is not None:
            await component.at_loop_end()


def shut_down() -> None:
    """At the server's shutdown and after each test: every component that holds resources
    releases them (each one even when another fails: the first failure is raised after)."""
    problem: BaseException | None = None
    for component in joined():
        if component.at_shutdown is None:
            continue
        try:
            component.at_shutdown()
        except Exception as exc:  # noqa: BLE001 - the others must still close
            problem = problem or exc
    if problem is not None:
        raise problem


def reset_between_tests() -> None:
    for component in joined():
        if component.between_tests is not None:
            component.between_tests()


def fork_refusal() -> str | None:
    """Why worker processes cannot be forked from this one, or None."""
    for component in joined():
        reason = None if component.refuses_fork is None else component.refuses_fork()
        if reason is not None:
            return reason
    return None


async def after_fork() -> str | None:
    """In a worker just forked: every component made fresh; the first failure's message."""
    for component in joined():
        if component.after_fork is not None:
            problem = await component.after_fork()
            if problem is not None:
                return problem
    return None


def add_gauges(rows: GaugeRows) -> None:
    """Every joined module's gauges, added to a metrics snapshot's rows."""
    for component in joined():
        if component.gauges is not None:
            component.gauges(rows)
