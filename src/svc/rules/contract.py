"""What the compiler and the runtime share: integer ranges, limits, and the route description.

Both sides import from here and nowhere else for these facts, so a limit is stated once: the
checker refuses what the server could not serve, and the generated code describes routes in
the terms the router reads (`Route` and `Param`, in Python functions and types; the
`ParamSource` and `ResultKind` enums, which the compiler's `RouteInfo` uses too; and route
paths as `parse_path` reads them). Work outside requests likewise: `Job` and `Schedule`, and
the `TriggerKind` of their attributes, which the parser, checker and editor tools use too.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Any, Callable, Union

# --- integers ---------------------------------------------------------------------------------

I64_MIN = -(2**63)
I64_MAX = 2**63 - 1
I32_MIN = -(2**31)
I32_MAX = 2**31 - 1
INT_RANGES = {"i64": (I64_MIN, I64_MAX), "i32": (I32_MIN, I32_MAX)}

# --- limits -----------------------------------------------------------------------------------

#: Request body, after de-chunking (413 past it), of a route that does not set its own.
BODY_LIMIT = 1_048_576
#: The largest `body_limit` a route may set (`@post("/files", body_limit="1 GiB")`).
BODY_LIMIT_MAX = 64 * 2**30
#: A body over BODY_LIMIT (a route with a larger `body_limit`) has PROCESSING_LIMIT plus one
#: second per this many bytes received to arrive: a client must keep sending at least 64 KiB
#: a second on average, so a slow one cannot hold the connection forever. The handler's own
#: PROCESSING_LIMIT starts when such a body is whole.
BODY_RATE_MIN = 65_536
#: Request line plus headers, counted canonically (431 past it).
HEAD_LIMIT = 65_536
#: A WebSocket message after reassembly (close 1009 past it).
MESSAGE_LIMIT = 1_048_576
#: The close codes a WebSocket handler may send (`ws_close`): RFC 6455's that an endpoint may
#: send, and the applications' own range, 3000-4999 (the others are reserved, or never sent).
PROTOCOL_CLOSE_CODES = frozenset({1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012,
                                  1013, 1014})


def close_code_problem(code: int) -> str | None:
    """Why a WebSocket handler may not close with `code`, or None (a literal is checked when
    compiling, a computed one is a fault)."""
    if code in PROTOCOL_CLOSE_CODES or 3000 <= code <= 4999:
        return None
    return f"{code} is not a close code a WebSocket may send (1000-1003, 1007-1014 or 3000-4999)"
#: Seconds from complete request headers to the response (504 past it).
PROCESSING_LIMIT = 2.0
#: Default seconds a connection may take to send the next request's headers.
DEFAULT_WAIT_SECONDS = 10
#: Jobs waiting for one database thread.
DB_QUEUE_SIZE = 64
#: Python frames a program may use: svc calls nest this deep before "recursion too deep", and
#: the compiler's passes recurse over deeply nested expressions within it. Python 3.11 runs
#: Python-to-Python calls without growing the C stack, so this is safe.
RECURSION_LIMIT = 10_000

# --- the route description ----------------------------------------------------------------------


class ParamSource(enum.Enum):
    """Where a handler parameter's value comes from (docs/reference/language.md, routes)."""

    PATH = "path"    # a `{name}` segment of the path
    QUERY = "query"  # a query parameter; `optional` for a `T?` parameter
    BODY = "body"    # the request body as strict JSON into a class
    RAW = "raw"      # the request body as `bytes` or `view[bytes]`
    DB = "db"        # the `Db` given to `serve`
    HEADERS = "headers"  # the request's header fields (a `Headers` parameter)
    UPLOAD = "upload"  # a file of a multipart body, or a whole raw body (an `Upload` parameter)
    #: an `Events[T]` parameter: the route is an event stream route, whose `async def` handler
    #: sends server-sent events (svc.runtime.http.events.EventStream; type name "Events")
    EVENTS = "events"
    #: a `WebSocket[In, Out]` parameter: the route upgrades to a WebSocket, whose `async def`
    #: handler receives and sends messages (svc.runtime.http.sockets; type name "WebSocket")
    SOCKET = "socket"


#: The sources of the parameters that make a route a stream, whose handler talks to its client
#: for as long as it runs: an event stream, a WebSocket (one per route).
STREAM_SOURCES = frozenset({ParamSource.EVENTS, ParamSource.SOCKET})


