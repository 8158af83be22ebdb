"""The request path's part of the server log (svc.runtime.serverlog): one call per answered
request, which writes its access line (text or JSON) and counts it for the metrics.

Compiled with the rest of the request path: this call runs once per request whenever access
lines or metrics are on, and as Python it cost more than the 10% of a small request's CPU the
issue allows for JSON lines and metrics together (docs/decisions.md, "Logs, request ids and
metrics"). What is not per request (error details, the program's `log_*` lines, their JSON
objects) is formatted by serverlog.py, imported when first needed.

- `ServerLog` buffers lines and writes them with one `write` per sweep tick (or when the
  buffer grows large), so logging does not cost a syscall per request.
- `RequestCounts` is the metrics' per-route count of requests and their durations' histogram
  (svc.runtime.metrics reads it at scrape time).
- Request ids are made here (`new_request_id`): a random prefix per process, a counter.
"""

from __future__ import annotations

import os
import sys
import time
from time import perf_counter as _perf_counter
from typing import Any, Final

import msgspec

FLUSH_AT = 512
#: Request durations, seconds: svc answers most requests well under a millisecond, and the
#: processing limit is 2 s.
DURATION_BUCKETS: Final[tuple[float, ...]] = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                              0.1, 0.25, 0.5, 1.0, 2.5)
BUCKET_COUNT: Final = 12  # len(DURATION_BUCKETS)
#: The route label of a request no route answered (404, 405, a request refused before it was
#: routed). A route's label is its pattern, which starts with "/", so they cannot clash.
NO_ROUTE: Final = "none"
#: Methods counted under their own name; any other method is "other" (a client may send any
#: token there, and a label must not take values without bound).
KNOWN_METHODS: Final = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"})

# Final: mypyc keeps these in C variables; another module-level name costs a dict lookup at
# each use (measured: ~100 instructions each, several per request).
_encode: Final = msgspec.json.Encoder().encode
perf_counter: Final = _perf_counter


# --- request ids ---------------------------------------------------------------------------------

class Ids:
    """Request ids: a random prefix per process and a counter."""

    def __init__(self) -> None:
        self.prefix = ""
        self.counter = 0
        self.renew()

    def renew(self) -> None:
        """A fresh prefix (and counter) for this process; a forked worker gets its own."""
        self.prefix = os.urandom(6).hex() + "-"
        self.counter = 0

    def next(self) -> str:
        self.counter += 1
        return self.prefix + str(self.counter)


ids: Final = Ids()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=ids.renew)


def new_request_id() -> str:
    """`3f9a1c2e07b4-17`: 12 random hex digits per process, then a counter."""
    return ids.next()


# --- JSON pieces ---------------------------------------------------------------------------------

class Clock:
    """RFC 3339 UTC times with milliseconds, made once per millisecond (a busy server writes
    many lines in one), the date and time part once per second.

    The time comes from a `perf_counter()` value the caller has anyway (the access hook's
    end of the request) and the wall clock's offset from it, read again at every flush of
    the log (each sweep tick, 0.1 s): no clock call per line."""

    def __init__(self) -> None:
        self.ms = -1
        self.second = -1
        self.prefix = ""
        self.text = ""
        self.offset = 0.0
        self.sync()

    def sync(self) -> None:
        self.offset = time.time() - perf_counter()

    def now(self, perf: float = -1.0) -> str:
        """The time `perf` (a perf_counter() value; now when not given) as RFC 3339."""
        if perf < 0:  # a line that is not per request: read the wall clock itself
            self.sync()
            perf = perf_counter()
        ms = int((perf + self.offset) * 1000)
        if ms != self.ms:
            self.ms = ms
            second = ms // 1000
            if second != self.second:
                self.second = second
                self.prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
            fraction = ms % 1000
            self.text = f"{self.prefix}.{fraction // 100}{fraction // 10 % 10}{fraction % 10}Z"
        return self.text


clock: Final = Clock()


def inside_quotes(text: str) -> str:
    """What goes between the quotes of a JSON string of a request target or a request id.
    Both are printable ASCII (llhttp refuses control characters and other bytes in a target,
    and a request id is checked: protocol.valid_request_id), so only `"` and `\\` need
    escaping, and the common text needs none: testing for them is several times cheaper
    than an encoder call."""
    if '"' in text or "\\" in text:
        return _encode(text).decode("utf-8")[1:-1]
    return text


