"""`svcc openapi`: the OpenAPI 3.1 description of a program's HTTP API, from its checked route
table and types.

Everything in the document comes from what the compiler already checked and what the server
does with it (docs/reference/http.md): each route's parameters are bound exactly as the router
binds them, each class is a strict JSON object (every field required, no other field), the
success response follows the handler's return type (for a `Response[T]`, the literal
statuses of the `respond` calls its handler can make), and the error responses are those the
server can give for that route, all with the `{"error": "..."}` body. The server's own routes
(`/health`, `/ready`, and `/stream` and `/ws` unless svc.toml switches them off) are described
too.

An event stream route (`Events[T]`) answers `text/event-stream`, each event's data described
by `x-svc-item-schema`; a WebSocket route (`WebSocket[In, Out]`) answers 101 and says its
messages in `x-svc-websocket` (docs/decisions/tooling.md, "Streams in the documents": OpenAPI
3.1 has no words for either; `svcc asyncapi` describes them fully).

A field's rules (`@length`, `@range`, `@pattern`, `@one_of`) are its schema's keywords
(openapi_schemas.py), and a route whose body has rules lists the 422 binding answers. Only the
classes the routes expose (their parameters, bodies and results, through their fields) are
components: a config class or a database row class no route reads or answers stays out of the
document.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable

from svc.compiler.check.http_types import int_literal
from svc.compiler.check.error_kinds import error_kinds, reachable_calls
from svc.compiler.check.field_rules import has_rules
from svc.compiler.program import CheckedProgram, RouteInfo
from svc.compiler.svctypes import (
    EventsOf, ListOf, Opt, ResponseOf, ResultOf, SocketOf, Type,
)
from svc.rules.contract import BODY_LIMIT, RESPONSE_KINDS, ParamSource, ResultKind, size_text
from svc.tools import openapi_security
from svc.tools.openapi_schemas import (
    SCHEMAS, class_schemas, reached_classes, schema_of, socket_message_schema,
)

OPENAPI_VERSION = "3.1.0"
ERROR_SCHEMA = "Error"
#: The body of a 422 (`unprocessable`): a `.` in the name, so no class's schema can have it.
FIELDS_ERROR_SCHEMA = "Error.fields"
#: Error statuses whose answers carry Retry-After (`too_many_requests`, `busy`).
RETRY_AFTER_STATUSES = frozenset({429, 503})

#: Error statuses every route can answer: a malformed request or a bad parameter or body
#: (400), a method the path does not take (405, with `Allow`), a body over 1 MiB (413), a fault
#: or a database error (500), a full database queue or a shutdown (503), the processing limit
#: (504).
ALWAYS = (400, 405, 413, 500, 503, 504)
#: Statuses that never carry content (RFC 9110): the server drops a Response's body for them.
NO_CONTENT = frozenset({204, 304})
#: Statuses a route answers only when its handler can make an error of that kind.
BY_KIND = {"unauthorized": 401, "forbidden": 403, "not_found": 404, "conflict": 409,
           "unprocessable": 422, "too_many_requests": 429,
           "bad_gateway": 502}  # an outbound call failed (http_get, http_send)
#: Each error status: its name in `components/responses` and what it means here.
ERROR_RESPONSES = {
    400: ("BadRequest", "A malformed request, a parameter or body that does not read, or an "
                        "`invalid` error from the handler"),
    401: ("Unauthorized", "An `unauthorized` error from the handler"),
    403: ("Forbidden", "A `forbidden` error from the handler"),
    404: ("NotFound", "Not found: a `not_found` error, or no value (`T?`)"),
    405: ("MethodNotAllowed", "This path does not take the request's method; the Allow header "
                              "lists those it takes"),
    409: ("Conflict", "A `conflict` error from the handler (a database constraint included)"),
    413: ("PayloadTooLarge", "The request body is over the route's limit (1 MiB unless its "
                             "body_limit says)"),
    415: ("UnsupportedMediaType", "The body must be application/json (multipart/form-data for "
                                  "a route that takes several files)"),
    422: ("UnprocessableContent", "An `unprocessable` error from the handler: the reason, and "
                                  "what is wrong with each field under `fields`"),
    426: ("UpgradeRequired", "Not a WebSocket upgrade request"),
    429: ("TooManyRequests", "Too many requests: a `too_many_requests` error from the handler, "
                             "or a client over svc.toml's rate limit; Retry-After says in how "
                             "many seconds to try again"),
    500: ("InternalError", "An internal error (the details are in the server log)"),
    502: ("BadGateway", "A call to another service failed: refused, broken, or its answer was "
                        "too large or not text (the details are in the server log)"),
    503: ("Busy", "The database queue stayed full, or the server is shutting down (Retry-After "
                  "says when to try again)"),
    504: ("Timeout", "The request passed the processing limit (2 s), or a call to another "
                     "service did not answer within it"),
    507: ("InsufficientStorage", "The server had no room left to store an uploaded file"),
}


def document(program: CheckedProgram, title: str, version: str = "0") -> dict[str, Any]:
    """The OpenAPI 3.1 document of a checked program, as plain JSON data."""
    paths: dict[str, dict[str, Any]] = {}
    ids = operation_ids(program.routes)
    for route, operation_id in zip(program.routes, ids):
        item = paths.setdefault(route.path, {"description": (
            "Other methods on this path are answered 405 with an Allow header; HEAD is "
            "answered wherever GET is; OPTIONS is answered 204 with the Allow header.")})
        item[route.method.lower()] = _operation(program, route, operation_id)
    paths.update(_builtin_paths(program.settings.demo_routes))
    components: dict[str, Any] = {"schemas": _component_schemas(program),
                                  "responses": _component_responses()}
    schemes = openapi_security.security_schemes(program)  # the auth guards' (guards)
    if schemes:
        components["securitySchemes"] = schemes
    return {
        "openapi": OPENAPI_VERSION,
        "info": {"title": title, "version": version},
        "paths": paths,
        "components": components,
    }


def operation_ids(routes: list[RouteInfo]) -> list[str]:
    """The handler's name, unique: a handler on several routes gets `<name>_<method>_<n>`."""
    counts: dict[str, int] = {}
    for route in routes:
        counts[route.handler] = counts.get(route.handler, 0) + 1
    ids: list[str] = []
    used: dict[str, int] = {}
    for route in routes:
        if counts[route.handler] == 1:
            ids.append(route.handler)
            continue
        used[route.handler] = used.get(route.handler, 0) + 1
        ids.append(f"{route.handler}_{route.method.lower()}_{used[route.handler]}")
    return ids