class ResultKind(enum.Enum):
    """How a handler's ok value is answered. An `Error` value answers its kind's status,
    whatever the kind of the route."""

    JSON = "json"                    # 200 and the value as JSON
    JSON_OPTIONAL = "json_optional"  # like JSON, but `None` is 404 {"error":"not found"}
    HTML = "html"                    # 200 text/html from an `Html` value
    UNIT = "unit"                    # 204, no body
    # A `Response[T]`: the status and headers the handler chose, the body as JSON, HTML or
    # none (T = unit), by the T of the Response:
    RESPONSE_JSON = "response_json"
    RESPONSE_HTML = "response_html"
    RESPONSE_UNIT = "response_unit"
    RESPONSE_BYTES = "response_bytes"  # a Response[bytes]: the bytes as they are (a download)
    # Built-in routes only:
    TEXT = "text"                    # a constant body: the handler is called once, at startup
    STREAM = "stream"                # /stream: the handler writes a chunked body itself
    WEBSOCKET = "websocket"          # /ws: the connection is upgraded


#: What the router converts a parameter to: a scalar name ("i64" "i32" "f64" "bool" "str") for
#: PATH and QUERY, the generated msgspec.Struct class for BODY, "bytes" or "view" for RAW, "Db"
#: for DB, "Headers" for HEADERS, "Upload" for UPLOAD (`optional` for an `Upload?`).
ParamType = Union[str, type, tuple]  # a tuple: an enum's member names (PATH and QUERY)


@dataclass(frozen=True, slots=True)
class Param:
    """One handler parameter as the runtime binds it: its name, where its value comes from,
    what it is converted to, and whether it may be missing (a `T?` query parameter)."""

    name: str
    source: ParamSource
    type: ParamType = "str"
    optional: bool = False


@dataclass(frozen=True, slots=True)
class Route:
    """A route as the server runs it: the router calls `handler(*bound_args)`, in `params` order.

    Generated code builds these (`_svc_ROUTES`, codegen/route_table.py); the compiler's own
    description of a route, in svc types and names, is `svc.compiler.program.RouteInfo`.
    `handler` is a plain `def` (answered in the callback that read the request) or an
    `async def` (run eagerly, may await); the router picks how to answer it once, at start-up.
    `floats` says the result's type can hold an f64, so an inf or NaN in it is a fault (JSON
    has neither). `retried` says the compiler proved the handler safe to run again when its
    transaction clashes with another one (svc.compiler.effects; svc.runtime.http.retries).
    `body_limit` is the most bytes its body may have (the route's `body_limit`, else
    BODY_LIMIT); a route with UPLOAD parameters receives its body into temporary files.
    """

    method: str
    path: str
    handler: Callable[..., Any]
    params: tuple[Param, ...] = ()
    result: ResultKind = ResultKind.JSON
    floats: bool = False
    retried: bool = False
    body_limit: int = BODY_LIMIT


RESPONSE_KINDS = frozenset({ResultKind.RESPONSE_JSON, ResultKind.RESPONSE_HTML,
                            ResultKind.RESPONSE_UNIT, ResultKind.RESPONSE_BYTES})

# --- work outside requests: durable jobs and schedules ----------------------------------------


class TriggerKind(enum.Enum):
    """What makes a function run outside requests: the attribute above it. The values are the
    attributes' spellings (`@job`, `@every`, `@cron`), so the parser reads them, messages print
    them, and a schedule's stored spec starts with them."""

    JOB = "job"      # @job("name"): a run per `enqueue`
    EVERY = "every"  # @every("5m"): a schedule, once per period
    CRON = "cron"    # @cron("0 3 * * *"): a schedule, at the expression's times (UTC)


#: A job's defaults when its @job attribute does not say (docs/reference/language.md, jobs).
JOB_ATTEMPTS, JOB_BACKOFF_MS, JOB_DEADLINE_MS = 5, 1_000, 60_000
#: A scheduled run's deadline when its @every/@cron attribute does not say.
SCHEDULE_DEADLINE_MS = 60_000
#: The bounds the compiler holds attributes to.
MAX_ATTEMPTS, MIN_PERIOD_MS, MAX_DURATION_MS = 1_000, 1_000, 7 * 86_400_000
#: A job's name: what `enqueue` writes into the database and a runner looks up.
JOB_NAME = re.compile(r"[a-z][a-z0-9_.\-]{0,99}\Z")
_DURATION = re.compile(r"([0-9]{1,9})(ms|s|m|h|d)\Z")
_UNIT_MS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def duration_ms(text: str) -> int | None:
    """`"500ms"`, `"30s"`, `"5m"`, `"1h"`, `"1d"` in milliseconds; None for any other text."""
    match = _DURATION.match(text)
    return int(match.group(1)) * _UNIT_MS[match.group(2)] if match else None