#: "000" to "999": the decimals of a duration in milliseconds; "0" to "999": statuses and
#: whole milliseconds (an int made a text costs more than a look-up).
_DECIMALS: Final = tuple(str(1000 + n)[1:] for n in range(1000))
_DECIMALS_PLAIN: Final = tuple(str(n) for n in range(1000))
#: route → the end of its JSON line, `,"route":"/tasks/{id}"}`, made once per route.
_route_texts: Final[dict[Any, str]] = {None: ',"route":null}'}


def route_text(route: Any) -> str:
    text = _route_texts.get(route)
    if text is None:
        text = _route_texts[route] = \
            ',"route":' + _encode(route.route.path).decode("utf-8") + "}"
    return text


def access_json(method: str, target: bytes, status: int, now: float, elapsed: float,
                route: Any, rid: str, client: str | None) -> str:
    """One request as a JSON line, keys in this order (`query` only when there is one):
    time, level, message, request_id, method, path, query, status, duration_ms, client, route.
    `client` is the peer as a JSON string (`"127.0.0.1:5000"`) or None.

    One f-string without format specs (mypyc builds it by concatenation; a spec makes it a
    `str.format` call), the duration made of integers (`format(x, ".3f")` alone cost ~2,000
    instructions), strings escaped only when they must be. Measured against a msgspec Struct
    built positionally and encoded in C: ~2,500 instructions a line fewer."""
    path, _, query = target.decode("latin-1").partition("?")
    query_text = ',"query":"' + inside_quotes(query) + '"' if query else ""
    micros = int(elapsed * 1_000_000 + 0.5)
    whole = micros // 1000
    # a method (an HTTP token) and an address ("127.0.0.1:5000", "[::1]:5000") need no
    # escaping; numbers below 1000 (statuses, most durations) are texts made once
    return (f'{{"time":"{clock.now(now)}","level":"info","message":"request",'
            f'"request_id":"{inside_quotes(rid)}","method":"{method}",'
            f'"path":"{inside_quotes(path)}"{query_text},"status":{_DECIMALS_PLAIN[status]},'
            f'"duration_ms":{_DECIMALS_PLAIN[whole] if whole < 1000 else str(whole)}.'
            f'{_DECIMALS[micros % 1000]},"client":{"null" if client is None else client}'
            f'{route_text(route)}\n')


def peer_json(conn: Any) -> str | None:
    """The client's "address:port" as a JSON string (`"127.0.0.1:5000"`: nothing in it needs
    escaping) for a JSON line, asked once per connection and kept in its `client`; None when
    the transport has no address (a Unix socket)."""
    client = conn.client
    if client is None:
        name = conn.transport.get_extra_info("peername")
        client = conn.client = f'"{name[0]}:{name[1]}"' \
            if isinstance(name, tuple) and len(name) >= 2 else ""
    return client or None


# --- counting for the metrics ----------------------------------------------------------------------

