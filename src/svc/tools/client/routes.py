"""One function per route: `getTask({ id: 1 })`, named after its handler in camelCase, taking
its path and query parameters and files (`Upload` parameters, as `Blob`s: a browser's `File` is
one) by their svc names (and `body`), answering a `Result` of its value or of the errors the
server can answer for it (the statuses `svcc openapi` lists). An event stream route's function
answers its stream at once (`SvcEvents<T, E>`, whose `done` is that Result), a WebSocket
route's its session (`SvcSocket<In, Out>`).
"""

from __future__ import annotations

import re

from svc.compiler.program import CheckedProgram, RouteInfo
from svc.compiler.svctypes import BYTES, EventsOf, Opt, ResponseOf, SocketOf, Type, View
from svc.rules.contract import ParamSource, ResultKind
from svc.tools.client.runtime import KIND_BY_STATUS, UNEXPECTED
from svc.tools.client.typescript import ts_type
from svc.tools.openapi import (
    NO_CONTENT, operation_ids, error_statuses, respond_statuses, route_ok_type,
)

_SENT = (ParamSource.PATH, ParamSource.QUERY, ParamSource.BODY, ParamSource.RAW,
         ParamSource.UPLOAD)
_TEXT = (ResultKind.HTML, ResultKind.RESPONSE_HTML)
_NONE = (ResultKind.UNIT, ResultKind.RESPONSE_UNIT)
_BYTES = ResultKind.RESPONSE_BYTES


def function_name(operation_id: str) -> str:
    """`list_tasks` → `listTasks` (a handler on several routes: `save_post_1` → `savePost1`)."""
    head, *rest = operation_id.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def route_functions(program: CheckedProgram, typed: bool) -> list[str]:
    """Each route's function, as a property of the client object, in the program's order."""
    ids = operation_ids(program.routes)
    return [_function(program, route, function_name(i), typed)
            for route, i in zip(program.routes, ids)]


def error_types(program: CheckedProgram) -> list[str]:
    """Each route's error union under a name of its own (`GetTaskError`), for the functions'
    signatures and for the caller's code; none for a WebSocket route, whose refusal a
    WebSocket never shows (it closes with 1006)."""
    ids = operation_ids(program.routes)
    return [f"export type {_error_name(function_name(i))} =\n  | "
            + "\n  | ".join(error_members(program, route)) + ";\n"
            for route, i in zip(program.routes, ids) if not _is_socket(route)]


def _is_socket(route: RouteInfo) -> bool:
    stream = route.stream
    return stream is not None and isinstance(stream.type, SocketOf)


def _error_name(name: str) -> str:
    return name[:1].upper() + name[1:] + "Error"


def error_members(program: CheckedProgram, route: RouteInfo) -> list[str]:
    """The members of the route's error union: one `SvcError<kind>` per status it can answer
    (in order of status), and `unexpected` for a status svc never gives."""
    kinds = [KIND_BY_STATUS[s] for s in error_statuses(program, route) if s in KIND_BY_STATUS]
    return [f'SvcError<"{kind}">' for kind in [*dict.fromkeys(kinds), UNEXPECTED]]


def value_type(program: CheckedProgram, route: RouteInfo) -> str:
    """The value of a success answer: the JSON's type, a page's text, or null (no body)."""
    if route.result in _TEXT:
        return "string"
    if route.result in _NONE:
        return "null"
    if route.result is _BYTES:  # a download (empty for a 204)
        return "Uint8Array"
    ok = route_ok_type(program, route)
    if isinstance(ok, Opt) and route.result is ResultKind.JSON_OPTIONAL:
        return ts_type(program, ok.inner)  # no value is the 404 error
    if isinstance(ok, ResponseOf):
        body = ts_type(program, ok.body)
        literal, _ = respond_statuses(program, route.handler)
        return f"{body} | null" if literal & NO_CONTENT else body
    return ts_type(program, ok)


