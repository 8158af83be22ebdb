"""Traces: whether this process exports OpenTelemetry spans, and the checks of its settings.

Tracing is off unless `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`)
is set; then every serving process sends its spans over OTLP/HTTP (svc.runtime.observability.otel, which
imports the OpenTelemetry SDK: nothing here does, so a server without tracing neither loads
it nor pays for it at start-up).

`start` gives the tracer of a serving process with tracing on (a `Tracer`: svc.runtime.observability.otel's), which
the server keeps in the program's services (svc.runtime.services) and on its `App`: the
connection, the database builtins, the job and schedule runners test it once per request,
statement or run, and do nothing more when it is None.

`current` is the OpenTelemetry context of the span the code running now belongs to (a
request's server span, a job run's span): a context variable, so the request's handler
carries it into every step (eager.Resumer runs each step in the request's context copy) and
into the tasks it starts, and a database statement made there becomes that span's child.
The connection sets it only when tracing is on; off, it stays None and is never read.

The OTEL_* variables are the SDK's own and it reads them itself. svc checks the ones whose
bad value the SDK would only warn about (falling back to a default, with a traceback in the
log for some) before anything starts, and refuses them with one line naming the variable:
a misspelt sampler would otherwise trace every request and say so only in a warning.
"""

from __future__ import annotations

import os
from contextvars import ContextVar
from collections.abc import Awaitable
from typing import Any, Protocol
from urllib.parse import urlsplit

from svc.runtime.http.context import trace_context_var
from svc.runtime.lib.support import SvcError

ENDPOINT = "OTEL_EXPORTER_OTLP_ENDPOINT"
TRACES_ENDPOINT = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"

#: The OpenTelemetry context whose span the running code belongs to (None: no span).
current: ContextVar[Any] = trace_context_var


class Tracer(Protocol):
    """What the server, the database builtins, the background runners and outbound calls ask
    of the tracer (svc.runtime.observability.otel.Tracing), declared here so that none of them
    imports the SDK's side."""

    def request_started(self, conn: Any, req: Any) -> Any: ...
    def request_left(self, token: Any) -> None: ...
    def request_done(self, conn: Any, req: Any, status: int) -> None: ...
    def rejected(self, conn: Any, method: str, target: bytes, status: int, rid: str) -> None: ...
    def abandoned(self, conn: Any) -> None: ...
    async def statement(self, db: Any, op: str, sql: str, args: tuple, cls: Any) -> Any: ...
    async def transaction_end(self, tx: Any, op: str, call: Awaitable[Any]) -> Any: ...
    async def background(self, name: str, kind: str, attributes: dict[str, Any],
                         call: Awaitable[str | None]) -> str | None: ...
    def outbound_started(self, method: str, target: Any,
                         fields: list[tuple[str, str]]) -> tuple[list[tuple[str, str]], Any]: ...
    async def shut_down(self) -> None: ...

#: OTEL_TRACES_SAMPLER's values (the SDK's built-in samplers).
SAMPLERS = ("always_on", "always_off", "traceidratio", "parentbased_always_on",
            "parentbased_always_off", "parentbased_traceidratio")
