"""The server's stderr log, the side of it that is not per request: the format
(`SVC_LOG_FORMAT`), error details, the program's own lines (`log_info`, `log_warn`,
`log_error`), and request ids. The per-request side (`ServerLog`, its access lines, the
request counts of the metrics, making ids) is compiled with the request path:
svc.runtime.observability.accesslog, whose names this module re-exports.

Lines are collected in memory and written with one `write` per sweep tick (or when the
buffer grows large), so logging does not cost a syscall per request. `SVC_LOG=quiet` turns
off the access lines; error details and the program's own lines are always written, since
they are the only place a 500's cause appears.

Two formats (`SVC_LOG_FORMAT`): `text`, the default, for a terminal
(`GET /items?limit=5 200 0.3ms`), and `json`, one JSON object per line for a log collector.

Request ids: a request keeps the id it came with in a valid `X-Request-Id` (the parser keeps
it: protocol.valid_request_id), or gets one made (accesslog.new_request_id: a random prefix
per process and a counter, far cheaper than a UUID per request). With JSON logs every request
has one and every answer carries it. With text logs an id is made only when a line is
written about the request (an error's details, a `log_*` call in its handler), so the
default path pays nothing for ids; an answer carries the id whenever its request has one
(the connection writes the header: svc.runtime.http.connection).

The request a handler step runs for is `svc.runtime.http.eager.running.request`, set by
the connection around each step (plain attribute stores, cheaper than a context variable):
that is how `log_info` inside a handler finds its request's id.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from svc.runtime.observability import log_lines
from svc.runtime.http import eager
from svc.runtime.observability.accesslog import (  # noqa: F401 - part of this module's API
    FLUSH_AT, ServerLog, clock, new_request_id, request_id,
)
from svc.runtime.http.protocol import valid_request_id  # noqa: F401 - part of this API
from svc.runtime.lib.support import SvcError
from svc.runtime.services import current as current_services

if TYPE_CHECKING:
    from svc.runtime.http.protocol import Request

FORMAT_VARIABLE = "SVC_LOG_FORMAT"
FORMATS = ("text", "json")

# --- the format ----------------------------------------------------------------------------------

def log_format_from_env() -> str | SvcError:
    """`SVC_LOG_FORMAT`: `text` (the default, also when unset) or `json`, in any case."""
    raw = os.environ.get(FORMAT_VARIABLE)
    if raw is None:
        return "text"
    text = raw.strip().lower()
    if text in FORMATS:
        return text
    return SvcError("invalid", f"{FORMAT_VARIABLE} must be 'text' or 'json' (got {raw!r})")


def quiet_from_env() -> bool:
    """`SVC_LOG=quiet` (any case): no access lines."""
    return os.environ.get("SVC_LOG", "").strip().lower() == "quiet"


# --- lines that are not per request (the access line is accesslog.py's) -------------------------

def standalone_error(message: str) -> str:
    """An error line in JSON that is not about a request (jobs, schedules, the worker
    supervisor's `worker ... killed` line)."""
    return log_lines.standalone("error", message, clock.now())


def standalone(log: ServerLog, level: str, message: str) -> None:
    """A line at `level` that is not about a request (a schedule's run at info, a thread a
    request left at warn): the message as is in text, like an error's (text lines carry no
    level), a JSON object with its `"level"` in JSON, so a collector does not count routine
    runs as errors."""
    log.add(log_lines.standalone(level, message, clock.now()) if log.json else message)


def program_line(as_json: bool, level: str, message: str, fields: dict, rid: str) -> str:
    """One line of the program's own (`log_info`...), in text or JSON."""
    return log_lines.program_line(as_json, level, message, fields, rid, clock.now())


def outbound_line(as_json: bool, req: Request | None, method: str, url: str, outcome: str,
                  seconds: float) -> str:
    """An outbound call's access line. With JSON logs, or with traces on, every request has an
    id (made now if needed: its answer carries the same); otherwise a text line names the
    calling request's id only when it has one."""
    if as_json or current_services().tracer is not None:
        rid = "" if req is None else request_id(req)
    else:
        rid = "" if req is None or not req.rid else req.rid
    return log_lines.outbound_line(as_json, method, url, outcome, seconds, rid, clock.now())


# --- log_info, log_warn, log_error -----------------------------------------------------------------

def _log(level: str, message: str, fields: dict) -> None:
    req = eager.running.request
    rid = "" if req is None else request_id(req)
    log = current_services().log
    if log is not None:
        log.program(level, message, fields, rid)
        return
    # not serving (`main` before `serve`, `svcc test`): at once, in the format asked for
    line = program_line(log_format_from_env() == "json", level, message, fields, rid)
    try:
        sys.stderr.write(line)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def log_info(message: str, fields: dict) -> None:
    """`log_info(message, fields)`: one line on stderr at level info."""
    _log("info", message, fields)


def log_warn(message: str, fields: dict) -> None:
    """`log_warn(message, fields)`: one line on stderr at level warn."""
    _log("warn", message, fields)


def log_error(message: str, fields: dict) -> None:
    """`log_error(message, fields)`: one line on stderr at level error."""
    _log("error", message, fields)


def report(message: str, outside: str | None = None) -> None:
    """An error's details from code the program runs (an outbound call, a forgotten
    transaction), always written: while serving, its request's error line (with the request's
    id) or, outside a request, the server log's error line; not serving (`main`, `svcc test`),
    `outside` (else the message) on stderr at once, in SVC_LOG_FORMAT's format."""
    log, req = current_services().log, eager.running.request
    if log is None:
        write_line(message if outside is None else outside)
    elif req is not None:
        log.request_error(req, None, message)
    else:
        log.error(message)


def write_line(message: str, level: str = "error") -> None:
    """A line outside a server (`main`, `svcc test`), an error's unless `level` says
    otherwise: on stderr at once, in the format SVC_LOG_FORMAT asks for."""
    if log_format_from_env() == "json":
        message = log_lines.standalone(level, message, clock.now())
    try:
        sys.stderr.write(message if message.endswith("\n") else message + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
