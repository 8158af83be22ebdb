"""The server log's rare lines, formatted: error details, the program's own lines
(`log_info`...), a schedule's info line and an outbound call's line, in text or JSON.

Pure formatting: the time text and the request id are given (the caller has the clock and
makes ids: svc.runtime.observability.accesslog), so this module imports neither the access
log nor the server log, and both can use it (the per-request access line itself is
accesslog's, compiled with the request path).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from svc.runtime.http.protocol import Request


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


class OutboundLine(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One outbound call (`http_get`, `http_send`) in JSON: `status` is the upstream's, or
    null when the call failed (`outcome` is then the error kind): always there, as the
    reference says, so it has no default for `omit_defaults` to leave out."""
    time: str
    level: str
    message: str
    request_id: str = ""
    method: str
    url: str
    status: Any
    outcome: str
    duration_ms: float


_encode = msgspec.json.Encoder().encode


def request_error_line(as_json: bool, req: Request, route: Any, message: str, trace: str,
                       fault: str, now: str, rid: str, level: str = "error") -> str:
    """An error (or a warning) about a request: `GET /notes: database error: ...
    request_id=...` and a fault's trace after it, or one JSON object."""
    if as_json:
        path = req.target.decode("latin-1").partition("?")[0]
        return _encode(ErrorLine(
            time=now, level=level, message=message, request_id=rid,
            method=req.method, path=path, route=None if route is None else route.route.path,
            fault=fault, trace=trace)).decode("utf-8")
    text = f"{req.method} {req.target.decode('latin-1')}: {message} request_id={rid}"
    return f"{text}\n{trace}" if trace else text


def standalone(level: str, message: str, now: str) -> str:
    """A JSON line that is not about a request (jobs, schedules, the worker supervisor)."""
    return _encode(ErrorLine(time=now, level=level, message=message.rstrip("\n"))
                   ).decode("utf-8") + "\n"


def program_line(as_json: bool, level: str, message: str, fields: dict, rid: str,
                 now: str) -> str:
    """One line of the program's own: `INFO signed in user=ada request_id=...` (text), or
    `{"time":...,"level":"info","message":"signed in","request_id":...,"fields":{"user":"ada"}}`."""
    if as_json:
        return _encode(ProgramLine(time=now, level=level, message=message,
                                   request_id=rid, fields=fields)).decode("utf-8") + "\n"
    parts = [f"{level.upper()} {_text_message(message)}"]
    for key, value in fields.items():
        parts.append(f"{_text_field(key)}={_text_field(value)}")
    if rid:
        parts.append(f"request_id={rid}")
    return " ".join(parts) + "\n"


def outbound_line(as_json: bool, method: str, url: str, outcome: str, seconds: float,
                  rid: str, now: str) -> str:
    """An outbound call's access line: `outbound GET http://host:port/path 200 1.3ms` (the
    error kind in place of the status when it failed; `request_id=...` when the calling
    request has one), or its JSON object."""
    if as_json:
        status = int(outcome) if outcome.isdigit() else None
        return _encode(OutboundLine(
            time=now, level="info", message="outbound", request_id=rid, method=method,
            url=url, status=status, outcome="ok" if status is not None else outcome,
            duration_ms=round(seconds * 1000, 3))).decode("utf-8") + "\n"
    tenths = int(seconds * 10_000 + 0.5)
    tail = f" request_id={rid}" if rid else ""
    return f"outbound {method} {url} {outcome} {tenths // 10}.{tenths % 10}ms{tail}\n"


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
