"""The route table and the check-time route rules (LANGUAGE.md §7).

Works on checked declarations only (FunctionInfo with resolved parameter types), so the rules
are testable without a parser. Every rule's error is reported at the attribute's path string,
and names the handler, the parameter or the conflicting route.
"""

from __future__ import annotations

import re
from typing import Callable, Iterable

from svc.compiler import syntax
from svc.compiler.diagnostics import Diagnostic
from svc.compiler.program import FunctionInfo, RouteInfo, RouteParam
from svc.compiler.source import Span
from svc.compiler.types import (
    BOOL, BYTES, DB, F64, HTML, I32, I64, STR, UNIT, ClassRef, Opt, ResultOf, Type, View, format_type,
    UNKNOWN, is_json_type,
)

#: Paths the server answers itself (HTTP.md "Built-in routes"); no handler may take them,
#: whatever the method (docs/decisions.md).
RESERVED_PATHS = ("/health", "/stream", "/ws")

PATH_TYPES = (I64, I32, STR)
QUERY_TYPES = (I64, I32, F64, BOOL, STR)

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Unreserved and sub-delim characters plus ':' and '@' (RFC 3986 pchar without '%').
_LITERAL_SEGMENT = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@]+\Z")

ClassFields = Callable[[str], list[Type]]


def parse_path(path: str) -> tuple[list[str] | None, str | None]:
    """The capture names of a route path in order, or an error text when it is malformed.

    A capture is a whole segment `{name}`; segments are non-empty (only "/" itself is the
    root); literal segments use URL path characters without percent escapes.
    """
    if not path.startswith("/"):
        return None, "must start with '/'"
    if path == "/":
        return [], None
    captures: list[str] = []
    for segment in path[1:].split("/"):
        if segment == "":
            return None, "has an empty segment"
        if segment.startswith("{") and segment.endswith("}"):
            name = segment[1:-1]
            if name == "":
                return None, "has an empty capture '{}'"
            if not _IDENT.match(name):
                return None, f"has a capture '{{{name}}}' that is not an identifier"
            if name in captures:
                return None, f"captures '{{{name}}}' twice"
            captures.append(name)
        elif not _LITERAL_SEGMENT.match(segment):
            bad = next(c for c in segment if not _LITERAL_SEGMENT.match(c))
            return None, f"has a bad character {bad!r} (a capture is a whole segment '{{name}}')"
    return captures, None


def path_shape(path: str) -> str:
    """The path with every capture replaced by `{}`: two routes of one shape match the same
    requests, so their capture names must agree."""
    return "/".join("{}" if s.startswith("{") else s for s in path.split("/"))


def _query_type(t: Type) -> tuple[Type, bool] | None:
    """(scalar type, optional) when `t` binds from the query string."""
    optional = isinstance(t, Opt)
    inner = t.inner if optional else t
    if inner in QUERY_TYPES:
        return inner, optional
    return None


def bind_params(
    fn: FunctionInfo, captures: list[str], class_fields: ClassFields
) -> tuple[list[RouteParam], list[str]]:
    """How each handler parameter is bound, and the problems (as message texts)."""
    params: list[RouteParam] = []
    problems: list[str] = []
    body: str | None = None  # name of the parameter that takes the body
    for name, t in fn.params:
        if t == UNKNOWN:  # its type was already reported
            continue
        if name in captures:
            if t in PATH_TYPES:
                params.append(RouteParam(name, "path", t))
            else:
                problems.append(
                    f"path parameter '{name}' of handler '{fn.name}' must be i64, i32 or str, "
                    f"found {format_type(t)}"
                )
            continue
        source = _source_of(t, class_fields)
        if source is None:
            problems.append(
                f"parameter '{name}: {format_type(t)}' of handler '{fn.name}' cannot be bound "
                "from a request (path capture, query scalar, body class, raw body or Db)"
            )
            continue
        if source in ("body", "raw"):
            if body is not None:
                problems.append(
                    f"handler '{fn.name}' reads the request body twice: parameters "
                    f"'{body}' and '{name}'"
                )
                continue
            body = name
        if source == "query":
            inner, optional = _query_type(t)  # type: ignore[misc]
            params.append(RouteParam(name, "query", inner, optional))
        else:
            params.append(RouteParam(name, source, t))
    declared = {name for name, _ in fn.params}
    for capture in captures:
        if capture not in declared:
            problems.append(
                f"capture '{{{capture}}}' has no parameter named '{capture}' in handler '{fn.name}'"
            )
    return params, problems