_SIZE = re.compile(r"([0-9]{1,12}) ?(B|KiB|MiB|GiB)\Z")
_UNIT_BYTES = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}
#: How a size is written, for messages.
SIZE_TEXT = 'a size like "10 MiB" (B, KiB, MiB or GiB)'


def size_bytes(text: str) -> int | None:
    """`"512 KiB"`, `"10 MiB"`, `"1GiB"`, `"100 B"` in bytes; None for any other text."""
    match = _SIZE.match(text)
    return int(match.group(1)) * _UNIT_BYTES[match.group(2)] if match else None


def size_text(size: int) -> str:
    """A size in bytes as a person writes it: `10 MiB`, `512 KiB`, `1,000 B`."""
    for unit in ("GiB", "MiB", "KiB"):
        if size % _UNIT_BYTES[unit] == 0:
            return f"{size // _UNIT_BYTES[unit]} {unit}"
    return f"{size:,} B"


def body_limit_problem(text: str) -> str | None:
    """Why a route's `body_limit` cannot be `text`, or None."""
    size = size_bytes(text)
    if size is None or not 1 <= size <= BODY_LIMIT_MAX:
        return (f"body_limit must be {SIZE_TEXT}, from 1 B to {BODY_LIMIT_MAX // 2**30} GiB, "
                f"found {text!r}")
    return None


@dataclass(frozen=True, slots=True)
class Job:
    """A `@job` handler as the runner runs it: `handler(db, payload)`, the payload decoded from
    its JSON text into `payload`; up to `attempts` runs, `backoff_ms` doubled after each failure,
    each run cancelled after `deadline_ms`. Generated code builds these (`_svc_JOBS`)."""

    name: str
    handler: Callable[..., Any]
    payload: Any
    attempts: int = JOB_ATTEMPTS
    backoff_ms: int = JOB_BACKOFF_MS
    deadline_ms: int = JOB_DEADLINE_MS


@dataclass(frozen=True, slots=True)
class Schedule:
    """An `@every` or `@cron` function: `handler(db)` once per period across every process
    sharing the database. `every_ms` is the period of @every (0 for @cron); `cron` the
    expression of @cron ("" for @every)."""

    name: str
    handler: Callable[..., Any]
    every_ms: int = 0
    cron: str = ""
    deadline_ms: int = SCHEDULE_DEADLINE_MS

    @property
    def kind(self) -> TriggerKind:
        return TriggerKind.EVERY if self.every_ms else TriggerKind.CRON

# --- statuses and header fields a handler may set ------------------------------------------------

#: The statuses `respond` takes (a literal outside is a compile error, a computed one a fault).
STATUS_MIN, STATUS_MAX = 200, 599
#: Header fields the server writes itself; a handler may not set them (compared lower-case).
SERVER_HEADERS = frozenset({"content-length", "transfer-encoding", "connection", "date", "upgrade"})
#: RFC 9110 §5.6.2 token: the characters a field name may hold.
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")


def status_problem(status: int) -> str | None:
    """Why `status` cannot be a Response's status, or None."""
    if STATUS_MIN <= status <= STATUS_MAX:
        return None
    return f"status {status} is outside {STATUS_MIN}-{STATUS_MAX}"


def header_problem(name: str, value: str | None = None) -> str | None:
    """Why a handler may not set header `name` (to `value`), or None. `value=None` checks the
    name only (the compiler checks a literal name and a literal value separately)."""
    if not _TOKEN.match(name):
        return f"header name {name!r} is not a token (letters, digits and !#$%&'*+-.^_`|~)"
    if name.lower() in SERVER_HEADERS:
        return f"header {name!r} is written by the server and cannot be set"
    if value is not None:
        return header_value_problem(value)
    return None


