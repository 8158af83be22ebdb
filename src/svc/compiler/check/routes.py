"""The route table and the check-time route rules (docs/reference/language.md, routes).

Works on checked declarations only (FunctionInfo with resolved parameter types), so the rules
are testable without a parser. Every rule's error is reported at the attribute's path string,
and names the handler, the parameter or the conflicting route. Paths are read by
`svc.rules.contract.parse_path`, the grammar the router reads them with too.
"""

from __future__ import annotations

from typing import Callable, Iterable

from svc.compiler.front import syntax
from svc.compiler.check.guards import GuardTable
from svc.compiler.diagnostics import Diagnostic
from svc.compiler.program import FunctionInfo, ParamInfo, RouteInfo
from svc.compiler.source import Span
from svc.compiler.svctypes import (
    BOOL, BYTES, DB, F64, HEADERS, HTML, I32, I64, STR, UNIT, UPLOAD, ClassRef, EnumRef, EventsOf,
    ListOf, MapOf, Opt, ResponseOf, ResultOf, SocketOf, Type, View, format_type, UNKNOWN,
    is_json_type,
)
from svc.rules.contract import (
    BODY_LIMIT, STREAM_SOURCES, ParamSource, PathError, ResultKind, body_limit_problem,
    parse_path, size_bytes,
)

#: Paths the server answers itself (docs/reference/http.md, built-in routes); no handler may
#: take them, whatever the method (docs/decisions/http.md).
RESERVED_PATHS = ("/health", "/ready", "/stream", "/ws")

PATH_TYPES = (I64, I32, STR)
#: The sources of parameters that read the request body (which a `body_limit` limits).
_BODY_SOURCES = (ParamSource.BODY, ParamSource.RAW, ParamSource.UPLOAD)
QUERY_TYPES = (I64, I32, F64, BOOL, STR)

ClassFields = Callable[[str], list[Type]]


def _query_type(t: Type) -> tuple[Type, bool] | None:
    """(scalar type, optional) when `t` binds from the query string."""
    inner = t.inner if isinstance(t, Opt) else t
    if inner in QUERY_TYPES or isinstance(inner, EnumRef):
        return inner, isinstance(t, Opt)
    return None


def bind_params(
    fn: FunctionInfo, captures: tuple[str, ...] | list[str], class_fields: ClassFields
) -> tuple[list[ParamInfo], list[str]]:
    """How each handler parameter is bound, and the problems (as message texts)."""
    params: list[ParamInfo] = []
    problems: list[str] = []
    body: str | None = None  # name of the parameter that takes the body
    uploads: list[str] = []  # the Upload parameters: the files of one multipart body
    for name, t in fn.params:
        if t == UNKNOWN:  # its type was already reported
            continue
        if name in captures:
            if t in PATH_TYPES or isinstance(t, EnumRef):
                params.append(ParamInfo(name, ParamSource.PATH, t))
            else:
                problems.append(
                    f"path parameter '{name}' of handler '{fn.name}' must be i64, i32, str or "
                    f"an enum, found {format_type(t)}"
                )
            continue
        source = _source_of(t, class_fields)
        if source is None:
            problems.append(
                f"parameter '{name}: {format_type(t)}' of handler '{fn.name}' cannot be bound "
                "from a request (path capture, query scalar, body class, raw body, Upload, Db, "
                "Headers, Events[T] or WebSocket[In, Out])"
            )
            continue
        if source in _BODY_SOURCES:
            # several Upload parameters are the files of one multipart body
            if body is not None and not (source is ParamSource.UPLOAD and body in uploads):
                problems.append(
                    f"handler '{fn.name}' reads the request body twice: parameters "
                    f"'{body}' and '{name}'"
                )
                continue
            body = body or name
        if source is ParamSource.UPLOAD:
            uploads.append(name)
            params.append(ParamInfo(name, source, UPLOAD, isinstance(t, Opt)))
        elif source is ParamSource.QUERY:
            inner, optional = _query_type(t)  # type: ignore[misc]
            params.append(ParamInfo(name, source, inner, optional))
        else:
            params.append(ParamInfo(name, source, t))
    declared = {name for name, _ in fn.params}
    for capture in captures:
        if capture not in declared:
            problems.append(
                f"capture '{{{capture}}}' has no parameter named '{capture}' in handler '{fn.name}'"
            )
    return params, problems