class RouteCounts:
    """One route's requests: the count by method and status, the durations' histogram
    (bucket counts, the last past every bound, and their sum)."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.by_method: dict[str, dict[int, int]] = {}  # method → status → count
        self.buckets: list[int] = [0] * (len(DURATION_BUCKETS) + 1)
        self.total = 0.0


class RequestCounts:
    """The requests one server process answered, by route (svc.runtime.metrics). Plain
    dicts keyed by a str and an int, and a search of the bounds written out: no tuple key
    to build and hash, no call of `bisect` (measured: about half the cost)."""

    def __init__(self) -> None:
        self.routes: dict[Any, RouteCounts] = {}  # CompiledRoute (None: no route) → counts

    def observe(self, route: Any, method: str, status: int, seconds: float) -> None:
        counts = self.routes.get(route)
        if counts is None:
            counts = self.routes[route] = RouteCounts(
                NO_ROUTE if route is None else route.route.path)
        if route is None and method not in KNOWN_METHODS:
            method = "other"
        by_status = counts.by_method.get(method)
        if by_status is None:
            by_status = counts.by_method[method] = {}
        by_status[status] = by_status.get(status, 0) + 1
        bounds = DURATION_BUCKETS
        index = 0
        while index < BUCKET_COUNT and seconds > bounds[index]:
            index += 1
        counts.buckets[index] += 1
        counts.total += seconds


# --- the log ---------------------------------------------------------------------------------------

#: What formats the lines that are not per request (error details, the program's lines):
#: svc.runtime.serverlog, which sets this when it is imported. It imports this module, so
#: this one does not import it back; the connection imports both.
formatting: Any = None


class ServerLog:
    """The log of one server process: access lines, error details and the program's lines.

    `json`: the format. `metrics`: the request counts when `SVC_METRICS_PORT` is set; the
    access hook feeds them too, so the connection calls it while `on` is true (access lines
    or metrics wanted). The server says both. A log made without saying its format takes both
    from the environment as a server would (text when `SVC_LOG_FORMAT` is not valid, which
    the server refuses before it makes one; counting into counts of its own when
    `SVC_METRICS_PORT` is set): how bench/instructions.py measures them."""

    def __init__(self, quiet: bool = False, stream: Any = None, json: bool | None = None,
                 metrics: RequestCounts | None = None) -> None:
        self.quiet = quiet
        if json is None:
            json = os.environ.get("SVC_LOG_FORMAT", "").strip().lower() == "json"
            if metrics is None and os.environ.get("SVC_METRICS_PORT"):
                metrics = RequestCounts()
        self.json: bool = json
        self.lines: list[str] = []
        self.stream = stream
        self.metrics = metrics
        #: The connection calls `access` for every answer only when this is true.
        self.on = not quiet or metrics is not None

    def set_metrics(self, metrics: RequestCounts | None) -> None:
        self.metrics = metrics
        self.on = not self.quiet or metrics is not None

    def access(self, method: str, target: bytes, status: int, started: float,
               route: Any = None, rid: str = "", client: Any = None) -> None:
        """One answered request: `GET /search?q=x 200 0.4ms` (method, request target as
        received, status, duration; then `request_id=...` when the request has an id), or its
        JSON object. `client` is the connection, asked for the peer address in JSON only
        (`peer_json`).

        The target stays bytes until here, so a quiet server never decodes it."""
        now = perf_counter()
        elapsed = now - started
        metrics = self.metrics
        if metrics is not None:
            metrics.observe(route, method, status, elapsed)
        if self.quiet:
            return
        lines = self.lines
        if self.json:
            lines.append(access_json(method, target, status, now, elapsed, route,
                                     rid or new_request_id(),
                                     None if client is None else peer_json(client)))
        else:  # the duration in tenths of a millisecond, rounded, as integers: formatting the
            # float (`format(x, ".1f")`) cost ~2,000 instructions a line
            tenths = int(elapsed * 10_000 + 0.5)
            if rid:
                lines.append(f"{method} {target.decode('latin-1')} {status} "
                             f"{tenths // 10}.{tenths % 10}ms request_id={rid}\n")
            else:
                lines.append(f"{method} {target.decode('latin-1')} {status} "
                             f"{tenths // 10}.{tenths % 10}ms\n")
        if len(lines) >= FLUSH_AT:
            self.flush()

    def request_error(self, req: Any, route: Any, message: str, trace: str = "",
                      fault: str = "") -> None:
        """An error's details about a request (a fault, a database error's SQL): with the
        request's id (made now if it has none, so its answer carries it too).

        Text: `GET /notes: database error: ... request_id=...`, a fault's trace on the lines
        after. JSON: one object, a fault as one line (`fault`: what and the .svc line) and
        its trace (`trace`, as text would show it)."""
        self.add(formatting.request_error_line(self.json, req, route, message, trace, fault))

    def error(self, message: str) -> None:
        """An error's details not about a request (jobs, schedules): the message as is, or
        a JSON object with it."""
        if self.json:
            message = formatting.standalone_error(message)
        self.add(message)

    def program(self, level: str, message: str, fields: dict, rid: str) -> None:
        """A `log_info`/`log_warn`/`log_error` line."""
        self.add(formatting.program_line(self.json, level, message, fields, rid))

    def add(self, line: str) -> None:
        self.lines.append(line if line.endswith("\n") else line + "\n")
        if len(self.lines) >= FLUSH_AT:
            self.flush()

    def flush(self) -> None:
        clock.sync()
        if not self.lines:
            return
        text = "".join(self.lines)
        self.lines.clear()
        stream = self.stream or sys.stderr
        try:
            stream.write(text)
            stream.flush()
        except (OSError, ValueError):  # stderr closed: nothing better to do than drop the lines
            pass