RATIO_SAMPLERS = ("traceidratio", "parentbased_traceidratio")
#: The batch span processor's integers (milliseconds or counts), all positive.
BATCH_VARIABLES = ("OTEL_BSP_SCHEDULE_DELAY", "OTEL_BSP_MAX_QUEUE_SIZE",
                   "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "OTEL_BSP_EXPORT_TIMEOUT")
COMPRESSIONS = ("none", "gzip", "deflate")
PROTOCOL = "http/protobuf"


def _set(name: str) -> str | None:
    """The variable's value, None when unset or empty (the SDK treats empty as unset)."""
    value = os.environ.get(name)
    return value if value else None


def wanted() -> bool:
    """Tracing is on: an OTLP endpoint is set, and neither `OTEL_SDK_DISABLED=true` nor
    `OTEL_TRACES_EXPORTER=none` turns it off."""
    if _set(ENDPOINT) is None and _set(TRACES_ENDPOINT) is None:
        return False
    if (_set("OTEL_SDK_DISABLED") or "").strip().lower() == "true":
        return False
    return (_set("OTEL_TRACES_EXPORTER") or "otlp").strip().lower() != "none"


def check_settings() -> SvcError | None:
    """The first bad OTEL_* setting as an error naming it, or None. Only called when tracing
    is wanted; reads the environment, imports nothing."""
    for name in (ENDPOINT, TRACES_ENDPOINT):
        value = _set(name)
        if value is not None and not _is_url(value):
            return _bad(name, value, "an http:// or https:// URL (http://127.0.0.1:4318)")
    exporter = _set("OTEL_TRACES_EXPORTER")
    if exporter is not None and exporter.strip().lower() not in ("otlp", "none"):
        return _bad("OTEL_TRACES_EXPORTER", exporter, "'otlp' or 'none'")
    for name in ("OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"):
        value = _set(name)
        if value is not None and value.strip().lower() != PROTOCOL:
            return _bad(name, value, f"'{PROTOCOL}' (svc exports over HTTP)")
    sampler = _set("OTEL_TRACES_SAMPLER")
    if sampler is not None and sampler.strip().lower() not in SAMPLERS:
        return _bad("OTEL_TRACES_SAMPLER", sampler, "one of " + ", ".join(SAMPLERS))
    argument = _set("OTEL_TRACES_SAMPLER_ARG")
    if argument is not None and sampler is not None and sampler.strip().lower() in RATIO_SAMPLERS:
        ratio = _number(argument)
        if ratio is None or not 0.0 <= ratio <= 1.0:
            return _bad("OTEL_TRACES_SAMPLER_ARG", argument, "a ratio from 0 to 1")
    sizes: dict[str, int] = {}
    for name in BATCH_VARIABLES:
        value = _set(name)
        if value is not None:
            text = value.strip()
            if not (text.isascii() and text.isdigit()) or int(text) <= 0:
                return _bad(name, value, "a positive integer")
            sizes[name] = int(text)
    batch = sizes.get("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512)
    queue = sizes.get("OTEL_BSP_MAX_QUEUE_SIZE", 2048)
    if batch > queue:
        return SvcError("invalid", f"OTEL_BSP_MAX_EXPORT_BATCH_SIZE ({batch}) must not be "
                                   f"larger than OTEL_BSP_MAX_QUEUE_SIZE ({queue})")
    for name in ("OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"):
        value = _set(name)
        if value is not None:
            seconds = _number(value)
            if seconds is None or seconds <= 0:
                return _bad(name, value, "a positive number of seconds")
    for name in ("OTEL_EXPORTER_OTLP_COMPRESSION", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION"):
        value = _set(name)
        if value is not None and value.strip().lower() not in COMPRESSIONS:
            return _bad(name, value, "one of " + ", ".join(COMPRESSIONS))
    return None


def _ratio_sampler() -> str | None:
    """The ratio sampler named without OTEL_TRACES_SAMPLER_ARG, else None: the
    specification's default ratio is 1.0, which the SDK applies only after logging a
    warning, so svc passes that sampler itself (svc.runtime.observability.otel)."""
    sampler = (_set("OTEL_TRACES_SAMPLER") or "").strip().lower()
    if sampler in RATIO_SAMPLERS and _set("OTEL_TRACES_SAMPLER_ARG") is None:
        return sampler
    return None


def _is_url(value: str) -> bool:
    try:
        parts = urlsplit(value.strip())
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def _number(text: str) -> float | None:
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if value == value and value not in (float("inf"), float("-inf")) else None


def _bad(name: str, value: str, expected: str) -> SvcError:
    return SvcError("invalid", f"{name} must be {expected} (got {value!r})")


def start(port: int, log: Any, loop: Any, program: str) -> Tracer | None | SvcError:
    """The tracer that exports this process's spans when tracing is wanted (each serving
    process: a worker after its fork, so the exporter's thread is its own), else None.
    `program`: the default `service.name` (when neither OTEL_SERVICE_NAME nor
    OTEL_RESOURCE_ATTRIBUTES names one)."""
    if not wanted():
        return None
    problem = check_settings()
    if problem is not None:
        return problem
    from svc.runtime.observability import otel  # the SDK, only now

    made: Tracer | SvcError = otel.start(port, log, loop, program, _ratio_sampler())
    return made