# --- one route ----------------------------------------------------------------------------------

def _operation(program: CheckedProgram, route: RouteInfo, operation_id: str) -> dict[str, Any]:
    operation: dict[str, Any] = {"operationId": operation_id}
    parameters = [_parameter(p) for p in route.params
                  if p.source in (ParamSource.PATH, ParamSource.QUERY)]
    stream = route.stream
    if stream is not None and stream.source is ParamSource.EVENTS:
        parameters.append(LAST_EVENT_ID)
    if parameters:
        operation["parameters"] = parameters
    uploads = [p for p in route.params if p.source is ParamSource.UPLOAD]
    body = next((p for p in route.params if p.source in (ParamSource.BODY, ParamSource.RAW)), None)
    if uploads:
        operation["requestBody"] = _upload_body(uploads, route.body_limit)
    elif body is not None:
        operation["requestBody"] = _request_body(body.source, body.type)
    if route.body_limit != BODY_LIMIT and "requestBody" in operation:
        operation["requestBody"]["description"] = (
            f"At most {size_text(route.body_limit)} ({route.body_limit:,} bytes).")
    operation["responses"] = _responses(program, route)
    if stream is not None and isinstance(stream.type, SocketOf):
        operation["x-svc-websocket"] = {"receives": socket_message_schema(stream.type.incoming),
                                        "sends": socket_message_schema(stream.type.outgoing)}
    security = openapi_security.route_security(program, route)
    if security:
        operation["security"] = [{name: [] for name in security}]
    return operation


