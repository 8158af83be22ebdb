"""The route table: resolving a request to a handler (binding its arguments: binding.py).

The code generator describes each handler with a `svc.rules.contract.Route` and its `Param`s (see
docs/internals.md, "Server API"); `Router` compiles them once at startup into a dict for
static paths and per-length segment patterns for `{capture}` paths. `Router.resolve(method,
path)` answers a `Match` (the route and its raw captures) or a `Refusal` (404, 405 with its
`Allow` line). Each route's answer strategy (answers.py) is chosen here, once; OPTIONS on a
known path (and `OPTIONS *`) matches a route of the server's own, answered 204 with the path's
`Allow` line (answers.answer_options). Binding turns
path segments, query parameters and the request body into typed Python values or a
`BindError` naming what was wrong (400, or 415 for a non-JSON body).

A route that sets its own body limit, or has `Upload` parameters, has `BodyTerms`, which the
protocol asks for when a request's headers are complete (`Router.body_hook`): the limit, and
how an upload route's body is received into files (uploads.py, imported only then).
"""

from __future__ import annotations

from typing import Any

import msgspec

from svc.rules.contract import (
    BODY_LIMIT, RESPONSE_KINDS, ParamSource, ResultKind, Route, parse_path,
)
from svc.runtime.http import responses
from svc.runtime.http.answers import Answer, AnswerOptions, answer_for
from svc.runtime.http.binding import (  # noqa: F401 - BindError, parse_query: routing's API
    UNSUPPORTED_MEDIA, BindError, is_json_media_type, make_binder, parse_query,
)
from svc.runtime.http.headers import Headers
from svc.runtime.http.protocol import Request

_BODY, _HEADERS, _UPLOAD = ParamSource.BODY, ParamSource.HEADERS, ParamSource.UPLOAD


class BodyTerms:
    """What a route asks of its request bodies beyond the defaults, for the protocol to apply
    from the end of the headers on: `limit`, the most bytes (its `body_limit`), and
    `uploads`, the route's `uploads.UploadSpec` when it has `Upload` parameters (its body
    then goes to temporary files), else None."""

    __slots__ = ("limit", "uploads")

    def __init__(self, limit: int, uploads: Any) -> None:
        self.limit = limit
        self.uploads = uploads


def body_terms_of(route: Route) -> BodyTerms | None:
    """The route's BodyTerms, or None when it keeps the defaults (1 MiB, held in memory)."""
    uploading = any(p.source is _UPLOAD for p in route.params)
    if not uploading:
        return None if route.body_limit == BODY_LIMIT else BodyTerms(route.body_limit, None)
    body_params = [p.name for p in route.params if p.source in (_BODY, ParamSource.RAW)]
    if body_params:
        raise ValueError(f"route {route.method} {route.path}: an Upload parameter and a body "
                         f"parameter ({body_params[0]}) cannot share the request body")
    from svc.runtime.http.uploads import UploadSpec  # only programs that receive files

    return BodyTerms(route.body_limit, UploadSpec(route.params))


# --- compiled routes --------------------------------------------------------------------------

