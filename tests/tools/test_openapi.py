"""`svcc openapi`: the documents of every example and test program are valid OpenAPI 3.1, say
what the server does (routes, parameters, bodies, statuses, schemas), and the task manager's
real traffic validates against its document (here, and in every test of test_tasks_api.py)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from openapi_spec_validator import validate

from tests.helpers.openapi_check import exchange_problems, openapi_document, recording
from tests.helpers.svc_process import REPO, run_to_end
from tests.helpers.tasks_server import PROJECT, start

PROGRAMS = [["--project", "examples/tasks"], ["examples/hello/hello.svc"],
            ["examples/workload/workload.svc"]] + [
    [str(p.relative_to(REPO))] for p in sorted((REPO / "tests" / "e2e" / "programs").glob("*.svc"))
    if not p.name.endswith("_test.svc")]  # a program's test file is not a program
I64 = {"type": "integer", "format": "int64", "minimum": -(2**63), "maximum": 2**63 - 1}
I32 = {"type": "integer", "format": "int32", "minimum": -(2**31), "maximum": 2**31 - 1}
ERROR = {"$ref": "#/components/schemas/Error"}


def statuses(operation: dict) -> list[int]:
    return sorted(int(s) for s in operation["responses"])


@pytest.mark.parametrize("args", PROGRAMS, ids=lambda a: a[-1])
def test_every_document_is_valid_openapi_3_1(args: list[str]) -> None:
    document = openapi_document(args)
    validate(document)  # raises with the reason when invalid
    assert document["openapi"] == "3.1.0"
    assert {"/health", "/ready", "/stream", "/ws"} <= set(document["paths"])


def test_the_task_manager_document() -> None:
    document = openapi_document(["--project", "examples/tasks"])
    assert document["info"]["title"] == "tasks"
    paths = document["paths"]
    assert set(paths) == {"/", "/client.js", "/api/tasks", "/api/tasks/{id}", "/api/stats",
                          "/health", "/ready", "/stream", "/ws", "/api/tasks/search", "/api/tags",
                          "/api/tasks/{id}/attachments", "/api/attachments",
                          "/api/attachments/{id}", "/api/live"}
    routes = {(m, p) for p, item in paths.items() for m in item if m != "description"}
    assert routes == {("get", "/"), ("get", "/client.js"), ("get", "/api/tasks"),
                      ("post", "/api/tasks"),
                      ("get", "/api/tasks/{id}"), ("put", "/api/tasks/{id}"),
                      ("delete", "/api/tasks/{id}"), ("get", "/api/stats"),
                      ("patch", "/api/tasks/{id}"), ("get", "/api/tasks/search"),
                      ("get", "/api/tags"), ("post", "/api/tasks/{id}/attachments"),
                      ("get", "/api/attachments"), ("get", "/api/attachments/{id}"),
                      ("delete", "/api/attachments/{id}"), ("get", "/api/live"),
                      ("get", "/health"), ("get", "/ready"), ("get", "/stream"),
                      ("get", "/ws")}
    live = paths["/api/live"]["get"]["responses"]  # the changes, as server-sent events
    assert live["200"]["content"]["text/event-stream"]["x-svc-item-schema"]["properties"][
        "data"]["contentSchema"] == {"$ref": "#/components/schemas/TaskChanged"}
    assert "204" in live
    attach = paths["/api/tasks/{id}/attachments"]["post"]
    assert list(attach["requestBody"]["content"]) == ["multipart/form-data", "*/*"]
    assert attach["requestBody"]["description"] == "At most 10 MiB (10,485,760 bytes)."
    assert {"404", "413", "507"} <= set(attach["responses"])
    download = paths["/api/attachments/{id}"]["get"]["responses"]["200"]
    assert list(download["content"]) == ["*/*"]  # the type the handler sets
    create = paths["/api/tasks"]["post"]
    assert create["operationId"] == "create_task"
    assert create["requestBody"] == {"required": True, "content": {"application/json": {
        "schema": {"$ref": "#/components/schemas/TaskInput"}}}}
    assert create["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Task"}
    # The database can refuse with a constraint (409); a body is JSON only (415); the title's
    # rule is binding's 422.
    assert statuses(create) == [200, 400, 405, 409, 413, 415, 422, 500, 503, 504]
    get = paths["/api/tasks/{id}"]["get"]
    assert get["parameters"] == [{"name": "id", "in": "path", "required": True, "schema": I64}]
    assert statuses(get) == [200, 400, 404, 405, 409, 413, 500, 503, 504]
    index = paths["/"]["get"]
    assert index["responses"]["200"]["content"] == {"text/html": {"schema": {"type": "string"}}}
    assert statuses(index) == [200, 400, 405, 413, 500, 503, 504]  # no database, no not_found
    listing = paths["/api/tasks"]["get"]["responses"]["200"]["content"]["application/json"]
    assert listing["schema"] == {"type": "array", "items": {"$ref": "#/components/schemas/Task"}}
    schemas = document["components"]["schemas"]
    assert schemas["Task"] == {
        "type": "object",
        "properties": {"id": I64, "title": {"type": "string"}, "done": {"type": "boolean"},
                       "created_at": {"type": "string"}, "updated_at": {"type": "string"},
                       "priority": {"type": "string", "enum": ["low", "normal", "high"]},
                       "tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["id", "title", "done", "created_at", "updated_at", "priority", "tags"],
        "additionalProperties": False}
    assert schemas["TaskInput"]["properties"]["title"] == {
        "type": "string", "minLength": 1, "maxLength": 240,
        "description": "1 to 240 bytes: svc counts the UTF-8 bytes, not the characters"}
    assert schemas["Error"]["properties"] == {  # a 400 for a body names its field
        "error": {"type": "string"},
        "fields": {"type": "object", "additionalProperties": {"type": "string"}}}
    assert schemas["Error"]["required"] == ["error"]
    for status in ("400", "404", "500"):
        response = get["responses"][status]
        name = response["$ref"].rsplit("/", 1)[1]
        assert document["components"]["responses"][name]["content"] == {
            "application/json": {"schema": ERROR}}


PARAMETERS = '''\
class Inner:
    n: i32

class Outer:
    id: i64
    ratio: f64
    name: str?
    tags: List[str]
    inner: Inner?
    items: List[Inner]

@get("/things/{id}")
async def find(id: i32, q: str, limit: i64?, exact: bool?, min: f64) -> Result[Outer?, Error]:
    return ok(None)

@post("/things")
async def add(db: Db, thing: Outer) -> Result[unit, Error]:
    return ok(())

@put("/raw/{name}")
async def raw(name: str, data: bytes) -> Result[i64, Error]:
    return ok(len(data))

def guard(id: i64) -> Result[unit, Error]:
    if id == 2:
        return not_found("no such thing")
    if id == 0:
        return unauthorized("no")
    if id == 1:
        return forbidden("no")
    return ok(())

@delete("/things/{id}")
async def remove(id: i64) -> Result[List[i64], Error]:
    try guard(id)
    return ok([id])

async def main() -> Result[unit, Error]:
    db = try await db_open(":memory:")
    return await serve(db, 0)
'''


def test_parameters_bodies_optional_values_and_error_kinds(tmp_path: Path) -> None:
    program = PARAMETERS
    if "unauthorized" not in _builtins():  # the 0.2 error kinds are not in yet
        program = program.replace('unauthorized("no")', 'error("no")').replace(
            'forbidden("no")', 'error("no")')
    (tmp_path / "things.svc").write_text(program)
    document = openapi_document([str(tmp_path / "things.svc")])
    validate(document)
    assert document["info"]["title"] == "things"
    find = document["paths"]["/things/{id}"]["get"]
    assert find["parameters"] == [
        {"name": "id", "in": "path", "required": True, "schema": I32},
        {"name": "q", "in": "query", "required": True, "schema": {"type": "string"}},
        {"name": "limit", "in": "query", "required": False, "schema": I64},
        {"name": "exact", "in": "query", "required": False, "schema": {"type": "boolean"}},
        {"name": "min", "in": "query", "required": True,
         "schema": {"type": "number", "format": "double"}}]
    assert 404 in statuses(find) and 409 not in statuses(find) and 415 not in statuses(find)
    assert find["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Outer"}
    add = document["paths"]["/things"]["post"]
    assert "204" in add["responses"] and "200" not in add["responses"]
    assert "content" not in add["responses"]["204"]
    assert 415 in statuses(add) and 404 not in statuses(add)
    raw = document["paths"]["/raw/{name}"]["put"]
    assert list(raw["requestBody"]["content"]) == ["application/octet-stream"]
    assert 415 not in statuses(raw)
    remove = document["paths"]["/things/{id}"]["delete"]
    assert 404 in statuses(remove) and 409 not in statuses(remove)  # not_found, via guard()
    if "unauthorized" in _builtins():
        assert {401, 403} <= set(statuses(remove))
    assert remove["responses"]["200"]["content"]["application/json"]["schema"] == {
        "type": "array", "items": I64}
    outer = document["components"]["schemas"]["Outer"]
    assert outer["required"] == ["id", "ratio", "name", "tags", "inner", "items"]
    assert outer["additionalProperties"] is False
    assert outer["properties"]["name"] == {"type": ["string", "null"]}
    assert outer["properties"]["inner"] == {
        "oneOf": [{"$ref": "#/components/schemas/Inner"}, {"type": "null"}]}
    assert outer["properties"]["items"] == {"type": "array",
                                            "items": {"$ref": "#/components/schemas/Inner"}}
    assert document["components"]["schemas"]["Inner"]["properties"] == {"n": I32}


def _builtins() -> set[str]:
    from svc.compiler.builtin_table import BUILTINS

    return set(BUILTINS)


def test_output_writes_the_same_document_to_a_file(tmp_path: Path) -> None:
    out = tmp_path / "openapi.json"
    result = run_to_end(["openapi", "examples/hello/hello.svc", "--output", str(out)], cwd=REPO)
    assert result.returncode == 0 and result.stdout == "" and result.stderr == ""
    assert json.loads(out.read_text()) == openapi_document(["examples/hello/hello.svc"])


def test_an_unwritable_output_is_one_error_line(tmp_path: Path) -> None:
    result = run_to_end(["openapi", "examples/hello/hello.svc", "--output", str(tmp_path)],
                        cwd=REPO)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith(f"error: cannot write '{tmp_path}': ")
    assert result.stderr.count("\n") == 1


def test_a_program_with_errors_gets_its_diagnostics_and_no_document(tmp_path: Path) -> None:
    (tmp_path / "bad.svc").write_text("def main():\n    x = )\n")
    result = run_to_end(["openapi", "bad.svc"], cwd=tmp_path)
    assert result.returncode == 1 and result.stdout == ""
    assert " --> bad.svc:2:9" in result.stderr


# --- the real server against its document --------------------------------------------------------

def traffic(server) -> None:
    """Requests of every kind: accepted, refused by the handler, refused by the server."""
    task = server.add("check the document")
    server.add("x" * 240, done=True)
    server.request("GET", "/api/tasks")
    server.request("GET", f"/api/tasks/{task['id']}")
    server.request("PUT", f"/api/tasks/{task['id']}", {"title": "renamed", "done": True})
    server.request("GET", "/api/stats")
    server.request("GET", "/")
    server.request("DELETE", f"/api/tasks/{task['id']}")
    server.request("DELETE", f"/api/tasks/{task['id']}")  # 404
    server.request("GET", "/api/tasks/abc")  # 400
    server.request("POST", "/api/tasks", {"title": "", "done": False})  # 400
    server.request("POST", "/api/tasks", {"title": "a", "done": False, "extra": 1})  # 400
    server.request("POST", "/api/tasks", raw=b"title=a", headers={"Content-Type": "text/plain"})
    server.request("POST", "/api/tasks/1")  # 405
    server.request("GET", "/nowhere")  # 404
    server.request("GET", "/health")
    server.request("GET", "/ready")
    server.request("HEAD", "/api/stats")
    task = server.add("tagged")
    server.request("PATCH", f"/api/tasks/{task['id']}", {"priority": "high", "tags": ["a"]})
    server.request("PATCH", f"/api/tasks/{task['id']}", {"priority": "urgent", "tags": []})  # 400
    server.request("GET", "/api/tasks/search?pattern=ta")
    server.request("GET", "/api/tasks/search?pattern=(a")  # 400
    server.request("GET", "/api/tags")
    server.request("HEAD", "/api/live")  # an event stream's head alone


def test_the_servers_answers_validate_against_its_document(tmp_path: Path) -> None:
    server = start(tmp_path, db=tmp_path / "tasks.sqlite")
    try:
        with recording() as exchanges:
            traffic(server)
    finally:
        assert server.stop() == 0
    assert len(exchanges) == 25
    statuses_seen = {e.status for e in exchanges}
    assert {200, 400, 404, 405, 415} <= statuses_seen
    document = openapi_document(["--project", str(PROJECT)])
    assert exchange_problems(document, exchanges) == []

    # A document that drifted from the server is caught: a field's type, a missing status.
    drifted = copy.deepcopy(document)
    drifted["components"]["schemas"]["Task"]["properties"]["title"] = {"type": "integer"}
    del drifted["paths"]["/api/tasks/{id}"]["delete"]["responses"]["404"]
    problems = exchange_problems(drifted, exchanges)
    assert any(p.startswith("POST /api/tasks -> 200: response") for p in problems), problems
    assert any(p.startswith("DELETE /api/tasks/") and "-> 404: response" in p
               for p in problems), problems
    # And a document that refuses what the server accepts.
    stricter = copy.deepcopy(document)
    stricter["components"]["schemas"]["TaskInput"]["properties"]["title"]["maxLength"] = 5
    problems = exchange_problems(stricter, exchanges)
    assert any("accepted, but the document refuses the request" in p for p in problems), problems


# --- Response[T] routes: the statuses of their `respond` literals ----------------------------------

RESPONDING = '''\
class Item:
    id: i64
    name: str

def created(item: Item) -> Response[Item]:
    r = respond(201, item)
    set_header(r, "Location", f"/items/{item.id}")
    return r

def checked(item: Item) -> Result[Response[Item], Error]:
    if item.id == 0:
        return ok(respond(409, item))
    return ok(created(item))

def unrelated() -> i64:
    # a Response made here cannot reach a handler: not followed
    r = respond(418, ())
    return 1

@post("/items")
async def add(item: Item) -> Result[Response[Item], Error]:
    if item.id < 0:
        return conflict("taken")
    n = unrelated()
    if item.id == 5:
        return ok(respond(200, item))
    return checked(item)

@get("/gone")
async def gone() -> Result[Response[Item], Error]:
    return ok(respond(204, Item(id=1, name="never sent")))

@get("/page")
async def page() -> Result[Response[Html], Error]:
    return ok(respond(203, html("<p>hi</p>")))

@get("/cached")
async def cached(fresh: bool) -> Result[Response[unit], Error]:
    if fresh:
        return ok(respond(304, ()))
    return ok(respond(200, ()))

@get("/any/{code}")
async def any_status(code: i64) -> Result[Response[Item], Error]:
    if code == 0:
        return ok(respond(202, Item(id=0, name="zero")))
    return ok(respond(code, Item(id=code, name="computed")))

@get("/refused")
async def refused() -> Result[Response[Item], Error]:
    return forbidden("never")

async def main() -> Result[unit, Error]:
    db = try await db_open(":memory:")
    return await serve(db, 0)
'''
ITEM = {"$ref": "#/components/schemas/Item"}


def test_a_response_route_lists_the_statuses_of_its_respond_literals(tmp_path: Path) -> None:
    (tmp_path / "items.svc").write_text(RESPONDING)
    document = openapi_document([str(tmp_path / "items.svc")])
    validate(document)
    paths = document["paths"]
    add = paths["/items"]["post"]["responses"]
    # its own respond(200), created()'s 201 through checked(), checked()'s 409; not 418
    assert {"200", "201", "409"} <= set(add) and "418" not in add and "2XX" not in add
    for status in ("200", "201"):
        assert add[status]["content"] == {"application/json": {"schema": ITEM}}
    # 409 is both a respond literal and the conflict error: either body
    assert add["409"]["content"] == {"application/json": {"schema": {"anyOf": [ITEM, ERROR]}}}
    assert statuses(paths["/items"]["post"]) == [200, 201, 400, 405, 409, 413, 415, 500, 503,
                                                   504]
    gone = paths["/gone"]["get"]["responses"]
    assert "content" not in gone["204"] and "200" not in gone
    page = paths["/page"]["get"]["responses"]["203"]
    assert page["content"] == {"text/html": {"schema": {"type": "string"}}}
    cached = paths["/cached"]["get"]["responses"]
    assert "content" not in cached["200"] and "content" not in cached["304"]
    # a computed status: "2XX", beside the literal ones
    computed = paths["/any/{code}"]["get"]["responses"]
    assert {"202", "2XX"} <= set(computed)
    assert computed["2XX"]["content"] == {"application/json": {"schema": ITEM}}
    # never a respond: no success response, only the errors
    refused = paths["/refused"]["get"]
    assert min(statuses(refused)) == 400 and 403 in statuses(refused)
    assert not any(s.startswith("2") for s in refused["responses"])


def test_the_http_headers_programs_answers_validate_against_its_document() -> None:
    from tests.helpers.http_testkit import request
    from tests.helpers.openapi_check import Exchange
    from tests.helpers.svc_process import start as start_program

    program = REPO / "tests" / "e2e" / "programs" / "http_headers.svc"
    document = openapi_document([str(program)])
    validate(document)
    # (not /problem nor /text: a Content-Type the handler sets is not in the document)
    requests = [("POST", "/notes", b'{"id":1,"text":"a"}'),
                ("POST", "/notes", b'{"id":-1,"text":"a"}'),
                ("PUT", "/notes/3", b'{"id":9,"text":"b"}'), ("GET", "/login", None),
                ("GET", "/not-modified", None), ("GET", "/page", None),
                ("GET", "/nothing", None), ("GET", "/maybe/0", None), ("GET", "/maybe/2", None),
                ("GET", "/status/299", None), ("GET", "/conflict", None),
                ("GET", "/copied/first", None), ("GET", "/plain", None)]
    server = start_program([str(program)])
    exchanges = []
    try:
        for method, target, body in requests:
            headers = {"content-type": "application/json"} if body is not None else {}
            answer = request(server.port, method, target, body, headers)
            exchanges.append(Exchange(method, target, headers, body, answer.status,
                                      answer.headers, answer.body))
    finally:
        assert server.stop() == 0
    assert [e.status for e in exchanges] == [201, 400, 201, 200, 304, 202, 204, 200, 200, 299,
                                             409, 200, 200]
    assert exchange_problems(document, exchanges) == []
    # The document is precise: a status the handler does not write is caught.
    drifted = copy.deepcopy(document)
    drifted["paths"]["/notes"]["post"]["responses"]["200"] = drifted["paths"]["/notes"][
        "post"]["responses"].pop("201")
    problems = exchange_problems(drifted, exchanges)
    assert any(p.startswith("POST /notes -> 201: response") for p in problems), problems


def test_a_python_function_leaves_the_document_as_it_is() -> None:
    """In process: a handler calling a `@python` function describes the same API as one
    doing the work in svc (the boundary adds no parameter, body or status)."""
    from svc.compiler.front.parser import parse
    from svc.compiler.source import SourceFile
    from svc.pipeline import check_modules
    from svc.tools.openapi import document

    head = ('@python("html", "escape", error="not_found")\n'
            "async def escape(text: str) -> Result[str, Error]\n\n")
    handler = ('@get("/notes/{title}")\nasync def note(title: str) -> Result[Html, Error]:\n'
               "    return ok(html(BODY))\n\n"
               "async def main() -> Result[unit, Error]:\n"
               '    db = try await db_open(":memory:")\n    return await serve(db, 8080)\n')

    def described(text: str) -> dict:
        module, diagnostics = parse(SourceFile("notes.svc", text))
        program, diagnostics = check_modules([module], "notes.svc")
        assert diagnostics == []
        return document(program, "notes")

    with_python = described(head + handler.replace("BODY", "try await escape(title)"))
    assert with_python == described(handler.replace("BODY", "title"))


UPLOADS = """\
@post("/photos", body_limit="20 MiB")
async def add_photo(photo: Upload, thumb: Upload?, caption: str?) -> Result[str, Error]:
    return ok(upload_name(photo))

