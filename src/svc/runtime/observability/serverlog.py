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

import msgspec

from svc.runtime.observability import accesslog

from svc.runtime.http import eager
from svc.runtime.observability.accesslog import (  # noqa: F401 - part of this module's API
    FLUSH_AT, ServerLog, clock, new_request_id,
)
from svc.runtime.http.protocol import valid_request_id  # noqa: F401 - part of this API
from svc.runtime.lib.support import SvcError

if TYPE_CHECKING:
    from svc.runtime.http.protocol import Request

FORMAT_VARIABLE = "SVC_LOG_FORMAT"
FORMATS = ("text", "json")

#: The log a server process writes to while it serves (set by svc.runtime.http.server), where the
#: `log_*` builtins add their lines; None elsewhere (`main` before `serve`, `svcc test`), where
#: they write to stderr at once.
active: ServerLog | None = None


def request_id(req: Request) -> str:
    """The request's id, made now if it has none (it then stays with the request, and its
    answer carries it)."""
    rid = req.rid
    if not rid:
        rid = req.rid = new_request_id()
    return rid


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

class ErrorLine(msgspec.Struct, kw_only=True, omit_defaults=True):
    """An error's details: about a request (its id, method, path, route) or about the
    server's own work (jobs, schedules, the worker supervisor: only the message)."""
    time: str
    level: str
    message: str
    request_id: str = ""
    method: str = ""
    path: str = ""
    route: Any = None
    fault: str = ""
    trace: str = ""


class ProgramLine(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A `log_info`, `log_warn` or `log_error` line: the program's fields under `fields`, so
    none can replace a key of the line itself."""
    time: str
    level: str
    message: str
    request_id: str = ""
    fields: dict


_encode = msgspec.json.Encoder().encode


def request_error_line(as_json: bool, req: Request, route: Any, message: str, trace: str,
                       fault: str) -> str:
    """ServerLog.request_error's line: `GET /notes: database error: ... request_id=...` and a
    fault's trace after it, or one JSON object."""
    rid = request_id(req)
    if as_json:
        path = req.target.decode("latin-1").partition("?")[0]
        return _encode(ErrorLine(
            time=clock.now(), level="error", message=message, request_id=rid,
            method=req.method, path=path, route=None if route is None else route.route.path,
            fault=fault, trace=trace)).decode("utf-8")
    text = f"{req.method} {req.target.decode('latin-1')}: {message} request_id={rid}"
    return f"{text}\n{trace}" if trace else text


def standalone_error(message: str) -> str:
    """An error line in JSON that is not about a request (jobs, schedules, the worker
    supervisor's `worker ... killed` line)."""
    return _standalone("error", message)


def _standalone(level: str, message: str) -> str:
    return _encode(ErrorLine(time=clock.now(), level=level, message=message.rstrip("\n"))
                   ).decode("utf-8") + "\n"


def info(log: ServerLog, message: str) -> None:
    """A line at level info that is not about a request (a schedule's run): the message as
    is in text, like an error's (text lines carry no level), a JSON object with
    `"level":"info"` in JSON, so a collector does not count routine runs as errors."""
    log.add(_standalone("info", message) if log.json else message)


def _text_field(value: str) -> str:
    """A key or value on a text line: as is when it is one plain word, else quoted as JSON."""
    if value and value.isprintable() and " " not in value and '"' not in value \
            and "=" not in value:
        return value
    return _encode(value).decode("utf-8")


def _text_message(message: str) -> str:
    """A message on a text line: as is, unless it holds line breaks or other control
    characters (then quoted as JSON, so it stays one line)."""
    return message if message.isprintable() else _encode(message).decode("utf-8")


accesslog.formatting = sys.modules[__name__]  # ServerLog formats its rare lines with these


# --- log_info, log_warn, log_error -----------------------------------------------------------------

def program_line(as_json: bool, level: str, message: str, fields: dict, rid: str) -> str:
    """One line of the program's own: `INFO signed in user=ada request_id=...` (text), or
    `{"time":...,"level":"info","message":"signed in","request_id":...,"fields":{"user":"ada"}}`."""
    if as_json:
        return _encode(ProgramLine(time=clock.now(), level=level, message=message,
                                   request_id=rid, fields=fields)).decode("utf-8") + "\n"
    parts = [f"{level.upper()} {_text_message(message)}"]
    for key, value in fields.items():
        parts.append(f"{_text_field(key)}={_text_field(value)}")
    if rid:
        parts.append(f"request_id={rid}")
    return " ".join(parts) + "\n"


def _log(level: str, message: str, fields: dict) -> None:
    req = eager.running.request
    rid = "" if req is None else request_id(req)
    log = active
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


# --- outbound calls (svc.runtime.lib.outbound) --------------------------------------------------------

class OutboundLine(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One outbound call (`http_get`, `http_send`) in JSON: `status` is the upstream's, or
    None when the call failed (`outcome` is then the error kind)."""
    time: str
    level: str
    message: str
    request_id: str = ""
    method: str
    url: str
    status: Any = None
    outcome: str
    duration_ms: float


def outbound_line(as_json: bool, req: Request | None, method: str, url: str, outcome: str,
                  seconds: float) -> str:
    """An outbound call's access line: `outbound GET http://host:port/path 200 1.3ms` (the
    error kind in place of the status when it failed; `request_id=...` when the calling
    request has one), or its JSON object (every request has an id with JSON logs)."""
    if as_json:
        rid = "" if req is None else request_id(req)
        status = int(outcome) if outcome.isdigit() else None
        return _encode(OutboundLine(
            time=clock.now(), level="info", message="outbound", request_id=rid, method=method,
            url=url, status=status, outcome="ok" if status is not None else outcome,
            duration_ms=round(seconds * 1000, 3))).decode("utf-8") + "\n"
    tenths = int(seconds * 10_000 + 0.5)
    rid = "" if req is None or not req.rid else f" request_id={req.rid}"
    return f"outbound {method} {url} {outcome} {tenths // 10}.{tenths % 10}ms{rid}\n"


def write_line(message: str) -> None:
    """An error line outside a server (`main`, `svcc test`): on stderr at once, in the format
    SVC_LOG_FORMAT asks for."""
    if log_format_from_env() == "json":
        message = standalone_error(message)
    try:
        sys.stderr.write(message if message.endswith("\n") else message + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
