"""The request path's part of the server log (svc.runtime.observability.serverlog): one call per answered
request, which writes its access line (text or JSON) and counts it for the metrics.

Compiled with the rest of the request path: this call runs once per request whenever access
lines or metrics are on, and as Python it cost more than the 10% of a small request's CPU the
issue allows for JSON lines and metrics together (docs/decisions/observability.md, "Logs, request ids and
metrics"). What is not per request (error details, the program's `log_*` lines, their JSON
objects) is formatted by serverlog.py, imported when first needed.

- `ServerLog` buffers lines and writes them with one `write` per sweep tick (or when the
  buffer grows large), so logging does not cost a syscall per request.
- `RequestCounts` is the metrics' per-route count of requests and their durations' histogram
  (svc.runtime.observability.metrics reads it at scrape time).
- Request ids are made here (`new_request_id`): a random prefix per process, a counter.
"""

from __future__ import annotations

import os
import sys
import time
from time import perf_counter as _perf_counter
from typing import TYPE_CHECKING, Any, Final

import msgspec

from svc.runtime.observability import log_lines

if TYPE_CHECKING:  # compiled together: its attributes are read as C struct members
    from svc.runtime.http.connection import Connection

#: The buffer's texts (a JSON access line is five) at which the log is written before the
#: sweep's next tick: ~800 lines, ~150 KiB.
FLUSH_AT: Final = 4096
#: Request durations, seconds: svc answers most requests well under a millisecond, and the
#: processing limit is 2 s.
DURATION_BUCKETS: Final[tuple[float, ...]] = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                              0.1, 0.25, 0.5, 1.0, 2.5)
BUCKET_COUNT: Final = 12  # len(DURATION_BUCKETS)
FIRST_BOUND: Final = 0.0005  # DURATION_BUCKETS[0]
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


#: "000" to "999": the last digits of a duration in milliseconds, a time and a request id.
_DECIMALS: Final = tuple(str(1000 + n)[1:] for n in range(1000))
#: "0" to "999": whole milliseconds of a duration, a request id's counter below 1000 (an int
#: made a text costs more than a look-up).
_WHOLE: Final = tuple(str(n) for n in range(1000))
#: "0.000" to "0.999": a duration under a millisecond in one piece; "1." to "999.": the
#: milliseconds of a longer one.
_UNDER_MS: Final = tuple("0." + decimals for decimals in _DECIMALS)
_WHOLE_DOT: Final = tuple(whole + "." for whole in _WHOLE)


# --- request ids ---------------------------------------------------------------------------------

class Ids:
    """Request ids: a random prefix per process and a counter.

    The text of the counter's thousands is kept (`block`), so an id is one concatenation
    and a look-up of its last three digits (measured: ~220 instructions fewer than making
    the counter a text each time)."""

    def __init__(self) -> None:
        self.prefix = ""
        self.counter = 0
        self.block = ""
        self.renew()

    def renew(self) -> None:
        """A fresh prefix (and counter) for this process; a forked worker gets its own."""
        self.prefix = os.urandom(6).hex() + "-"
        self.counter = 0

    def next(self) -> str:
        count = self.counter = self.counter + 1
        if count < 1000:
            return self.prefix + _WHOLE[count]
        if count % 1000 == 0:
            self.block = self.prefix + str(count // 1000)
        return self.block + _DECIMALS[count % 1000]


ids: Final = Ids()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=ids.renew)


def request_id(req: Any) -> str:
    """The request's id, made now if it has none (it then stays with the request, and its
    answer carries it)."""
    rid: str = req.rid
    if not rid:
        rid = req.rid = new_request_id()
    return rid


def new_request_id() -> str:
    """`3f9a1c2e07b4-17`: 12 random hex digits per process, then a counter."""
    return ids.next()


# --- JSON pieces ---------------------------------------------------------------------------------

class Clock:
    """RFC 3339 UTC times with milliseconds, made once per millisecond (a busy server writes
    many lines in one), the date and time part once per second.

    The time comes from a `perf_counter()` value the caller has anyway (the access hook's
    end of the request) and the wall clock's offset from it, read again at every flush of
    the log (each sweep tick, 0.1 s): no clock call per line. `head` is the start of an
    access line up to its request id, made with the time."""

    def __init__(self) -> None:
        self.ms = -1
        self.second = -1
        self.prefix = ""
        self.text = ""
        self.head = ""
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
            self.advance(ms)
        return self.text

    def advance(self, ms: int) -> None:
        """The texts of millisecond `ms` since the epoch."""
        self.ms = ms
        second = ms // 1000
        if second != self.second:
            self.second = second
            self.prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        self.text = f"{self.prefix}.{_DECIMALS[ms % 1000]}Z"
        self.head = f'{{"time":"{self.text}","level":"info","message":"request","request_id":"'


