"""The route table: resolving a request to a handler and binding the handler's arguments.

The code generator describes each handler with a `svc.contract.Route` and its `Param`s (see
docs/internals.md, "Server API"); `Router` compiles them once at startup into a dict for
static paths and per-length segment patterns for `{capture}` paths. `Router.resolve(method,
path)` answers a `Match` (the route and its raw captures) or a `Refusal` (404, 405 with its
`Allow` line). Binding turns path segments, query parameters and the request body into typed
Python values or a `BindError` naming what was wrong (400, or 415 for a non-JSON body).
"""

from __future__ import annotations

import inspect
import math
import re
from typing import Any, Callable
from urllib.parse import unquote_to_bytes

import msgspec

from svc.contract import (
    INT_RANGES, RESPONSE_KINDS, Param, ParamSource, ResultKind, Route, parse_path,
)
from svc.runtime import eager, responses
from svc.runtime.headers import Headers

# Module names for the enum members, compared with `is` on the hot path.
_PATH, _QUERY, _BODY, _RAW, _DB = (ParamSource.PATH, ParamSource.QUERY, ParamSource.BODY,
                                   ParamSource.RAW, ParamSource.DB)
_HEADERS = ParamSource.HEADERS


class BindError(Exception):
    """A request whose arguments cannot be bound: answered with `status` and `reason`."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


# --- typed conversion of path and query values ------------------------------------------------

_INT = re.compile(rb"[+-]?[0-9]{1,40}\Z")
_FLOAT = re.compile(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")


def _text(raw: bytes) -> str:
    return raw.decode("utf-8")


def _integer(kind: str) -> Callable[[bytes], int]:
    low, high = INT_RANGES[kind]

    def convert(raw: bytes) -> int:
        # bytes.isdigit() is ASCII-only; int() alone would also take " 1", "1_0" and "+1".
        if not (raw.isdigit() and len(raw) <= 40) and not _INT.match(raw):
            raise ValueError
        value = int(raw)
        if not low <= value <= high:
            raise ValueError
        return value

    return convert


def _float(raw: bytes) -> float:
    if not _FLOAT.match(raw):
        raise ValueError
    value = float(raw)
    if not math.isfinite(value):
        raise ValueError
    return value


def _bool(raw: bytes) -> bool:
    if raw == b"true":
        return True
    if raw == b"false":
        return False
    raise ValueError


CONVERTERS: dict[str, Callable[[bytes], Any]] = {
    "i64": _integer("i64"),
    "i32": _integer("i32"),
    "f64": _float,
    "bool": _bool,
    "str": _text,
}


def convert(param: Param, raw: bytes, where: str) -> Any:
    """Percent-decoded bytes → the parameter's type, or BindError(400) naming the parameter."""
    try:
        return CONVERTERS[param.type](raw)
    except (ValueError, UnicodeDecodeError):
        raise BindError(400, f"invalid {where} parameter '{param.name}': expected {param.type}")


def parse_query(query: bytes) -> dict[bytes, bytes]:
    """`a=1&b=x%20y` → {b"a": b"1", b"b": b"x y"}; `+` is a space; the first value wins."""
    values: dict[bytes, bytes] = {}
    for pair in query.split(b"&"):
        if not pair:
            continue
        name, _, value = pair.partition(b"=")
        name = _unescape(name)
        if name not in values:
            values[name] = _unescape(value)
    return values


_PERCENT, _PLUS = ord("%"), ord("+")


def _unescape(raw: bytes) -> bytes:
    """Form decoding of one name or value; most have nothing to decode (measured: /query 14% of
    its time was here), so those skip the replace and `unquote_to_bytes` calls. The bytes are
    searched for ints, not for `b"%"`: a bytes needle costs ~10x more per test (measured)."""
    if _PERCENT not in raw and _PLUS not in raw:
        return raw
    return unquote_to_bytes(raw.replace(b"+", b" "))


# --- request bodies ---------------------------------------------------------------------------

UNSUPPORTED_MEDIA = "unsupported media type: expected application/json"