def _source_of(t: Type, class_fields: ClassFields) -> ParamSource | None:
    if t == DB:
        return ParamSource.DB
    if t == HEADERS:
        return ParamSource.HEADERS
    if t == UPLOAD or t == Opt(UPLOAD):
        return ParamSource.UPLOAD
    if isinstance(t, EventsOf):
        return ParamSource.EVENTS
    if isinstance(t, SocketOf):
        return ParamSource.SOCKET
    if isinstance(t, (ClassRef, MapOf)):
        return ParamSource.BODY if is_json_type(t, class_fields) else None
    if t == BYTES or t == View(BYTES):
        return ParamSource.RAW
    if _query_type(t) is not None:
        return ParamSource.QUERY
    return None


def result_kind(returns: Type, class_fields: ClassFields) -> ResultKind | None:
    """JSON / JSON_OPTIONAL / HTML / UNIT (or RESPONSE_* for a `Response[T]`) for a handler's
    return type, None if not allowed."""
    if not isinstance(returns, ResultOf):
        return None
    t = returns.ok
    if isinstance(t, ResponseOf):  # its body type was checked when the type was resolved
        if t.body == HTML:
            return ResultKind.RESPONSE_HTML
        if t.body == BYTES:  # a download: the bytes themselves, not base64 in JSON
            return ResultKind.RESPONSE_BYTES
        return ResultKind.RESPONSE_UNIT if t.body == UNIT else ResultKind.RESPONSE_JSON
    if t == HTML:
        return ResultKind.HTML
    if t == UNIT:
        return ResultKind.UNIT
    if isinstance(t, Opt) and is_json_type(t.inner, class_fields):
        return ResultKind.JSON_OPTIONAL
    if is_json_type(t, class_fields):
        return ResultKind.JSON
    return None


def holds_f64(t: Type, class_fields: ClassFields, seen: set[str] | None = None) -> bool:
    """Whether a value of type `t` can contain an f64 (the server then refuses inf/NaN)."""
    seen = set() if seen is None else seen
    if t == F64:
        return True
    if isinstance(t, (Opt, View)):
        return holds_f64(t.inner, class_fields, seen)
    if isinstance(t, ResponseOf):
        return holds_f64(t.body, class_fields, seen)
    if isinstance(t, ListOf):
        return holds_f64(t.elem, class_fields, seen)
    if isinstance(t, MapOf):
        return holds_f64(t.value, class_fields, seen)
    if isinstance(t, ResultOf):
        return holds_f64(t.ok, class_fields, seen)
    if isinstance(t, ClassRef) and t.name not in seen:
        seen.add(t.name)
        return any(holds_f64(field, class_fields, seen) for field in class_fields(t.name))
    return False


def build_routes(
    functions: Iterable[FunctionInfo], class_fields: ClassFields,
    guards: GuardTable | None = None,
) -> tuple[list[RouteInfo], list[Diagnostic]]:
    """The route table of a program, in declaration order, and every route rule broken;
    with `guards` (check/guards.py), each route's guards too."""
    routes: list[RouteInfo] = []
    diagnostics: list[Diagnostic] = []
    guards = guards if guards is not None else GuardTable()
    for fn in functions:
        for attr in fn.decl.routes:
            route = _build_route(fn, attr, class_fields, diagnostics, guards)
            if route is not None:
                routes.append(route)
    diagnostics += check_conflicts(routes)
    diagnostics += guards.unused_prefixes(routes)
    return routes, diagnostics


def _build_route(fn: FunctionInfo, attr: syntax.RouteAttr, class_fields: ClassFields,
                 diagnostics: list[Diagnostic], guards: GuardTable) -> RouteInfo | None:
    def fail(message: str, span: Span = attr.path_span) -> None:
        diagnostics.append(Diagnostic(message, span))

    label = f"@{attr.method.lower()}"
    if not fn.is_async:
        fail(f"route attribute {label} needs an async def: '{fn.name}' is not async", attr.span)
        return None
    try:
        captures = parse_path(attr.path).captures
    except PathError as problem:
        fail(f"malformed route path '{attr.path}': it {problem}")
        return None
    if attr.path in RESERVED_PATHS:
        fail(f"route {attr.method} {attr.path}: {attr.path} is a built-in route of the server")
        return None
    guarded = guards.for_route(fn, attr, fail)
    if guarded is None:
        return None
    uses, handler_args, request, extra = guarded
    params, problems = bind_params(request, captures, class_fields)
    params += extra
    for message in problems:
        fail(message)
    kind = result_kind(fn.returns, class_fields)
    if kind is None and fn.returns != UNKNOWN:
        span = fn.decl.returns.span if fn.decl.returns is not None else fn.decl.name_span
        fail(
            f"handler '{fn.name}' must return Result[T, Error] where T is JSON-encodable "
            f"(class, List, number, str, bool, unit, T?), Html or Response[T], found "
            f"{format_type(fn.returns)}",
            span,
        )
    limit = _body_limit(attr, params, fail)
    streams = _stream_problem(fn, attr, params, kind)
    if streams is not None:
        fail(streams)
    if problems or kind is None or limit is None or streams is not None:
        return None
    return RouteInfo(attr.method, attr.path, fn.name, tuple(params), kind,
                     holds_f64(fn.returns, class_fields), attr.path_span, uses, handler_args,
                     body_limit=limit)