#: The header field a reconnecting client sends to an event stream route (`last_event_id`).
LAST_EVENT_ID = {"name": "Last-Event-ID", "in": "header", "required": False,
                 "schema": {"type": "string"},
                 "description": "The id of the last event a reconnecting client got"}


def _parameter(param) -> dict[str, Any]:
    required = param.source is ParamSource.PATH or not param.optional
    return {"name": param.name, "in": param.source.value, "required": required,
            "schema": schema_of(param.type)}


def _request_body(source: ParamSource, t: Type) -> dict[str, Any]:
    if source is ParamSource.BODY:
        return {"required": True, "content": {"application/json": {"schema": schema_of(t)}}}
    # A raw body: any bytes, of any Content-Type; a request without one gives empty bytes.
    return {"required": False, "content": {"application/octet-stream": {
        "schema": {"type": "string", "contentMediaType": "application/octet-stream"}}}}


#: An uploaded file in a schema (OpenAPI 3.1 writes binary content so, 3.0 as a format).
FILE_SCHEMA = {"type": "string", "format": "binary", "contentMediaType": "application/octet-stream"}


def _upload_body(uploads: list, limit: int) -> dict[str, Any]:
    """A route's files as a multipart/form-data body (its scalar parameters, listed in the
    query, may come as form fields too); a route that takes one file also takes it as the
    whole body, of any type."""
    form = {"type": "object", "properties": {p.name: FILE_SCHEMA for p in uploads}}
    required = [p.name for p in uploads if not p.optional]
    if required:
        form["required"] = required
    content: dict[str, Any] = {"multipart/form-data": {"schema": form}}
    if len(uploads) == 1:
        content["*/*"] = {"schema": FILE_SCHEMA}
    return {"required": bool(required), "content": content}


def _responses(program: CheckedProgram, route: RouteInfo) -> dict[str, Any]:
    responses: dict[str, Any] = {}
    ok = route_ok_type(program, route)
    stream = route.stream
    if stream is not None:
        responses.update(_stream_responses(stream.type))
    elif route.result in RESPONSE_KINDS and isinstance(ok, ResponseOf):
        responses.update(_chosen_responses(program, route, ok.body))
    elif route.result is ResultKind.UNIT:
        responses["204"] = {"description": "Done (no body)"}
    elif route.result is ResultKind.HTML:
        responses["200"] = {"description": "An HTML page", "content": {
            "text/html": {"schema": {"type": "string"}}}}
    else:
        inner = ok.inner if route.result is ResultKind.JSON_OPTIONAL and isinstance(ok, Opt) else ok
        responses["200"] = {"description": "OK", "content": {
            "application/json": {"schema": schema_of(inner)}}}
    for status in error_statuses(program, route):
        chosen = responses.get(str(status))
        responses[str(status)] = (_error_response(status) if chosen is None
                                  else _chosen_or_error(chosen, status))
    return responses


def error_statuses(program: CheckedProgram, route: RouteInfo) -> list[int]:
    """The error statuses the server can answer for `route`, sorted: those every route can,
    those of the error kinds its handler and guards can make, a `T?` result's 404, a JSON
    body's 415 (and 422 when its class has rules), and 429 when svc.toml limits it. `svcc
    client` types each route's errors from the same list.

    A WebSocket route's handler runs after the upgrade, so only its guards' errors are statuses
    (the handler's close the socket, 1011), and a request that is not an upgrade is 426."""
    statuses = set(ALWAYS)
    kinds = openapi_security.guard_kinds(program, route)
    stream = route.stream
    if stream is not None and stream.source is ParamSource.SOCKET:
        statuses.add(426)
    else:
        kinds |= error_kinds(program, route.handler)
    statuses |= {status for kind, status in BY_KIND.items() if kind in kinds}
    if route.result is ResultKind.JSON_OPTIONAL:
        statuses.add(404)
    body = next((p.type for p in route.params if p.source is ParamSource.BODY), None)
    if body is not None:
        statuses.add(415)
        if has_rules(program, body):  # binding's 422 naming the fields that break them
            statuses.add(422)
    uploads = sum(p.source is ParamSource.UPLOAD for p in route.params)
    if uploads:
        statuses.add(507)  # no room to store the files
        if uploads > 1:  # a body that is not multipart
            statuses.add(415)
    if _rate_limited(program, route):
        statuses.add(429)
    return sorted(statuses)


