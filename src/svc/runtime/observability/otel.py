"""The OpenTelemetry side of traces: the SDK's tracer, exporter and the spans svc makes.

Imported only when tracing is on (svc.runtime.observability.tracing.start), so the SDK is loaded by the
processes that export and by no other. One `Tracing` per serving process: a TracerProvider
with the program's resource (OTEL_SERVICE_NAME, else the program's name), the sampler the
SDK reads from OTEL_TRACES_SAMPLER, and a BatchSpanProcessor feeding the OTLP/HTTP exporter
(both configured by the SDK from the OTEL_* variables). Spans are queued in memory and sent
by the processor's own thread every OTEL_BSP_SCHEDULE_DELAY milliseconds: ending a span on
the request path is a queue append, and a collector that is down never slows an answer
(its spans are dropped when the queue is full).

The spans:
- a server span per request, `GET /items/{id}` (the route's pattern; the method alone when
  no route matched), with the HTTP semantic conventions' attributes and the request id,
  status error on a 5xx; a valid `traceparent` makes it that span's child;
- a client span per database statement (`db_exec`, `db_all`, `db_one`, `db_commit`,
  `db_rollback`), a child of the span of the code that made it (`current`);
- a consumer span per job run and an internal span per scheduled run, the parents of the
  statements they make.

The SDK's own complaints (an export that failed, a full queue) go to the server log with a
`traces:` prefix, each kind once per process, without a traceback: a collector that is down
would otherwise add lines at every batch, and a full queue one per request.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import time
from time import perf_counter
from typing import Any, Awaitable

from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import ParentBased, Sampler, TraceIdRatioBased
from opentelemetry.trace import SpanKind, Status, StatusCode, set_span_in_context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from svc.runtime.observability.accesslog import KNOWN_METHODS, clock
from svc.runtime.http.context import trace_context_var as current
from svc.runtime.lib.support import SvcError

#: How long the shutdown waits for the last spans to be exported.
SHUTDOWN_SECONDS = 3.0
#: The instrumentation scope's name.
SCOPE = "svc"

_propagator = TraceContextTextMapPropagator()
_SERVER, _CLIENT = SpanKind.SERVER, SpanKind.CLIENT
_ERROR = StatusCode.ERROR


def start(port: int, log: Any, loop: asyncio.AbstractEventLoop, program: str,
          ratio_sampler: str | None) -> Tracing | SvcError:
    """This process's tracer, its exporter started; or the SDK's refusal of a setting.
    `program`: the default service name; `ratio_sampler`: a ratio sampler named without its
    ratio (svc.runtime.observability.tracing), which gets the default 1.0 here."""
    _route_sdk_messages(log, loop)
    try:
        exporter = OTLPSpanExporter()
        processor = BatchSpanProcessor(exporter)
    except ValueError as exc:  # a setting the SDK refuses that svc did not check itself
        return SvcError("invalid", f"traces: {exc}")
    provider = TracerProvider(resource=_resource(program), sampler=_sampler(ratio_sampler),
                              shutdown_on_exit=False)
    provider.add_span_processor(processor)
    return Tracing(provider, exporter, port)


def _resource(program: str) -> Resource:
    """The SDK's resource (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES), named after the
    program when neither names the service (the SDK would say `unknown_service`)."""
    resource = Resource.create({})
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": program}))
    return resource


def _sampler(ratio_sampler: str | None) -> Sampler | None:
    """None: the SDK reads OTEL_TRACES_SAMPLER itself. A ratio sampler without its ratio
    gets the specification's default, 1.0, here (the SDK would warn first)."""
    if ratio_sampler is None:
        return None
    ratio = TraceIdRatioBased(1.0)
    return ParentBased(ratio) if ratio_sampler.startswith("parentbased") else ratio