def is_json_media_type(content_type: bytes) -> bool:
    """application/json or application/<anything>+json, parameters allowed."""
    media = content_type.split(b";", 1)[0].strip().lower()
    return media == b"application/json" or (media.startswith(b"application/") and media.endswith(b"+json"))


def decode_body(decoder: msgspec.json.Decoder, body: bytes, content_type: bytes | None) -> Any:
    """Strict JSON into the parameter's class. A missing Content-Type is taken as JSON."""
    if content_type is not None and not is_json_media_type(content_type):
        raise BindError(415, UNSUPPORTED_MEDIA)
    try:
        return decoder.decode(body)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:  # ValidationError is a DecodeError
        raise BindError(400, f"invalid request body: {exc}")



# --- compiled routes --------------------------------------------------------------------------

class CompiledRoute:
    """A Route ready to run: how to bind each parameter and how to answer its result."""

    __slots__ = ("route", "handler", "result", "params", "needs_query", "decoders", "capture_index",
                 "is_async", "never_suspends", "fixed", "floats", "headers_at", "responds",
                 "special")

    def __init__(self, route: Route, capture_names: tuple[str, ...]) -> None:
        self.route = route
        self.handler = route.handler
        self.is_async = inspect.iscoroutinefunction(route.handler)
        self.never_suspends = eager.never_suspends(route.handler)
        self.result = route.result
        self.fixed = (responses.Fixed(200, responses.TEXT, route.handler())
                      if route.result is ResultKind.TEXT else None)
        self.floats = route.floats
        self.params = route.params
        self.needs_query = any(p.source is _QUERY for p in route.params)
        self.decoders = {
            p.name: msgspec.json.Decoder(p.type, strict=True) for p in route.params if p.source is _BODY
        }
        self.capture_index = {name: i for i, name in enumerate(capture_names)}
        #: positions of `Headers` parameters, filled by `bind_request`
        self.headers_at = tuple(i for i, p in enumerate(route.params) if p.source is _HEADERS)
        #: the handler answers a `Response[T]` (its status and header fields)
        self.responds = route.result in RESPONSE_KINDS
        #: the connection takes this route off its plain path: /stream, /ws, and the routes
        #: that read header fields or answer a Response (so the others pay nothing for them)
        self.special = (self.responds or bool(self.headers_at)
                        or route.result in (ResultKind.STREAM, ResultKind.WEBSOCKET))

    def body_refusal(self, content_type: bytes | None) -> Refusal | None:
        """415 when the route reads a JSON body and `content_type` says it is not JSON."""
        if self.decoders and content_type is not None and not is_json_media_type(content_type):
            return UNSUPPORTED
        return None

    def bind(self, captures: tuple[bytes, ...], query: bytes, body: bytes,
             content_type: bytes | None, db: Any) -> list[Any]:
        """The handler's arguments in `params` order, or BindError."""
        args: list[Any] = []
        values = parse_query(query) if self.needs_query else None
        for param in self.params:
            source = param.source
            if source is _PATH:
                raw = captures[self.capture_index[param.name]]
                if _PERCENT in raw:
                    raw = unquote_to_bytes(raw)
                args.append(convert(param, raw, "path"))
            elif source is _QUERY:
                raw = values.get(param.name.encode())  # type: ignore[union-attr]
                if raw is None:
                    if not param.optional:
                        raise BindError(400, f"missing required query parameter '{param.name}'")
                    args.append(None)
                else:
                    args.append(convert(param, raw, "query"))
            elif source is _BODY:
                args.append(decode_body(self.decoders[param.name], body, content_type))
            elif source is _RAW:
                args.append(memoryview(body) if param.type == "view" else bytes(body))
            elif source is _DB:
                args.append(db)
            elif source is _HEADERS:
                args.append(None)  # set by bind_request, which has the request
            else:
                raise ValueError(f"unknown parameter source {source!r}")
        return args


    def bind_request(self, captures: tuple[bytes, ...], req: Any, db: Any) -> list[Any]:
        """`bind` for a special route: the same arguments, `Headers` parameters included."""
        args = self.bind(captures, req.query, req.body, req.content_type, db) if self.params else []
        if self.headers_at:
            headers = Headers(req.headers)
            for i in self.headers_at:
                args[i] = headers
        return args


