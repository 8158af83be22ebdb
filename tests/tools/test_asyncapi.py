"""`svcc asyncapi`: the AsyncAPI 3.0 documents of the programs with streams and topics validate
against AsyncAPI's own JSON Schema (the npm package @asyncapi/specs, pinned in
tests/tools/client_node), and every reference in them resolves; a channel per event stream,
WebSocket and topic, with the operations and messages each has."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from tests.helpers import node
from tests.helpers.svc_process import REPO, run_to_end

FOLDER = REPO / "tests" / "tools" / "client_node"
CHAT = str(FOLDER / "chat.svc")  # two WebSockets, an event stream, a topic
LIVE = str(FOLDER / "live.svc")  # event streams behind a guard, a topic
MESSAGES = "#/components/messages/"


@pytest.fixture(scope="module")
def asyncapi_schema() -> dict:
    """AsyncAPI 3.0.0's JSON Schema (draft 7), as the AsyncAPI parser validates with it."""
    modules = node.npm_installed(FOLDER, "the AsyncAPI tests")
    return json.loads((modules / "@asyncapi" / "specs" / "schemas" / "3.0.0-without-$id.json")
                      .read_text())


def asyncapi_document(args: list[str]) -> dict:
    result = run_to_end(["asyncapi", *args], cwd=REPO)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def problems(document: dict, schema: dict) -> list[str]:
    """What AsyncAPI's schema refuses, and every `$ref` that points at nothing."""
    found = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
             for e in jsonschema.Draft7Validator(schema).iter_errors(document)]
    return found + [f"{ref} resolves to nothing" for ref in _refs(document)
                    if _resolve(document, ref) is None]


def _refs(value) -> list[str]:
    """Every `$ref` in `value`, at any depth."""
    if isinstance(value, list):
        return [ref for item in value for ref in _refs(item)]
    if not isinstance(value, dict):
        return []
    own = [value["$ref"]] if "$ref" in value else []
    return own + [ref for item in value.values() for ref in _refs(item)]


def _resolve(document: dict, ref: str):
    found = document
    for part in ref.removeprefix("#/").split("/"):
        found = found.get(part.replace("~1", "/").replace("~0", "~")) if isinstance(
            found, dict) else None
    return found


@pytest.mark.parametrize("args", [[CHAT], [LIVE], ["examples/hello/hello.svc"]],
                         ids=lambda a: Path(a[-1]).name)
def test_every_document_is_valid_asyncapi_3(args: list[str], asyncapi_schema: dict) -> None:
    document = asyncapi_document(args)
    assert problems(document, asyncapi_schema) == []
    assert document["asyncapi"] == "3.0.0" and document["info"]["version"] == "0"
    for operation in document["operations"].values():  # what AsyncAPI 3.0 requires
        assert operation["action"] in ("send", "receive")
        channel = operation["channel"]["$ref"]
        assert all(m["$ref"].startswith(channel + "/messages/") for m in operation["messages"])


def test_a_broken_document_is_refused(asyncapi_schema: dict) -> None:
    document = asyncapi_document([CHAT])
    document["operations"]["chat.send"]["action"] = "publish"  # AsyncAPI 2's word
    del document["components"]["messages"]["Said"]
    found = problems(document, asyncapi_schema)
    assert [problem.split(":")[0] for problem in found] == [
        "operations/chat.send", "#/components/messages/Said resolves to nothing"], found


def test_websockets_event_streams_and_topics_are_channels(asyncapi_schema: dict) -> None:
    document = asyncapi_document([CHAT])
    assert document["info"]["title"] == "chat"
    channels = document["channels"]
    assert set(channels) == {"chat", "echo", "lines", "topic.ROOM"}
    chat = channels["chat"]
    assert chat["address"] == "/rooms/{room}/chat" and set(chat["parameters"]) == {"room"}
    assert chat["bindings"] == {"ws": {"method": "GET", "bindingVersion": "0.1.0"}}
    assert chat["messages"] == {"Said": {"$ref": MESSAGES + "Said"},
                                "Line": {"$ref": MESSAGES + "Line"}}
    operations = document["operations"]
    assert {(key, op["action"]) for key, op in operations.items()} == {
        ("chat.receive", "receive"), ("chat.send", "send"),  # the client's Said, the program's Line
        ("echo.receive", "receive"), ("echo.send", "send"), ("lines.send", "send"),
        ("topic.ROOM.send", "send"), ("topic.ROOM.receive", "receive")}
    assert operations["chat.receive"]["messages"] == [{"$ref": "#/channels/chat/messages/Said"}]
    messages = document["components"]["messages"]
    assert messages["Line"] == {"name": "Line", "contentType": "application/json",
                                "payload": {"$ref": "#/components/schemas/Line"}}
    assert messages["bytes.binary"]["payload"] == {"type": "string", "format": "binary"}
    assert messages["bytes.binary"]["contentType"] == "application/octet-stream"
    event = messages["Line.event"]  # a server-sent event: its name and id are headers
    assert event["payload"] == {"$ref": "#/components/schemas/Line"}
    assert set(event["headers"]["properties"]) == {"event", "id"}
    room = channels["topic.ROOM"]
    assert room["address"] == "room" and "at most once, in order per publisher" in room[
        "description"]
    assert set(document["components"]["schemas"]) == {"Said", "Line"}  # no error bodies here


def test_a_guarded_stream_has_its_security_and_query(asyncapi_schema: dict) -> None:
    document = asyncapi_document([LIVE])
    live = document["operations"]["live_notes.send"]
    assert live["security"] == [{"$ref": "#/components/securitySchemes/header_x-member"}]
    assert document["components"]["securitySchemes"] == {
        "header_x-member": {"type": "httpApiKey", "in": "header", "name": "x-member"}}
    assert live["bindings"]["http"] == {
        "method": "GET", "query": {"type": "object", "properties": {"room": {"type": "string"}}},
        "bindingVersion": "0.3.0"}
    assert document["components"]["messages"]["List.str.event"]["payload"] == {
        "type": "array", "items": {"type": "string"}}  # /quiet's events


def test_output_and_errors_are_those_of_svcc_openapi(tmp_path: Path) -> None:
    out = tmp_path / "asyncapi.json"
    result = run_to_end(["asyncapi", CHAT, "--output", str(out)], cwd=REPO)
    assert result.returncode == 0 and result.stdout == ""
    assert json.loads(out.read_text()) == asyncapi_document([CHAT])
    (tmp_path / "bad.svc").write_text("async def main() -> Result[unit, Error]:\n"
                                      "    return ok(nope)\n")
    result = run_to_end(["asyncapi", str(tmp_path / "bad.svc")], cwd=REPO)
    assert result.returncode == 1 and result.stdout == "" and "nope" in result.stderr