class _Once(logging.Handler):
    """The SDK's log records as `traces:` lines in the server log, each message once."""

    def __init__(self, log: Any, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(logging.WARNING)
        self.log = log
        self.loop = loop
        self.said: set[tuple[str, Any]] = set()
        self.guard = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        key = (record.name, record.msg)
        with self.guard:
            if key in self.said:
                return
            self.said.add(key)
        try:
            text = record.getMessage()
        except Exception:  # noqa: BLE001 - a record that does not format: its template
            text = str(record.msg)
        if record.exc_info and record.exc_info[1] is not None:
            text += f" ({record.exc_info[1]})"
        line = f"traces: {text} (said once)"
        try:  # the exporter's thread: the log belongs to the loop's
            self.loop.call_soon_threadsafe(self.log.error, line)
        except RuntimeError:  # the loop is closed: shutting down
            pass


def _route_sdk_messages(log: Any, loop: asyncio.AbstractEventLoop) -> None:
    sdk = logging.getLogger("opentelemetry")
    for handler in list(sdk.handlers):
        if isinstance(handler, _Once):
            sdk.removeHandler(handler)
    sdk.addHandler(_Once(log, loop))
    sdk.propagate = False  # never Python's last-resort handler, with its tracebacks
    sdk.setLevel(logging.WARNING)


def _parent(req: Any) -> Context | None:
    """The context of a valid `traceparent` (and its `tracestate`), else None: a new trace.
    The SDK's W3C propagator checks the fields (version, ids not all zero, flags)."""
    header = req.header(b"traceparent")
    if header is None:
        return None
    carrier = {"traceparent": header.decode("latin-1")}
    state = req.header(b"tracestate")
    if state is not None:
        carrier["tracestate"] = state.decode("latin-1")
    return _propagator.extract(carrier)


def operation_name(sql: str) -> str:
    """The statement's first keyword, upper case (`SELECT`, `INSERT`, `WITH`), or ""."""
    words = sql.lstrip(" \t\r\n(").split(None, 1)
    word = words[0] if words else ""
    return word.upper() if word.isalpha() else ""


class Tracing:
    """The spans of one serving process."""

    def __init__(self, provider: TracerProvider, exporter: OTLPSpanExporter, port: int) -> None:
        self.provider = provider
        self.exporter = exporter
        self.tracer = provider.get_tracer(SCOPE)
        self.port = port

    # --- requests ---------------------------------------------------------------------------

    def _server_span(self, conn: Any, method: str, path: str, route: Any, started: float,
                     req: Any = None, status: int = 0, rid: str = "") -> Any:
        """The request's span, started at `started` (a perf_counter() value). With `status`,
        the request is answered: its span gets every attribute at once (one call into the
        SDK, each attribute checked once) and its status, to be ended at once. The
        attributes are made only for a span that records: a request the sampler leaves out
        costs the SDK's decision and little more."""
        known = method in KNOWN_METHODS
        template = None if route is None else route.route.path
        name = method if known else "HTTP"
        if template is not None:
            name += " " + template
        span = self.tracer.start_span(name, context=None if req is None else _parent(req),
                                      kind=_SERVER,
                                      start_time=int((started + clock.offset) * 1e9))
        if not span.is_recording():
            return span
        attributes: dict[str, Any] = {
            "http.request.method": method if known else "_OTHER",
            "url.path": path,
            "url.scheme": "http",
            "server.port": self.port,
        }
        if not known:
            attributes["http.request.method_original"] = method
        if template is not None:
            attributes["http.route"] = template
        peer = conn.transport.get_extra_info("peername") if conn.transport is not None else None
        if isinstance(peer, tuple) and len(peer) >= 2:
            attributes["client.address"] = peer[0]
            attributes["client.port"] = peer[1]
        if req is not None:
            agent = req.header(b"user-agent")
            if agent is not None:
                attributes["user_agent.original"] = agent.decode("latin-1")
        if status:
            attributes.update(_answered(status, rid))
            if status >= 500:
                span.set_status(Status(_ERROR))
        span.set_attributes(attributes)
        return span

    def request_started(self, conn: Any, req: Any) -> Any:
        """A handler that may await is about to run (for the route `conn.route`): its
        request's span is opened now, so the statements it makes are its children. Returns
        the token to reset `current` (context.trace_context_var) with after its first step."""
        span = conn.span = self._server_span(conn, req.method, req.path, conn.route,
                                             req.started, req)
        return current.set(set_span_in_context(span))

    def request_left(self, token: Any) -> None:
        current.reset(token)

    def request_done(self, conn: Any, req: Any, status: int) -> None:
        """The answer is written: the request's span ends (opened now if no handler that
        may await ran: a plain handler, /health, a 404)."""
        span = conn.span
        if span is None:
            self._server_span(conn, req.method, req.path, conn.route, req.started, req, status,
                              req.rid).end()
            return
        conn.span = None
        if span.is_recording():
            span.set_attributes(_answered(status, req.rid))
            if status >= 500:
                span.set_status(Status(_ERROR))
        span.end()

    def rejected(self, conn: Any, method: str, target: bytes, status: int, rid: str) -> None:
        """A request refused before it was read whole (malformed, too large, too slow; its
        span starts when the refusal is written)."""
        path = target.decode("latin-1").partition("?")[0]
        self._server_span(conn, method, path, None, perf_counter(), None, status, rid).end()

    def abandoned(self, conn: Any) -> None:
        """The client left while its handler was suspended: the span ends without an answer."""
        span, conn.span = conn.span, None
        if span is not None and span.is_recording():
            span.set_attribute("error.type", "connection closed")
            span.set_status(Status(_ERROR, "the client closed the connection before the answer"))
        if span is not None:
            span.end()

    # --- database statements ------------------------------------------------------------------

    async def statement(self, db: Any, op: str, sql: str, args: tuple, cls: Any) -> Any:
        """Run one statement (`db._submit`) inside a client span. The span has the SQL text,
        never the arguments; a statement that fails sets its status to error with the
        error's kind (its message may quote values)."""
        system = db.dialect
        operation = operation_name(sql)
        span = self.tracer.start_span(operation or system, context=current.get(), kind=_CLIENT)
        if span.is_recording():  # not for a statement of a request the sampler left out
            attributes = {"db.system.name": system, "db.system": system, "db.query.text": sql}
            if operation:
                attributes["db.operation.name"] = operation
            span.set_attributes(attributes)
        return await _ended_after(span, db._submit(op, sql, args, cls))

    async def transaction_end(self, tx: Any, op: str, call: Awaitable[Any]) -> Any:
        """`db_commit` / `db_rollback`: a client span named COMMIT or ROLLBACK."""
        system = tx.dialect
        span = self.tracer.start_span(op, context=current.get(), kind=_CLIENT,
                                      attributes={"db.system.name": system, "db.system": system,
                                                  "db.operation.name": op,
                                                  "db.query.text": op})
        return await _ended_after(span, call)

    # --- calls to other services -------------------------------------------------------------------

    def outbound_started(self, method: str, target: Any,
                         fields: list[tuple[str, str]]) -> tuple[list[tuple[str, str]], Any]:
        """An `http_get`/`http_send` call about to be sent: a client span, the child of the
        running code's span, and the fields to send with its `traceparent` (and
        `tracestate`) in place of any the program set, so the upstream joins this trace;
        and what to call with the outcome when the call is over (`outbound_done`).
        `target` is svc.runtime.lib.outbound's: `host`, `port`, and `shown`, the URL without
        user, password, query and fragment (as the log shows it)."""
        known = method in KNOWN_METHODS
        span = self.tracer.start_span(method if known else "HTTP", context=current.get(),
                                      kind=_CLIENT)
        if span.is_recording():
            attributes: dict[str, Any] = {
                "http.request.method": method if known else "_OTHER", "url.full": target.shown,
                "server.address": target.host, "server.port": target.port}
            if not known:
                attributes["http.request.method_original"] = method
            span.set_attributes(attributes)
        carrier: dict[str, str] = {}
        _propagator.inject(carrier, context=set_span_in_context(span))
        kept = [(name, value) for name, value in fields
                if name.lower() not in ("traceparent", "tracestate")]
        return kept + list(carrier.items()), functools.partial(self.outbound_done, span)

    @staticmethod
    def outbound_done(span: Any, outcome: str) -> None:
        """The call is over: `outcome` is the answer's status as text, or the error kind
        (`timeout`, `bad_gateway`, `cancelled`). A client span's status is error from 400 on,
        as the HTTP conventions say for a client."""
        if span.is_recording():
            if outcome.isdigit():
                span.set_attribute("http.response.status_code", int(outcome))
                if int(outcome) >= 400:
                    _failed(span, outcome)
            else:
                _failed(span, outcome)
        span.end()

    # --- background work ------------------------------------------------------------------------

    async def background(self, name: str, kind: str, attributes: dict[str, Any],
                         call: Awaitable[str | None]) -> str | None:
        """A job run (`kind` "job") or a scheduled run ("schedule"): one span, the parent
        of the statements its handler makes; None from the run is success, a text is why
        it failed (the span's status)."""
        span = self.tracer.start_span(f"{kind} {name}", context=None,
                                      kind=SpanKind.CONSUMER if kind == "job" else
                                      SpanKind.INTERNAL, attributes=attributes)
        token = current.set(set_span_in_context(span))
        try:
            why = await call
        except BaseException as exc:
            _failed(span, exc.__class__.__name__)
            span.end()
            raise
        finally:
            current.reset(token)
        if why is not None:
            span.set_attribute("error.type", "failed")
            span.set_status(Status(_ERROR, why))
        span.end()
        return why

    # --- the end ----------------------------------------------------------------------------------

    async def shut_down(self) -> None:
        """Export what is queued and stop the exporter's thread, waiting `SHUTDOWN_SECONDS`
        at most: with the collector unreachable the exporter retries with back-off for up to
        its timeout, and a stopping server must not wait for that. The SDK's shutdown blocks,
        so it runs in a thread of its own while the loop (and its watchdog) carries on."""
        stopper = threading.Thread(target=self.provider.shutdown, name="svc-traces-shutdown",
                                   daemon=True)
        stopper.start()
        deadline = time.monotonic() + SHUTDOWN_SECONDS
        while stopper.is_alive() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        if stopper.is_alive():  # give up: the exporter stops retrying, the thread ends
            try:
                self.exporter.shutdown()
            except Exception:  # noqa: BLE001 - nothing more to do at exit
                pass


def _answered(status: int, rid: str) -> dict[str, Any]:
    """The attributes an answer adds to its request's span."""
    attributes: dict[str, Any] = {"http.response.status_code": status}
    if rid:
        attributes["svc.request_id"] = rid
    if status >= 500:
        attributes["error.type"] = str(status)
    return attributes


def _failed(span: Any, kind: str) -> None:
    if span.is_recording():
        span.set_attribute("error.type", kind)
        span.set_status(Status(_ERROR, kind))


async def _ended_after(span: Any, call: Awaitable[Any]) -> Any:
    """Await a database call, then end its span: with error status when the call raised
    (the exception's class) or answered an SvcError (its kind, never its message)."""
    try:
        result = await call
    except BaseException as exc:
        _failed(span, exc.__class__.__name__)
        span.end()
        raise
    if result.__class__ is SvcError:
        _failed(span, result.kind)
    span.end()
    return result
