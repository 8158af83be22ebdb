"""The route table: matching a path to a handler and binding the handler's arguments.

The code generator describes each handler with a `Route` and its `Param`s (see
docs/internals.md, "Server API"); `Router` compiles them once at startup into a dict for
static paths and per-length segment patterns for `{capture}` paths. Binding turns path
segments, query parameters and the request body into typed Python values or a `BindError`
naming what was wrong (400, or 415 for a non-JSON body).
"""

from __future__ import annotations

import inspect
import math
import re
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import unquote_to_bytes

import msgspec

from svc.runtime import eager, responses
from svc.runtime.support import I32_MAX, I32_MIN, I64_MAX, I64_MIN

BODY_LIMIT = 1_048_576


@dataclass(frozen=True, slots=True)
class Param:
    """One handler parameter: where its value comes from and its svc type.

    source: "path" | "query" | "body" | "raw" | "db". `type` is a scalar name
    ("i64" "i32" "f64" "bool" "str"), a generated msgspec.Struct class for "body", or
    "bytes" / "view" for "raw". `optional` marks a `T?` query parameter.
    """

    name: str
    source: str
    type: Any = "str"
    optional: bool = False


@dataclass(frozen=True, slots=True)
class Route:
    """A handler: `await handler(*bound_args)` returns the value or an `SvcError`.

    result: "json" | "json_optional" | "html" | "unit" (and, for the built-in routes,
    "text", "stream", "websocket"). A "text" route answers a constant: its handler is
    called once, when the route table is built, and the response bytes are kept.
    """

    method: str
    path: str
    handler: Callable[..., Any]
    params: tuple[Param, ...] = ()
    result: str = "json"
    floats: bool = False  # the result's type holds an f64: an inf or NaN one is a fault


class BindError(Exception):
    """A request whose arguments cannot be bound: answered with `status` and `reason`."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


# --- typed conversion of path and query values ------------------------------------------------

_INT = re.compile(rb"[+-]?[0-9]{1,40}\Z")
_FLOAT = re.compile(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_RANGES = {"i64": (I64_MIN, I64_MAX), "i32": (I32_MIN, I32_MAX)}


def _text(raw: bytes) -> str:
    return raw.decode("utf-8")


def _integer(kind: str) -> Callable[[bytes], int]:
    low, high = _RANGES[kind]

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
                 "is_async", "never_suspends", "fixed", "floats")

    def __init__(self, route: Route, capture_names: list[str]) -> None:
        self.route = route
        self.handler = route.handler
        self.is_async = inspect.iscoroutinefunction(route.handler)
        self.never_suspends = eager.never_suspends(route.handler)
        self.fixed = responses.Fixed(200, responses.TEXT, route.handler()) if route.result == "text" else None
        self.result = route.result
        self.floats = route.floats
        self.params = route.params
        self.needs_query = any(p.source == "query" for p in route.params)
        self.decoders = {
            p.name: msgspec.json.Decoder(p.type, strict=True) for p in route.params if p.source == "body"
        }
        self.capture_index = {name: i for i, name in enumerate(capture_names)}

    def bind(self, captures: tuple[bytes, ...], query: bytes, body: bytes,
             content_type: bytes | None, db: Any) -> list[Any]:
        """The handler's arguments in `params` order, or BindError."""
        args: list[Any] = []
        values = parse_query(query) if self.needs_query else None
        for param in self.params:
            source = param.source
            if source == "path":
                raw = captures[self.capture_index[param.name]]
                if _PERCENT in raw:
                    raw = unquote_to_bytes(raw)
                args.append(convert(param, raw, "path"))
            elif source == "query":
                raw = values.get(param.name.encode())  # type: ignore[union-attr]
                if raw is None:
                    if not param.optional:
                        raise BindError(400, f"missing required query parameter '{param.name}'")
                    args.append(None)
                else:
                    args.append(convert(param, raw, "query"))
            elif source == "body":
                args.append(decode_body(self.decoders[param.name], body, content_type))
            elif source == "raw":
                args.append(memoryview(body) if param.type == "view" else bytes(body))
            elif source == "db":
                args.append(db)
            else:
                raise ValueError(f"unknown parameter source {source!r}")
        return args


class PathEntry:
    """All routes on one path shape: method → CompiledRoute, and the `Allow` header for 405."""

    __slots__ = ("by_method", "allow")

    def __init__(self) -> None:
        self.by_method: dict[str, CompiledRoute] = {}
        self.allow = b""

    def add(self, compiled: CompiledRoute) -> None:
        self.by_method[compiled.route.method] = compiled
        methods = set(self.by_method)
        if "GET" in methods:
            methods.add("HEAD")
        self.allow = b"Allow: " + ", ".join(sorted(methods)).encode("ascii") + b"\r\n"

    def find(self, method: str) -> CompiledRoute | None:
        """The route for `method`; HEAD uses the GET route."""
        compiled = self.by_method.get(method)
        if compiled is None and method == "HEAD":
            return self.by_method.get("GET")
        return compiled


_CAPTURE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}\Z")


def _shape(path: str) -> tuple[tuple[str | None, ...], list[str]]:
    """'/t/{id}/x' → (('', 't', None, 'x'), ['id'])."""
    shape: list[str | None] = []
    names: list[str] = []
    for segment in path.split("/"):
        capture = _CAPTURE.match(segment)
        if capture:
            shape.append(None)
            names.append(capture.group(1))
        else:
            shape.append(segment)
    return tuple(shape), names


class Router:
    """Static paths by dict lookup; capture paths by segment patterns, most static first."""

    def __init__(self, routes: list[Route] | tuple[Route, ...]) -> None:
        self.static: dict[str, PathEntry] = {}
        patterns: dict[tuple[str | None, ...], PathEntry] = {}
        for route in routes:
            shape, names = _shape(route.path)
            if names:
                entry = patterns.setdefault(shape, PathEntry())
            else:
                entry = self.static.setdefault(route.path, PathEntry())
            entry.add(CompiledRoute(route, names))
        self.dynamic: dict[int, list[tuple[tuple[str | None, ...], PathEntry]]] = {}
        for shape in sorted(patterns, key=lambda s: tuple(seg is None for seg in s)):
            self.dynamic.setdefault(len(shape), []).append((shape, patterns[shape]))

    def lookup(self, path: str) -> tuple[PathEntry, tuple[bytes, ...]] | None:
        """The entry for a raw (still percent-encoded) path and its raw captures, or None."""
        entry = self.static.get(path)
        if entry is not None:
            return entry, ()
        candidates = self.dynamic.get(path.count("/") + 1)
        if not candidates:
            return None
        segments = path.split("/")
        for shape, entry in candidates:
            captures = []
            for pattern, segment in zip(shape, segments):
                if pattern is None:
                    if not segment:
                        break
                    captures.append(segment.encode("latin-1"))
                elif pattern != segment:
                    break
            else:
                return entry, tuple(captures)
        return None

    def refusal(self, method: str, path: str, content_type: bytes | None) -> tuple[int, str, bytes] | None:
        """(status, reason, extra header lines) when a request would be refused whatever its
        body (404, 405, 415); None when its route takes it.

        Asked before answering `Expect: 100-continue`, so a client is not invited to send a
        body that will be thrown away.
        """
        found = self.lookup(path)
        if found is None:
            return 404, "not found", b""
        entry = found[0]
        route = entry.by_method.get(method) or entry.find(method)
        if route is None:
            return 405, "method not allowed", entry.allow
        if route.decoders and content_type is not None and not is_json_media_type(content_type):
            return 415, UNSUPPORTED_MEDIA, b""
        return None