class CompiledRoute:
    """A Route ready to run: how to bind each parameter, and how it is answered (`answer`,
    its strategy, chosen here once: answers.py)."""

    __slots__ = ("route", "handler", "result", "params", "decoders", "bind", "answer",
                 "floats", "headers_at", "responds", "terms", "uploads")

    def __init__(self, route: Route, capture_names: tuple[str, ...]) -> None:
        self.route = route
        self.handler = route.handler
        self.result = route.result
        self.floats = route.floats
        self.params = route.params
        self.decoders = {
            p.name: msgspec.json.Decoder(p.type, strict=True) for p in route.params if p.source is _BODY
        }
        #: `bind(captures, query, body, content_type, db)`: the handler's arguments in
        #: `params` order, or BindError (made for this route: binding.make_binder)
        self.bind = make_binder(route.params, {name: i for i, name in enumerate(capture_names)},
                                self.decoders)
        #: positions of `Headers` parameters, filled by `arguments`
        self.headers_at = tuple(i for i, p in enumerate(route.params) if p.source is _HEADERS)
        #: the handler answers a `Response[T]` (its status and header fields)
        self.responds = route.result in RESPONSE_KINDS
        #: its body limit and uploads, when not the defaults (BodyTerms, for the protocol)
        self.terms = body_terms_of(route)
        #: the UploadSpec of a route with `Upload` parameters, whose binder takes the form
        self.uploads: Any = None if self.terms is None else self.terms.uploads
        self.answer: Answer = answer_for(route)

    def body_refusal(self, content_type: bytes | None) -> Refusal | None:
        """415 when the route reads a JSON body and `content_type` says it is not JSON."""
        if self.decoders and content_type is not None and not is_json_media_type(content_type):
            return UNSUPPORTED
        return None

    def arguments(self, captures: tuple[bytes, ...], req: Request, db: Any) -> Any:
        """The handler's arguments in `params` order (`Headers` parameters included), or
        BindError. An upload route's binder takes the request's `ReceivedForm` for its body,
        made here for a request that had no body to stream (and kept with the request, whose
        end closes it)."""
        if not self.params:
            return ()
        if self.uploads is None:
            args = self.bind(captures, req.query, req.body, req.content_type, db)
        else:
            if req.form is None:
                req.form = self.uploads.form_of(req.content_type, req.body)
            args = self.bind(captures, req.query, req.form, req.content_type, db)
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
    `Allow` line) for the other methods. HEAD uses the GET route; OPTIONS is answered by the
    server (answers.AnswerOptions) with the same `Allow` line."""

    __slots__ = ("own", "routes", "matches", "allow", "refusal")

    def __init__(self) -> None:
        #: the program's (and the built-in) routes on this path, by method
        self.own: dict[str, CompiledRoute] = {}
        #: `own` with HEAD (the GET route) and OPTIONS: every method the path answers
        self.routes: dict[str, CompiledRoute] = {}
        #: method → its Match without captures, built once (static paths answer with these)
        self.matches: dict[str, tuple[CompiledRoute, tuple[bytes, ...]]] = {}
        self.allow = b""
        self.refusal = Refusal(405, "method not allowed")

    def add(self, compiled: CompiledRoute) -> None:
        self.own[compiled.route.method] = compiled
        routes = dict(self.own)
        if "GET" in routes and "HEAD" not in routes:
            routes["HEAD"] = routes["GET"]
        self.allow = allow_line(set(routes) | {"OPTIONS"})
        if "OPTIONS" not in routes:
            routes["OPTIONS"] = options_route(compiled.route.path, self.allow)
        self.routes = routes
        self.matches = {method: (route, ()) for method, route in routes.items()}
        self.refusal = Refusal(405, "method not allowed", self.allow)


def allow_line(methods: set[str]) -> bytes:
    """`Allow: DELETE, GET, HEAD, OPTIONS\r\n`: the methods in alphabetical order."""
    return b"Allow: " + ", ".join(sorted(methods)).encode("ascii") + b"\r\n"


def _no_handler() -> None:
    """The handler of the OPTIONS routes, never called: AnswerOptions answers them."""


def options_route(path: str, allow: bytes) -> CompiledRoute:
    """The route OPTIONS requests on `path` resolve to: answered 204 with `allow`."""
    compiled = CompiledRoute(Route("OPTIONS", path, _no_handler, (), ResultKind.UNIT), ())
    compiled.answer = AnswerOptions(allow)
    return compiled


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
        #: `OPTIONS *` (the server as a whole; the protocol lets "*" through only for OPTIONS):
        #: 204 with every method some path answers
        methods: set[str] = {"OPTIONS"}
        for entry in [*self.static.values(), *patterns.values()]:
            methods.update(entry.routes)
        server = self.static["*"] = PathEntry()
        server.allow = allow_line(methods)
        server.routes = {"OPTIONS": options_route("*", server.allow)}
        server.matches = {"OPTIONS": (server.routes["OPTIONS"], ())}
        server.refusal = Refusal(405, "method not allowed", b"Allow: OPTIONS\r\n")
        #: What the protocol asks about each request that has a body (`body_terms`), or None
        #: when no route has BodyTerms: then it asks nothing and every limit is the default.
        self.body_hook: Any = None
        if any(route.terms is not None for entry in [*self.static.values(), *patterns.values()]
               for route in entry.own.values()):
            self.body_hook = self.body_terms

    def body_terms(self, method: str, path: str) -> BodyTerms | None:
        """The BodyTerms of the route a request goes to (None: the defaults, also for a
        request no route takes, which is answered 404 or 405 once its body is read)."""
        found: Any = self.resolve(method, path)
        if found.__class__ is Refusal:
            return None
        route: CompiledRoute = found[0]
        return route.terms

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