def inside_quotes(text: str) -> str:
    """What goes between the quotes of a JSON string of a request target. It is printable
    ASCII (llhttp refuses control characters and other bytes), so only `"` and `\\` need
    escaping, and the common text needs none: testing for them is several times cheaper
    than an encoder call."""
    if '"' in text or "\\" in text:
        return _encode(text).decode("utf-8")[1:-1]
    return text


clock: Final = Clock()


class LineParts:
    """The parts one connection's access lines share. `client` is the line's end but its route
    (`,"client":"127.0.0.1:5000"`: asked once per connection). `middle` (from the method to the
    `duration_ms` key) and `end` (client and route) are those of the last request, kept while
    the next one has the same method, target, status and route, as most requests on a
    keep-alive connection do: the common line is then five texts (measured: ~2,500
    instructions a line fewer than formatting all eleven fields each time)."""

    def __init__(self, client: str) -> None:
        self.client = client
        self.method = ""
        self.target = b""
        self.status = 0
        self.route: Any = None
        self.middle = ""
        self.end = client + route_text(None)

    def remember(self, method: str, target: bytes, status: int, route: Any) -> None:
        """The middle and end of a line for this request (and the next ones like it). Paths
        differ between requests more often than the rest (`/users/7`, `/users/8`): the end
        is made again only for another route, and the middle from a table and one f-string."""
        if route is not self.route:
            self.end = self.client + route_text(route)
        self.method, self.target, self.status, self.route = method, target, status, route
        path = target.decode("latin-1")
        query_text = ""
        if "?" in path:
            path, _, query = path.partition("?")
            if query:
                query_text = ',"query":"' + inside_quotes(query) + '"'
        # a method is an HTTP token and a status below 600: neither needs escaping
        self.middle = (f'","method":"{method}","path":"{inside_quotes(path)}"{query_text},'
                       f'"status":{_WHOLE[status]},"duration_ms":')


#: route → the end of its JSON lines but the client, `,"route":"/tasks/{id}"}` and a line
#: break, made once per route.
_route_texts: Final[dict[Any, str]] = {None: ',"route":null}\n'}


def route_text(route: Any) -> str:
    text = _route_texts.get(route)
    if text is None:
        text = _route_texts[route] = \
            ',"route":' + _encode(route.route.path).decode("utf-8") + "}\n"
    return text


#: The parts of lines about no connection (tests, a request refused without one).
_UNCONNECTED: Final = LineParts(',"client":null')


def access_json(lines: list[str], method: str, target: bytes, status: int, now: float,
                elapsed: float, route: Any, rid: str, parts: LineParts | None) -> None:
    """One request as a JSON line, added to `lines`; keys in this order (`query` only when
    there is one): time, level, message, request_id, method, path, query, status,
    duration_ms, client, route.

    The line is five texts, three made before (the clock's head, the LineParts' middle and
    end), and they go into the buffer as they are: the flush's `join` copies them once
    (measured: as cheap as joining them here first, and no bigger `extend` call). The duration
    is made of integers and tables (`format(x, ".3f")` alone cost ~2,000 instructions)."""
    if parts is None:
        parts = _UNCONNECTED
    if not (target == parts.target and status == parts.status and route is parts.route
            and method == parts.method):
        parts.remember(method, target, status, route)
    ms = int((now + clock.offset) * 1000)
    if ms != clock.ms:
        clock.advance(ms)
    lines.append(clock.head)  # a request id needs no escaping: protocol.valid_request_id
    lines.append(rid)
    lines.append(parts.middle)
    micros = int(elapsed * 1_000_000 + 0.5)
    if micros < 1000:
        lines.append(_UNDER_MS[micros])
    else:  # whole milliseconds and decimals as two texts: no new string made
        whole = micros // 1000
        lines.append(_WHOLE_DOT[whole] if whole < 1000 else str(whole) + ".")
        lines.append(_DECIMALS[micros % 1000])
    lines.append(parts.end)


def line_parts(conn: Connection) -> LineParts:
    """The connection's LineParts, made at its first JSON line: the peer's "address:port"
    (nothing in it needs escaping), or null when the transport has none (a Unix socket)."""
    parts = conn.client
    if parts is None:
        name = conn.transport.get_extra_info("peername")
        client = f',"client":"{name[0]}:{name[1]}"' \
            if isinstance(name, tuple) and len(name) >= 2 else ',"client":null'
        parts = conn.client = LineParts(client)
    return parts