def header_value_problem(value: str) -> str | None:
    """Why `value` cannot be a header field value (CR, LF and NUL would split or end it)."""
    for char, shown in (("\r", "CR"), ("\n", "LF"), ("\0", "NUL")):
        if char in value:
            return f"header value {value!r} holds a {shown} character"
    return None


#: Header fields an error's answer may not carry beside the server's own: its body is always
#: the JSON error object (`with_header`, svc.runtime.lib.errors).
ERROR_FIXED_HEADERS = frozenset({"content-type"})


def error_header_problem(name: str, value: str | None = None) -> str | None:
    """Why an error's answer may not carry header `name` (with `value`), or None."""
    problem = header_problem(name, value)
    if problem is None and name.lower() in ERROR_FIXED_HEADERS:
        problem = f"header {name!r} of an error's answer is always application/json"
    return problem


def retry_after_problem(seconds: int) -> str | None:
    """Why `seconds` cannot be a Retry-After delay (RFC 9110 §10.2.3: a non-negative
    integer), or None."""
    if seconds < 0:
        return f"retry_after_s {seconds} is negative (a Retry-After delay is 0 or more seconds)"
    return None


# --- requests a test makes (`headers_of`, `test_request`) ----------------------------------------

def header_line_problem(line: str) -> str | None:
    """Why `line` is not a request header field `Name: value`, or None."""
    name, colon, value = line.partition(":")
    if not colon:
        return f"{line!r} is not a header field: write it 'Name: value'"
    if not _TOKEN.match(name):
        return (f"header name {name!r} (in {line!r}) is not a token (letters, digits and "
                "!#$%&'*+-.^_`|~)")
    return header_value_problem(value.strip(" \t"))


def method_problem(method: str) -> str | None:
    """Why `method` cannot be a request's method, or None."""
    if not _TOKEN.match(method):
        return f"method {method!r} is not an HTTP method (GET, POST, PUT, DELETE, ...)"
    return None


def target_problem(target: str) -> str | None:
    """Why `target` cannot be a request's path (and query), or None."""
    if not target.startswith("/"):
        return f"path {target!r} must start with '/' (a path and query: /api/tasks?limit=5)"
    if any(char <= " " or char == "\x7f" for char in target):
        return f"path {target!r} holds a space or control character (percent-encode it)"
    return None


# --- the path grammar ---------------------------------------------------------------------------

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Unreserved and sub-delim characters plus ':' and '@' (RFC 3986 pchar without '%').
_LITERAL_SEGMENT = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@]+\Z")


class PathError(ValueError):
    """A malformed route path; the message completes "malformed route path '...': it ..."."""


@dataclass(frozen=True, slots=True)
class RoutePath:
    """A route path read once: its segments (None where a capture is) and capture names.

    `segments` are the pieces between the slashes after the leading one ("/" has the one
    segment ""). `shape` is the path with every capture written `{}`: two routes of one shape
    match the same requests.
    """

    segments: tuple[str | None, ...]
    captures: tuple[str, ...]

    @property
    def shape(self) -> str:
        return "/" + "/".join("{}" if s is None else s for s in self.segments)


def parse_path(path: str) -> RoutePath:
    """Read a route path, or raise PathError saying what is wrong with it.

    A capture is a whole segment `{name}`; segments are non-empty (only "/" itself is the
    root); literal segments use URL path characters without percent escapes.
    """
    if not path.startswith("/"):
        raise PathError("must start with '/'")
    if path == "/":
        return RoutePath(("",), ())
    segments: list[str | None] = []
    captures: list[str] = []
    for segment in path[1:].split("/"):
        if segment == "":
            raise PathError("has an empty segment")
        if segment.startswith("{") and segment.endswith("}"):
            name = segment[1:-1]
            if name == "":
                raise PathError("has an empty capture '{}'")
            if not _IDENT.match(name):
                raise PathError(f"has a capture '{{{name}}}' that is not an identifier")
            if name in captures:
                raise PathError(f"captures '{{{name}}}' twice")
            captures.append(name)
            segments.append(None)
        elif not _LITERAL_SEGMENT.match(segment):
            bad = next(c for c in segment if not _LITERAL_SEGMENT.match(c))
            raise PathError(f"has a bad character {bad!r} (a capture is a whole segment '{{name}}')")
        else:
            segments.append(segment)
    return RoutePath(tuple(segments), tuple(captures))
