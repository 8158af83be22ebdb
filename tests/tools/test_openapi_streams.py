"""`svcc openapi` on event stream and WebSocket routes: valid OpenAPI 3.1 that says what the
server does (a stream and its events, 204, a 101 and the messages both ways, the errors a
handler can still answer before it streams), and the event stream program's real answers
validate against its document."""

from __future__ import annotations

import http.client
import json
from pathlib import Path

from openapi_spec_validator import validate

from tests.helpers.openapi_check import Exchange, exchange_problems, openapi_document
from tests.helpers.svc_process import REPO, start

PROGRAMS = REPO / "tests" / "tools" / "client_node"
LIVE = str(PROGRAMS / "live.svc")  # event streams behind a guard
CHAT = str(PROGRAMS / "chat.svc")  # WebSockets and an event stream
SCHEMAS = "#/components/schemas/"


def statuses(operation: dict) -> list[int]:
    return sorted(int(s) for s in operation["responses"])


def test_an_event_stream_route_answers_its_events_or_204_or_an_error() -> None:
    document = openapi_document([LIVE])
    validate(document)
    assert document["openapi"] == "3.1.0"
    live = document["paths"]["/notes/live"]["get"]
    assert live["parameters"] == [
        {"name": "room", "in": "query", "required": False, "schema": {"type": "string"}},
        {"name": "Last-Event-ID", "in": "header", "required": False,
         "schema": {"type": "string"},
         "description": "The id of the last event a reconnecting client got"}]
    stream = live["responses"]["200"]["content"]["text/event-stream"]
    assert stream["schema"] == {"type": "string"}
    item = stream["x-svc-item-schema"]  # OpenAPI 3.2's itemSchema, under a 3.1 name
    assert item["properties"]["data"] == {
        "type": "string", "contentMediaType": "application/json",
        "contentSchema": {"$ref": SCHEMAS + "Note"}}
    assert set(item["properties"]) == {"data", "event", "id", "retry"}
    assert "content" not in live["responses"]["204"]
    # Before its first event the handler answers as any route: not_found, the guard's 401,
    # the database's 409.
    assert statuses(live) == [200, 204, 400, 401, 404, 405, 409, 413, 500, 503, 504]
    assert live["security"] == [{"header_x-member": []}]
    quiet = document["paths"]["/quiet"]["get"]["responses"]["200"]["content"]
    assert quiet["text/event-stream"]["x-svc-item-schema"]["properties"]["data"][
        "contentSchema"] == {"type": "array", "items": {"type": "string"}}
    assert set(document["components"]["schemas"]) == {"Note", "Error", "Error.fields"}


def test_a_websocket_route_answers_101_and_names_its_messages_both_ways() -> None:
    document = openapi_document([CHAT])
    validate(document)
    chat = document["paths"]["/rooms/{room}/chat"]["get"]
    assert chat["parameters"] == [
        {"name": "room", "in": "path", "required": True, "schema": {"type": "string"}}]
    assert chat["responses"]["101"]["description"].startswith("Switching Protocols")
    assert chat["x-svc-websocket"] == {"receives": {"$ref": SCHEMAS + "Said"},
                                       "sends": {"$ref": SCHEMAS + "Line"}}
    # The handler runs after the upgrade: its errors (the database's 409) close the socket
    # (1011) and are no statuses; a request that is not an upgrade is 426.
    assert statuses(chat) == [101, 400, 405, 413, 426, 500, 503, 504]
    echo = document["paths"]["/echo"]["get"]
    binary = {"type": "string", "format": "binary"}
    assert echo["x-svc-websocket"] == {"receives": binary, "sends": binary}
    lines = document["paths"]["/rooms/{room}/lines"]["get"]
    assert 409 in statuses(lines) and 204 in statuses(lines)  # an event stream's handler's
    assert {"Said", "Line"} <= set(document["components"]["schemas"])


def _get(port: int, path: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", path, headers=headers)
        answer = connection.getresponse()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
    finally:
        connection.close()


def _stream_until_bye(port: int, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    """A whole stream of /notes/live: its `ready` event, then a note "bye" published while
    it is open, after which the handler ends the stream."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", "/notes/live", headers=headers)
        answer = connection.getresponse()
        body = answer.read1()  # the head comes with the first event: subscribed by then
        while b"event: ready" not in body:
            body += answer.read1()
        note = json.dumps({"id": 3, "text": "bye"}).encode()
        posted = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        posted.request("POST", "/notes", body=note, headers={"Content-Type": "application/json"})
        assert posted.getresponse().status == 200
        posted.close()
        body += answer.read()  # to the end of the stream
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, body
    finally:
        connection.close()


def test_the_event_stream_answers_validate_against_the_document() -> None:
    server = start([LIVE])
    try:
        member = {"x-member": "ann", "Last-Event-ID": "2"}
        status, headers, body = _stream_until_bye(server.port, member)
        answers = [("/notes/live", member, status, headers, body)]
        for path, sent in (("/notes/live", {}), ("/notes/live?room=nowhere", member),
                           ("/quiet", {})):
            answers.append((path, sent, *_get(server.port, path, sent)))
    finally:
        server.stop()
    assert [a[2] for a in answers] == [200, 401, 404, 204]
    assert body.startswith(b"retry: 2000\n\n")
    assert b'data: {"id":0,"text":"ann back after 2"}' in body and b"id: 3\n" in body
    exchanges = [Exchange("GET", path, {k.lower(): v for k, v in sent.items()}, None, status,
                          headers, answer) for path, sent, status, headers, answer in answers]
    document = openapi_document([LIVE])
    assert exchange_problems(document, exchanges) == []
    del document["paths"]["/quiet"]["get"]["responses"]["204"]  # a drifted document is caught
    assert [p.split(":")[0] for p in exchange_problems(document, exchanges)] == [
        "GET /quiet -> 204"]