# --- counting for the metrics ----------------------------------------------------------------------

class RouteCounts:
    """One route's requests: the count by method and status, the durations' histogram
    (bucket counts, the last past every bound, and their sum).

    Requests like the one before (same method and status) add to `run`, and durations in the
    same bucket as the one before to `in_bucket`: attributes of this compiled class, where a
    count in a dict or list is an object made anew at each addition (measured: ~500
    instructions a request fewer). `settle` adds them to the dict and list, before anything
    reads those."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.by_method: dict[str, dict[int, int]] = {}  # method → status → count
        self.method = ""  # the method and status of the requests counted in `run`
        self.status = 0
        self.run = 0
        self.buckets: list[int] = [0] * (len(DURATION_BUCKETS) + 1)
        self.bucket = 0  # the bucket of the durations counted in `in_bucket`
        self.in_bucket = 0
        self.total = 0.0

    def start_run(self, method: str, status: int) -> None:
        """Requests of another method or status: the run before is counted."""
        self.settle()
        self.method, self.status, self.run = method, status, 1

    def settle(self) -> None:
        if self.run:
            by_status = self.by_method.get(self.method)
            if by_status is None:
                by_status = self.by_method[self.method] = {}
            by_status[self.status] = by_status.get(self.status, 0) + self.run
            self.run = 0
        if self.in_bucket:
            self.buckets[self.bucket] += self.in_bucket
            self.in_bucket = 0

    def start_bucket(self, index: int) -> None:
        """A duration in another bucket: the ones before are counted."""
        self.settle()
        self.bucket, self.in_bucket = index, 1

    def statuses_counted(self) -> list[tuple[str, int, int]]:
        """(method, status, count) of every status counted: what the metrics show."""
        self.settle()
        return [(method, status, count) for method, by_status in list(self.by_method.items())
                for status, count in list(by_status.items())]

    def histogram(self) -> tuple[list[int], float]:
        """The durations' bucket counts (a copy) and their sum."""
        self.settle()
        return list(self.buckets), self.total


class RequestCounts:
    """The requests one server process answered, by route (svc.runtime.observability.metrics): a dict by
    route, then RouteCounts' runs, and a search of the bounds written out (no call of
    `bisect`; most requests stop at the first bound)."""

    def __init__(self) -> None:
        self.routes: dict[Any, RouteCounts] = {}  # CompiledRoute (None: no route) → counts

    def observe(self, route: Any, method: str, status: int, seconds: float) -> None:
        counts = self.routes.get(route)
        if counts is None:
            counts = self.routes[route] = RouteCounts(
                NO_ROUTE if route is None else route.route.path)
        if route is None and method not in KNOWN_METHODS:
            method = "other"
        if method is counts.method and status == counts.status:
            counts.run += 1
        else:
            counts.start_run(method, status)
        counts.total += seconds
        index = 0
        if seconds > FIRST_BOUND:
            bounds = DURATION_BUCKETS
            index = 1
            while index < BUCKET_COUNT and seconds > bounds[index]:
                index += 1
        if index == counts.bucket:
            counts.in_bucket += 1
        else:
            counts.start_bucket(index)


# --- the log ---------------------------------------------------------------------------------------

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
               route: Any = None, rid: str = "", client: Connection | None = None) -> None:
        """One answered request: `GET /search?q=x 200 0.4ms` (method, request target as
        received, status, duration; then `request_id=...` when the request has an id), or its
        JSON object. `client` is the connection, asked for the peer address in JSON only
        (`line_parts`).

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
            access_json(lines, method, target, status, now, elapsed, route,
                        rid or new_request_id(), None if client is None else line_parts(client))
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
        self.add(log_lines.request_error_line(self.json, req, route, message, trace, fault,
                                              clock.now(), request_id(req)))

    def request_warning(self, req: Any, route: Any, message: str) -> None:
        """Something that went wrong in a request and was handled (a handler run again after
        its transaction clashed): a request error line at level `warn`."""
        self.add(log_lines.request_error_line(self.json, req, route, message, "", "",
                                              clock.now(), request_id(req), "warn"))

    def error(self, message: str) -> None:
        """An error's details not about a request (jobs, schedules): the message as is, or
        a JSON object with it."""
        if self.json:
            message = log_lines.standalone("error", message, clock.now())
        self.add(message)

    def program(self, level: str, message: str, fields: dict, rid: str) -> None:
        """A `log_info`/`log_warn`/`log_error` line."""
        self.add(log_lines.program_line(self.json, level, message, fields, rid, clock.now()))

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
