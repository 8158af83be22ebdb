"""`svcc asyncapi`: the AsyncAPI 3.0 description of what a program says over time, which
OpenAPI cannot describe: its event stream routes (messages to the client), its WebSocket routes
(messages both ways) and its topics (messages among its own processes).

The document describes the program (the application, in AsyncAPI's words): `send` is what it
sends, `receive` what it expects. Each stream route is a channel at its path (path parameters
as channel parameters, query parameters in its binding), with one operation per direction;
each topic is a channel at its name with a `send` (`publish`) and a `receive` (`subscribe`)
operation. Messages are `components.messages`, their payloads the schemas `svcc openapi` writes
(schema_of, the same components): a JSON message by its type's name (`Note`, `List.str`), a
server-sent event `<name>.event` with its `event:` and `id:` as headers, a WebSocket's binary
message `bytes.binary`. Guards' security schemes are the OpenAPI document's, in AsyncAPI's
spelling. There is no `servers` entry, as in the OpenAPI document: the address is chosen when
the program runs.
"""

from __future__ import annotations

from typing import Any

from svc.compiler.program import CheckedProgram, ParamInfo, RouteInfo, TopicInfo
from svc.compiler.svctypes import BYTES, EventsOf, SocketOf, Type, View, format_type
from svc.rules.contract import ParamSource
from svc.tools import openapi_security
from svc.tools.openapi import document_command, operation_ids
from svc.tools.openapi_schemas import (
    class_schemas, component_name, reached_classes, schema_of, socket_message_schema,
)

ASYNCAPI_VERSION = "3.0.0"
#: What a topic promises (docs/reference/builtins.md, "Topics and streams").
DELIVERY = "live, at most once, in order per publisher"


class _Document:
    """The channels, operations and messages being gathered, each added once."""

    def __init__(self) -> None:
        self.channels: dict[str, Any] = {}
        self.operations: dict[str, Any] = {}
        self.messages: dict[str, Any] = {}

    def channel(self, key: str, channel: dict[str, Any], messages: list[tuple[str, dict]]) -> None:
        """A channel and its messages (name, message), each message kept in components."""
        channel["messages"] = {}
        for name, message in messages:
            self.messages.setdefault(name, message)
            channel["messages"][name] = {"$ref": "#/components/messages/" + name}
        self.channels[key] = channel

    def operation(self, channel: str, action: str, message: str, **fields: Any) -> None:
        """The program's `action` ("send" or "receive") on `channel`, of its `message`."""
        self.operations[f"{channel}.{action}"] = {
            "action": action, "channel": {"$ref": "#/channels/" + channel},
            "messages": [{"$ref": f"#/channels/{channel}/messages/{message}"}], **fields}


def document(program: CheckedProgram, title: str, version: str = "0") -> dict[str, Any]:
    """The AsyncAPI 3.0 document of a checked program, as plain JSON data."""
    found = _Document()
    security: dict[str, Any] = {}
    for route, operation_id in zip(program.routes, operation_ids(program.routes)):
        stream = route.stream
        if stream is None:
            continue
        schemes = _schemes(program, route)
        security.update(schemes)
        fields = {"security": [{"$ref": "#/components/securitySchemes/" + name}
                               for name in schemes]} if schemes else {}
        if isinstance(stream.type, EventsOf):
            _event_stream(found, route, operation_id, stream.type, fields)
        else:
            assert isinstance(stream.type, SocketOf)
            _socket(found, route, operation_id, stream.type, fields)
    for topic in program.topics.values():
        _topic(found, topic)
    components: dict[str, Any] = {
        "schemas": class_schemas(program, reached_classes(program, _message_types(program))),
        "messages": found.messages}
    if security:
        components["securitySchemes"] = security
    return {
        "asyncapi": ASYNCAPI_VERSION,
        "info": {"title": title, "version": version, "description": (
            "What the program sends and receives over time: its event streams, its WebSockets "
            "and its topics. Its requests and answers are in its OpenAPI document "
            "(svcc openapi).")},
        "defaultContentType": "application/json",
        "channels": found.channels,
        "operations": found.operations,
        "components": components,
    }


def _message_types(program: CheckedProgram) -> list[Type]:
    """The types of every message the document names: the streams' and the topics'."""
    types: list[Type] = [topic.message for topic in program.topics.values()]
    for route in program.routes:
        stream = route.stream
        if stream is not None and isinstance(stream.type, EventsOf):
            types.append(stream.type.message)
        elif stream is not None and isinstance(stream.type, SocketOf):
            types += [stream.type.incoming, stream.type.outgoing]
    return types


# --- channels -------------------------------------------------------------------------------------

def _event_stream(found: _Document, route: RouteInfo, key: str, stream: EventsOf,
                  fields: dict[str, Any]) -> None:
    """A server-sent event stream: the program sends each event."""
    message = _event(stream.message)
    found.channel(key, {
        **_address(route),
        "description": (f"`GET {route.path}` (svc: {route.handler}): a server-sent event stream "
                        "(text/event-stream), from the handler's first event on; a "
                        "reconnecting client sends Last-Event-ID. Before its first event the "
                        "handler may answer an error, as the OpenAPI document lists; a handler "
                        "that sends none answers 204.")},
        [message])
    found.operation(key, "send", message[0], bindings={"http": {
        "method": "GET", **_query(route), "bindingVersion": "0.3.0"}}, **fields)