def _chosen_responses(program: CheckedProgram, route: RouteInfo, body: Type) -> dict[str, Any]:
    """A `Response[T]` route: one response per literal status of the `respond` calls its
    handler can make; "2XX" when some status is computed. A handler that never calls
    `respond` (it only fails) has no success response."""
    literal, computed = respond_statuses(program, route.handler)
    chosen = {str(status): _chosen_response(route.result, body, status)
              for status in sorted(literal)}
    if computed:
        chosen["2XX"] = _chosen_response(route.result, body, None)
    return chosen


def respond_statuses(program: CheckedProgram, handler: str) -> tuple[frozenset[int], bool]:
    """The literal statuses of the `respond(...)` calls `handler` can make, in its own body or
    in the functions it calls that return a Response (only those can hand one back), and
    whether some status is computed. Like `error_kinds` it over-approximates: a branch never
    taken still counts."""
    literal: set[int] = set()
    computed = False
    for call in reachable_calls(program, handler, lambda info: _holds_response(info.returns)):
        if call.call_kind == "builtin" and call.target == "respond" and call.args:
            status = int_literal(call.args[0])
            if status is None:
                computed = True
            else:
                literal.add(status)
    return frozenset(literal), computed


def _holds_response(t: Type) -> bool:
    """Whether a function returning `t` can hand a Response to its caller."""
    if isinstance(t, ResultOf):
        return _holds_response(t.ok)
    if isinstance(t, (ListOf, Opt)):
        return _holds_response(t.elem if isinstance(t, ListOf) else t.inner)
    return isinstance(t, ResponseOf)


def _chosen_response(kind: ResultKind, body: Type, status: int | None) -> dict[str, Any]:
    """A `Response[T]` answer: with a literal status, or one chosen at run time (None)."""
    if status is None:
        described = {"description": "The status and header fields the handler chooses"}
    else:
        described = {"description": f"respond({status}, ...) with the header fields the "
                                    "handler sets"}
    if kind is ResultKind.RESPONSE_UNIT or status in NO_CONTENT:
        return described
    if kind is ResultKind.RESPONSE_HTML:
        return {**described, "content": {"text/html": {"schema": {"type": "string"}}}}
    if kind is ResultKind.RESPONSE_BYTES:  # any bytes, of the type the handler sets
        return {**described, "content": {"*/*": {}}}
    return {**described, "content": {"application/json": {"schema": schema_of(body)}}}


def _chosen_or_error(chosen: dict[str, Any], status: int) -> dict[str, Any]:
    """A status the handler may choose that is also one of the route's error statuses: either
    body (`respond(409, note)` and `conflict(...)` on one route)."""
    error = {"$ref": SCHEMAS + ERROR_SCHEMA}
    content = dict(chosen.get("content", {}))
    json_body = content.get("application/json")
    content["application/json"] = {"schema": error if json_body is None else
                                   {"anyOf": [json_body["schema"], error]}}
    return {"description": f"{chosen['description']}; or: {ERROR_RESPONSES[status][1]}",
            "content": content}