# --- resolving a request ----------------------------------------------------------------------

#: A request's route and the raw (still percent-encoded) values of its path captures: a plain
#: pair, the cheapest object Python builds (measured: a small class costs ~120 ns more per
#: request on capture paths).
Match = tuple  # tuple[CompiledRoute, tuple[bytes, ...]]


class Refusal:
    """A request no route takes: its status, the reason, extra header lines (`Allow`), and
    the JSON error body, encoded once."""

    __slots__ = ("status", "reason", "extra", "body")

    def __init__(self, status: int, reason: str, extra: bytes = b"") -> None:
        self.status = status
        self.reason = reason
        self.extra = extra
        self.body = responses.error_body(reason)

    def __repr__(self) -> str:
        return f"Refusal({self.status}, {self.reason!r})"


NOT_FOUND = Refusal(404, "not found")
UNSUPPORTED = Refusal(415, UNSUPPORTED_MEDIA)


class PathEntry:
    """All routes on one path shape: method → CompiledRoute, and the 405 refusal (with the
    `Allow` line) for the other methods. HEAD uses the GET route."""

    __slots__ = ("routes", "matches", "refusal")

    def __init__(self) -> None:
        self.routes: dict[str, CompiledRoute] = {}
        #: method → its Match without captures, built once (static paths answer with these)
        self.matches: dict[str, tuple[CompiledRoute, tuple[bytes, ...]]] = {}
        self.refusal = Refusal(405, "method not allowed")

    def add(self, compiled: CompiledRoute) -> None:
        self.routes[compiled.route.method] = compiled
        if "GET" in self.routes and "HEAD" not in self.routes:
            self.routes["HEAD"] = self.routes["GET"]
        self.matches = {method: (route, ()) for method, route in self.routes.items()}
        allow = ", ".join(sorted(self.routes)).encode("ascii")
        self.refusal = Refusal(405, "method not allowed", b"Allow: " + allow + b"\r\n")


class Router:
    """Static paths by dict lookup; capture paths by segment patterns, most static first."""

    def __init__(self, routes: list[Route] | tuple[Route, ...]) -> None:
        self.static: dict[str, PathEntry] = {}
        patterns: dict[tuple[str | None, ...], PathEntry] = {}
        for route in routes:
            path = parse_path(route.path)
            if path.captures:
                # "" first: a pattern lines up with `request_path.split("/")` as it is
                entry = patterns.setdefault(("",) + path.segments, PathEntry())
            else:
                entry = self.static.setdefault(route.path, PathEntry())
            entry.add(CompiledRoute(route, path.captures))
        #: segment count → (pattern, entry) pairs, the patterns with more literal segments first
        self.dynamic: dict[int, list[tuple[tuple[str | None, ...], PathEntry]]] = {}
        for pattern in sorted(patterns, key=lambda p: tuple(seg is None for seg in p)):
            self.dynamic.setdefault(len(pattern), []).append((pattern, patterns[pattern]))

    def resolve(self, method: str, path: str) -> tuple[CompiledRoute, tuple[bytes, ...]] | Refusal:
        """The route for a request and its raw captures (a `Match` pair), or why no route
        takes it (a `Refusal`: 404, or 405 with the path's `Allow` line)."""
        entry = self.static.get(path)
        if entry is not None:  # the common case: answers built once, no allocation
            return entry.matches.get(method) or entry.refusal
        candidates = self.dynamic.get(path.count("/") + 1)
        if candidates:
            segments = path.split("/")
            for pattern, entry in candidates:
                captures = []
                for expected, segment in zip(pattern, segments):
                    if expected is None:
                        if not segment:
                            break
                        captures.append(segment.encode("latin-1"))
                    elif expected != segment:
                        break
                else:
                    route = entry.routes.get(method)
                    return entry.refusal if route is None else (route, tuple(captures))
        return NOT_FOUND