def _socket(found: _Document, route: RouteInfo, key: str, socket: SocketOf,
            fields: dict[str, Any]) -> None:
    """A WebSocket: the program receives the client's `In` messages and sends `Out` ones."""
    incoming, outgoing = _socket_message(socket.incoming), _socket_message(socket.outgoing)
    found.channel(key, {
        **_address(route),
        "description": (f"`GET {route.path}` (svc: {route.handler}) upgraded to a WebSocket. "
                        "Close codes: 1000 normal, 1001 the server is stopping, 1002 a "
                        "malformed frame, 1007 a message that does not decode, 1009 a message "
                        "over 1 MiB, 1011 a server fault. A guard's refusal is answered with "
                        "its status before any upgrade."),
        "bindings": {"ws": {"method": "GET", **_query(route), "bindingVersion": "0.1.0"}}},
        [incoming, outgoing])
    found.operation(key, "receive", incoming[0], **fields)
    found.operation(key, "send", outgoing[0], **fields)


def _topic(found: _Document, topic: TopicInfo) -> None:
    """A topic: any handler, job or schedule of the program publishes to it, and subscribes."""
    key = "topic." + topic.constant
    message = _json_message(topic.message)
    found.channel(key, {
        "address": topic.name,
        "title": f"Topic {topic.name!r} ({topic.constant})",
        "description": (f"Delivered {DELIVERY}: a subscriber gets what is published after it "
                        "subscribed, and may miss messages without being told. It reaches every "
                        "process of the program on the same database, not its clients.")},
        [message])
    found.operation(key, "send", message[0], summary=f"publish(db, {topic.constant}, message)")
    found.operation(key, "receive", message[0], summary=f"subscribe(db, {topic.constant})")


def _address(route: RouteInfo) -> dict[str, Any]:
    """A route's channel address, its path parameters as the channel's."""
    params = [p for p in route.params if p.source is ParamSource.PATH]
    if not params:
        return {"address": route.path}
    return {"address": route.path, "parameters": {
        p.name: {"description": f"The path's `{p.name}`: {format_type(p.type)}"}
        for p in params}}


def _query(route: RouteInfo) -> dict[str, Any]:
    """A binding's `query`: the route's query parameters as one object's properties."""
    params: list[ParamInfo] = [p for p in route.params if p.source is ParamSource.QUERY]
    if not params:
        return {}
    query: dict[str, Any] = {"type": "object",
                             "properties": {p.name: schema_of(p.type) for p in params}}
    required = [p.name for p in params if not p.optional]
    if required:
        query["required"] = required
    return {"query": query}


def _schemes(program: CheckedProgram, route: RouteInfo) -> dict[str, Any]:
    """The route's auth guards' schemes in AsyncAPI's spelling (an API key in a header field
    or cookie is `httpApiKey`). AsyncAPI 3.0 lists schemes any one of which applies; a route
    behind several auth guards needs them all, which only the OpenAPI document can say."""
    schemes = openapi_security.route_security(program, route)
    return {name: {**scheme, "type": "httpApiKey"} if scheme["type"] == "apiKey" else scheme
            for name, scheme in schemes.items()}


# --- messages -------------------------------------------------------------------------------------

def _name(t: Type) -> str:
    """A message's name: its type's, as a component name (`Note`, `List.str`, `Page.Task`)."""
    return component_name(format_type(t))


def _json_message(t: Type) -> tuple[str, dict[str, Any]]:
    """A message holding a value's JSON."""
    name = _name(t)
    return name, {"name": name, "contentType": "application/json", "payload": schema_of(t)}


def _event(t: Type) -> tuple[str, dict[str, Any]]:
    """One server-sent event: the value's JSON in its `data:` lines; its name and id, when the
    handler gives them, as headers."""
    name = _name(t) + ".event"
    return name, {"name": name, "title": f"A server-sent event of {format_type(t)}",
                  "contentType": "application/json", "payload": schema_of(t),
                  "headers": {"type": "object", "properties": {
                      "event": {"type": "string", "description": "`event:`"},
                      "id": {"type": "string", "description": "`id:`"}}}}


def _socket_message(t: Type) -> tuple[str, dict[str, Any]]:
    """A WebSocket message: binary for `bytes`, else a text message of the value's JSON."""
    if t in (BYTES, View(BYTES)):
        return "bytes.binary", {"name": "bytes.binary", "contentType": "application/octet-stream",
                                "payload": socket_message_schema(t)}
    return _json_message(t)


# --- the command ----------------------------------------------------------------------------------

def asyncapi_command(file: str | None, project: str | None, output: str | None) -> int:
    """Check the program, then print its document (or write it to `output`)."""
    return document_command(file, project, output, document)