def _stream_responses(stream: Type) -> dict[str, Any]:
    """An event stream route's 200 (the stream) and 204 (no event sent), or a WebSocket
    route's 101. OpenAPI 3.1 can say that a body is `text/event-stream` but not what each event
    holds: `x-svc-item-schema` says it, with what OpenAPI 3.2 calls `itemSchema` (one event as
    an object of its fields, `data` being the message's JSON), so a move to 3.2 is a rename."""
    if isinstance(stream, SocketOf):
        return {"101": {"description": "Switching Protocols: the WebSocket session, whose "
                                       "messages x-svc-websocket describes"}}
    assert isinstance(stream, EventsOf)
    item = {"type": "object", "description": (
        "One event: the message's JSON in `data`, with `event` and `id` when the handler gives "
        "them; the stream's first item is `retry` alone"), "properties": {
            "data": {"type": "string", "contentMediaType": "application/json",
                     "contentSchema": schema_of(stream.message)},
            "event": {"type": "string"}, "id": {"type": "string"},
            "retry": {"type": "integer", "minimum": 0}}}
    return {
        "200": {"description": "The event stream, from the handler's first event on: "
                               "`retry: 2000`, then one event per message; a `: ping` comment "
                               "after 15 s without one", "content": {"text/event-stream": {
                                   "schema": {"type": "string"}, "x-svc-item-schema": item}}},
        "204": {"description": "The handler ended without sending an event: nothing to stream "
                               "(an EventSource does not reconnect)"},
    }


def route_ok_type(program: CheckedProgram, route: RouteInfo) -> Type:
    """The `T` of the handler's `Result[T, Error]`."""
    returns = program.functions[route.handler].returns
    return returns.ok if isinstance(returns, ResultOf) else returns


def _rate_limited(program: CheckedProgram, route: RouteInfo) -> bool:
    """svc.toml's `[rate_limit]` limits every route, `[guard_limits]` the routes that run a
    guard it names, `[route_limits]` the routes it names (svc.rules.traffic)."""
    limited = {guard for guard, _ in program.settings.guard_limits}
    named = {name for name, _ in program.settings.route_limits}
    return program.settings.rate_limit is not None or any(
        use.guard in limited for use in route.guards) or f"{route.method} {route.path}" in named


def _error_response(status: int) -> dict[str, Any]:
    return {"$ref": "#/components/responses/" + ERROR_RESPONSES[status][0]}


def _component_responses() -> dict[str, Any]:
    """Every error response once: the status's meaning and the `{"error": "..."}` body (with
    `fields` for 422); 429 and 503 carry Retry-After."""
    responses: dict[str, Any] = {}
    for status, (name, description) in ERROR_RESPONSES.items():
        schema = FIELDS_ERROR_SCHEMA if status == 422 else ERROR_SCHEMA
        responses[name] = {"description": description, "content": {
            "application/json": {"schema": {"$ref": SCHEMAS + schema}}}}
        if status in RETRY_AFTER_STATUSES:
            responses[name]["headers"] = {"Retry-After": {
                "description": "Seconds to wait before trying again",
                "schema": {"type": "integer", "minimum": 0}}}
    return responses


def _component_schemas(program: CheckedProgram) -> dict[str, Any]:
    """One schema per class a route exposes, and the error body."""
    schemas = class_schemas(program, exposed_classes(program))
    schemas[ERROR_SCHEMA] = {  # `Error` is a type name: no class can have it
        "type": "object",
        # `fields`: a 400 for a body that does not read names the field it is about
        "properties": {"error": {"type": "string"},
                       "fields": {"type": "object", "additionalProperties": {"type": "string"}}},
        "required": ["error"],
        "additionalProperties": False,
    }
    schemas[FIELDS_ERROR_SCHEMA] = {  # `unprocessable(reason, fields)`
        "type": "object",
        "properties": {"error": {"type": "string"},
                       "fields": {"type": "object", "additionalProperties": {"type": "string"}}},
        "required": ["error", "fields"],
        "additionalProperties": False,
    }
    return schemas


# --- which classes --------------------------------------------------------------------------