def _function(program: CheckedProgram, route: RouteInfo, name: str, typed: bool) -> str:
    params = [p for p in route.params if p.source in _SENT]
    argument = _argument(program, params, typed)
    path = _path(route.path)
    query = ", ".join(f"{p.name}: params.{p.name}" for p in params
                      if p.source is ParamSource.QUERY)
    stream = route.stream
    if stream is not None:
        return _stream_function(program, route, name, typed, argument, f"{path}, {{ {query} }}",
                                stream.type)
    result = f": Promise<Result<{value_type(program, route)}, {_error_name(name)}>>"
    body = next((p for p in params if p.source in (ParamSource.BODY, ParamSource.RAW)), None)
    files = [p.name for p in params if p.source is ParamSource.UPLOAD]
    sent = ("{ form: { " + ", ".join(f"{f}: params.{f}" for f in files) + " } }" if files else
            "undefined" if body is None else
            "{ json: params.body }" if body.source is ParamSource.BODY else "{ raw: params.body }")
    read = ("text" if route.result in _TEXT else "none" if route.result in _NONE else
            "bytes" if route.result is _BYTES else "json")
    doc = f"    /** {route.method} {route.path} (svc: {route.handler}) */\n"
    return (f"{doc}    {name}({argument}){result if typed else ''} {{\n"
            f"      return send(baseUrl, options, \"{route.method}\", {path}, {{ {query} }},\n"
            f"        {sent}, \"{read}\");\n    }},\n").replace("{  }", "{}")


def _stream_function(program: CheckedProgram, route: RouteInfo, name: str, typed: bool,
                     argument: str, where: str, stream: Type) -> str:
    """An event stream route's function (its stream, `events`) or a WebSocket route's (its
    session, `socket`): the same argument as any route's, the stream's messages typed."""
    if isinstance(stream, EventsOf):
        what, call = "an event stream", "events"
        result = f": SvcEvents<{ts_type(program, stream.message)}, {_error_name(name)}>"
    else:
        assert isinstance(stream, SocketOf)
        what, call = "a WebSocket", "socket"
        result = (f": SvcSocket<{_socket_type(program, stream.incoming)}, "
                  f"{_socket_type(program, stream.outgoing)}>")
    doc = f"    /** {route.method} {route.path} (svc: {route.handler}): {what} */\n"
    return (f"{doc}    {name}({argument}){result if typed else ''} {{\n"
            f"      return {call}(baseUrl, options, {where});\n    }},\n").replace("{  }", "{}")


def _socket_type(program: CheckedProgram, t: Type) -> str:
    """A WebSocket message's type: bytes travel as binary messages, so they are Uint8Arrays
    (bytes in JSON are base64 strings)."""
    return "Uint8Array" if t in (BYTES, View(BYTES)) else ts_type(program, t)


def _argument(program: CheckedProgram, params: list, typed: bool) -> str:
    """`params: { id: number; body: TaskInput }`; optional when every property is."""
    if not params:
        return ""
    if not typed:
        return "params" if _required(params) else "params = {}"
    props = []
    for p in params:
        if p.source in (ParamSource.BODY, ParamSource.RAW):
            kind = "Uint8Array | string" if p.source is ParamSource.RAW else ts_type(program, p.type)
            props.append(f"body: {kind}")
        elif p.source is ParamSource.UPLOAD:
            props.append(f"{p.name}?: Blob | null" if p.optional else f"{p.name}: Blob")
        else:
            mark = "?" if p.optional else ""
            props.append(f"{p.name}{mark}: {ts_type(program, p.type)}{' | null' if mark else ''}")
    return f"params: {{ {'; '.join(props)} }}" + ("" if _required(params) else " = {}")


def _required(params: list) -> bool:
    return any(not p.optional for p in params)


def _path(path: str) -> str:
    """`/api/tasks/{id}` → a template literal with each segment encoded."""
    if "{" not in path:
        return f'"{path}"'
    return "`" + re.sub(r"\{(\w+)\}", r"${encodeURIComponent(String(params.\1))}", path) + "`"