@put("/files/{name}")
async def put_file(name: str, file: Upload) -> Result[i64, Error]:
    return ok(upload_size(file))

async def main() -> Result[unit, Error]:
    db = try await db_open(":memory:")
    return await serve(db, 8080)
"""
FILE = {"type": "string", "format": "binary", "contentMediaType": "application/octet-stream"}


def test_upload_routes_take_multipart_files_and_say_their_limit(tmp_path: Path) -> None:
    """Files are a multipart/form-data body (required ones listed), a route of one file also
    takes it as the whole body of any type, scalar parameters stay in the query, a raised body
    limit is said, and 507 (and 415 for several files) are among the statuses."""
    (tmp_path / "files.svc").write_text(UPLOADS)
    document = openapi_document([str(tmp_path / "files.svc")])
    validate(document)
    photos = document["paths"]["/photos"]["post"]
    assert photos["parameters"] == [
        {"name": "caption", "in": "query", "required": False, "schema": {"type": "string"}}]
    assert photos["requestBody"] == {
        "required": True, "description": "At most 20 MiB (20,971,520 bytes).", "content": {
            "multipart/form-data": {"schema": {
                "type": "object", "properties": {"photo": FILE, "thumb": FILE},
                "required": ["photo"]}}}}
    assert {413, 415, 507} <= set(statuses(photos))  # 415: two files need a multipart body
    put = document["paths"]["/files/{name}"]["put"]
    assert "description" not in put["requestBody"]  # the server's 1 MiB
    assert put["requestBody"]["content"]["*/*"] == {"schema": FILE}
    assert {413, 507} <= set(statuses(put)) and 415 not in statuses(put)
    assert document["components"]["responses"]["InsufficientStorage"]["description"]