def exposed_classes(program: CheckedProgram) -> set[str]:
    """The classes the routes read or answer: their parameters' and results' types, and the
    classes those reach through their fields."""
    types = [route_ok_type(program, r) for r in program.routes]
    return reached_classes(program, types + [p.type for r in program.routes for p in r.params])


# --- the server's own routes ----------------------------------------------------------------------

def _builtin_paths(demo_routes: bool = True) -> dict[str, Any]:
    text = {"text/plain": {"schema": {"type": "string"}}}
    other_methods = "Answered by the server itself; other methods on this path are 405."
    ready = {"type": "object", "properties": {"status": {"type": "string", "const": "ready"}},
             "required": ["status"], "additionalProperties": False}
    paths = {
        "/health": {"description": other_methods, "get": {
            "operationId": "svc_health",
            "summary": "Liveness: always `ok`, also while handlers are busy",
            "responses": {"200": {"description": "The server is up", "content": {
                "text/plain": {"schema": {"type": "string", "const": "ok"}}}}},
        }},
        "/ready": {"description": other_methods, "get": {
            "operationId": "svc_ready",
            "summary": "Readiness: the database answers a trivial query within 1 s",
            "responses": {
                "200": {"description": "Ready to serve", "content": {
                    "application/json": {"schema": ready}}},
                "503": {"description": "Not ready: the database did not answer, or failed "
                                       "(the reason in the body; Retry-After: 1)",
                        "headers": {"Retry-After": {"schema": {"type": "integer"}}},
                        "content": {"application/json": {
                            "schema": {"$ref": SCHEMAS + ERROR_SCHEMA}}}},
            },
        }},
    }
    if not demo_routes:  # svc.toml's [server] demo_routes = false: answered 404, not listed
        return paths
    return paths | {
        "/stream": {"description": other_methods, "get": {
            "operationId": "svc_stream",
            "summary": "A chunked body of five chunks, `chunk:0` to `chunk:4`, one per line",
            "responses": {"200": {"description": "Five chunks, sent one by one",
                                  "content": text}},
        }},
        "/ws": {"description": other_methods, "get": {
            "operationId": "svc_ws",
            "summary": "A WebSocket (RFC 6455) echo: text comes back as text, binary as binary",
            "responses": {
                "101": {"description": "Switching Protocols: the WebSocket session"},
                "400": _error_response(400),
                "426": _error_response(426),
            },
        }},
    }


# --- the command ----------------------------------------------------------------------------------

def openapi_command(file: str | None, project: str | None, output: str | None) -> int:
    """Check the program, then print its document (or write it to `output`)."""
    return document_command(file, project, output, document)


def document_command(file: str | None, project: str | None, output: str | None,
                     make: Callable[[CheckedProgram, str, str], dict[str, Any]]) -> int:
    """Check the program, then print the JSON document `make(program, title, version)` makes
    of it, or write it to `output`: `svcc openapi`'s and `svcc asyncapi`'s."""
    from svc.tools.output import print_or_write

    def text(checked) -> str:
        title, version = _title_and_version(checked, file, project)
        return json.dumps(make(checked.program, title, version), indent=2) + "\n"
    return print_or_write(file, project, output, text)


def program_title(checked, file: str | None, project: str | None) -> str:
    """The program's name, as the document's title and a client's header give it."""
    return _title_and_version(checked, file, project)[0]


def _title_and_version(checked, file: str | None, project: str | None) -> tuple[str, str]:
    """The project's `name` (else its folder's name), or the file's name without `.svc`;
    the version is the program's own, which svc does not know: "0"."""
    if project is None:
        return os.path.splitext(os.path.basename(file or "program"))[0], "0"
    from svc.project import config_path, load_project

    config = checked.sources.get(os.path.normpath(config_path(project)))
    loaded = load_project(project, config)[0] if config is not None else None
    name = loaded.name if loaded is not None and loaded.name else None
    return name or os.path.basename(os.path.abspath(project)), "0"