def _source_of(t: Type, class_fields: ClassFields) -> str | None:
    if t == DB:
        return "db"
    if isinstance(t, ClassRef):
        return "body" if is_json_type(t, class_fields) else None
    if t == BYTES or t == View(BYTES):
        return "raw"
    if _query_type(t) is not None:
        return "query"
    return None


def result_kind(returns: Type, class_fields: ClassFields) -> str | None:
    """json / json_optional / html / unit for a handler's return type, None if not allowed."""
    if not isinstance(returns, ResultOf):
        return None
    t = returns.ok
    if t == HTML:
        return "html"
    if t == UNIT:
        return "unit"
    if isinstance(t, Opt) and is_json_type(t.inner, class_fields):
        return "json_optional"
    if is_json_type(t, class_fields):
        return "json"
    return None


def build_routes(
    functions: Iterable[FunctionInfo], class_fields: ClassFields
) -> tuple[list[RouteInfo], list[Diagnostic]]:
    """The route table of a program, in declaration order, and every route rule broken."""
    routes: list[RouteInfo] = []
    diagnostics: list[Diagnostic] = []
    for fn in functions:
        for attr in fn.decl.routes:
            route = _build_route(fn, attr, class_fields, diagnostics)
            if route is not None:
                routes.append(route)
    diagnostics += check_conflicts(routes)
    return routes, diagnostics


def _build_route(fn: FunctionInfo, attr: syntax.RouteAttr, class_fields: ClassFields,
                 diagnostics: list[Diagnostic]) -> RouteInfo | None:
    def fail(message: str, span: Span = attr.path_span) -> None:
        diagnostics.append(Diagnostic(message, span))

    label = f"@{attr.method.lower()}"
    if not fn.is_async:
        fail(f"route attribute {label} needs an async def: '{fn.name}' is not async", attr.span)
        return None
    captures, problem = parse_path(attr.path)
    if captures is None:
        fail(f"malformed route path '{attr.path}': it {problem}")
        return None
    if attr.path in RESERVED_PATHS:
        fail(f"route {attr.method} {attr.path}: {attr.path} is a built-in route of the server")
        return None
    params, problems = bind_params(fn, captures, class_fields)
    for message in problems:
        fail(message)
    kind = result_kind(fn.returns, class_fields)
    if kind is None and fn.returns != UNKNOWN:
        span = fn.decl.returns.span if fn.decl.returns is not None else fn.decl.name_span
        fail(
            f"handler '{fn.name}' must return Result[T, Error] where T is JSON-encodable "
            f"(class, List, number, str, bool, unit, T?) or Html, found {format_type(fn.returns)}",
            span,
        )
    if problems or kind is None:
        return None
    return RouteInfo(attr.method, attr.path, fn.name, params, kind, attr.path_span)


def check_conflicts(routes: list[RouteInfo]) -> list[Diagnostic]:
    """Two handlers for one method and path; two paths of one shape with other capture names.

    One dict per rule, so the check is linear in the number of routes.
    """
    diagnostics: list[Diagnostic] = []
    by_method_path: dict[tuple[str, str], RouteInfo] = {}
    by_shape: dict[str, RouteInfo] = {}
    for route in routes:
        earlier = by_method_path.get((route.method, route.path))
        if earlier is None:
            shaped = by_shape.get(path_shape(route.path))
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
        by_shape.setdefault(path_shape(route.path), route)
    return diagnostics


def _where(span: Span) -> str:
    return f"{span.file}:{span.line}:{span.col}"