def _stream_problem(fn: FunctionInfo, attr: syntax.RouteAttr, params: list[ParamInfo],
                    kind: ResultKind | None) -> str | None:
    """What is wrong with an event stream or WebSocket route, or None: it is a GET (a browser's
    EventSource and WebSocket send nothing else), it has one stream and reads no body, and
    its handler returns Result[unit, Error] (what it says is in its stream)."""
    streams = [p for p in params if p.source in STREAM_SOURCES]
    if not streams:
        return None
    what = "an event stream" if streams[0].source is ParamSource.EVENTS else "a WebSocket"
    if len(streams) > 1:
        return (f"handler '{fn.name}' has two streams, '{streams[0].name}' and "
                f"'{streams[1].name}': a route is one event stream or one WebSocket")
    if attr.method != "GET":
        return f"route {attr.method} {attr.path} is {what} route: it must be a @get"
    body = next((p for p in params if p.source in _BODY_SOURCES), None)
    if body is not None:
        return f"{what} route reads no request body: parameter '{body.name}' would"
    if kind is not ResultKind.UNIT:
        return (f"the handler of {what} route returns Result[unit, Error] (it answers with "
                f"its stream), found {format_type(fn.returns)}")
    return None


def _body_limit(attr: syntax.RouteAttr, params: list[ParamInfo],
                fail: Callable[..., None]) -> int | None:
    """The route's body limit in bytes (BODY_LIMIT unless its attribute says
    `body_limit="10 MiB"`); None after a reported mistake in its options."""
    limit = BODY_LIMIT
    seen: set[str] = set()
    for option in attr.options:
        label = f"@{attr.method.lower()}"
        if option.name != "body_limit":
            fail(f"{label} has no option '{option.name}' (it takes body_limit)", option.span)
            return None
        if option.name in seen:
            fail(f"option 'body_limit' of {label} is given twice", option.span)
            return None
        seen.add(option.name)
        text = option.value if isinstance(option.value, str) else None
        problem = (body_limit_problem(text) if text is not None
                   else f"body_limit must be a string literal such as \"10 MiB\", found "
                        f"{option.value!r}")
        if problem is not None or text is None:
            fail(problem or "", option.value_span)
            return None
        if not any(p.source in _BODY_SOURCES for p in params):
            fail(f"body_limit: route {attr.method} {attr.path} reads no body (no body class, "
                 "bytes or Upload parameter)", option.span)
            return None
        limit = size_bytes(text) or BODY_LIMIT
    return limit


def check_conflicts(routes: list[RouteInfo]) -> list[Diagnostic]:
    """Two handlers for one method and path; two paths of one shape with other capture names.

    One dict per rule, so the check is linear in the number of routes.
    """
    diagnostics: list[Diagnostic] = []
    by_method_path: dict[tuple[str, str], RouteInfo] = {}
    by_shape: dict[str, RouteInfo] = {}
    for route in routes:
        shape = parse_path(route.path).shape
        earlier = by_method_path.get((route.method, route.path))
        if earlier is None:
            shaped = by_shape.get(shape)
            if shaped is not None and shaped.path != route.path:
                earlier = shaped
        if earlier is not None:
            diagnostics.append(Diagnostic(
                f"route {route.method} {route.path} conflicts with {earlier.method} "
                f"{earlier.path} at {_where(earlier.span)}",
                route.span,
            ))
            continue
        by_method_path[(route.method, route.path)] = route
        by_shape.setdefault(shape, route)
    return diagnostics


def _where(span: Span) -> str:
    return f"{span.file}:{span.line}:{span.col}"
