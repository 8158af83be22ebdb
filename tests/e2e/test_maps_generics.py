"""`Map[str, T]` and generic classes over real HTTP (docs/reference/language.md, "Maps" and
"Generic classes"): JSON objects bound strictly as bodies and answered as results, one class
per instantiation, and their OpenAPI schemas."""

from __future__ import annotations

from pathlib import Path

import pytest
from openapi_spec_validator import validate

from tests.helpers.openapi_check import openapi_document
from tests.helpers.svc_process import run_to_end, start

PROGRAM = Path(__file__).with_name("programs") / "maps_generics.svc"
INT64 = {"type": "integer", "format": "int64", "minimum": -2**63, "maximum": 2**63 - 1}


@pytest.fixture(scope="module")
def server():
    server = start([str(PROGRAM)])
    yield server
    assert server.stop() == 0


def _error(r) -> str:
    assert r.status == 400, (r.status, r.body)
    return r.json()["error"]


def test_a_map_body_and_result_keep_insertion_order(server):
    r = server.request("POST", "/counts", {"b": 1, "a": 2, "c": -3})
    assert r.status == 200
    assert r.body == b'{"b":2,"a":4,"c":-6}'
    assert server.request("POST", "/counts", {}).json() == {}


@pytest.mark.parametrize("body, where", [
    ([1, 2], "Expected `object`, got `array`"),
    ("x", "Expected `object`, got `str`"),
    ({"a": "x"}, "Expected `int`, got `str` - at `$[...]`"),
    ({"a": None}, "Expected `int`, got `null` - at `$[...]`"),
    ({"a": 2**63}, "at `$[...]`"),
    ({"a": 1.5}, "at `$[...]`"),
])
def test_a_wrong_map_body_is_a_400_saying_where(server, body, where):
    assert where in _error(server.request("POST", "/counts", body))


def test_a_map_field_of_a_body_class(server):
    r = server.request("POST", "/stock", {"sku": "x", "counts": {"a": 1, "b": 2}})
    assert (r.status, r.json()) == (200, 3)
    message = _error(server.request("POST", "/stock", {"sku": "x", "counts": {"a": True}}))
    assert "at `$.counts[...]`" in message
    assert "Expected `object`" in _error(server.request("POST", "/stock",
                                                        {"sku": "x", "counts": [1]}))


def test_a_generic_class_as_result_and_body(server):
    r = server.request("GET", "/tasks?limit=2")
    assert r.json() == {"items": [{"id": 0, "title": "task 0"}, {"id": 1, "title": "task 1"}],
                        "next": "/tasks?after=2"}
    page = {"items": [{"id": 1, "title": "t"}], "next": None}
    assert server.request("POST", "/pages", page).json() == page


@pytest.mark.parametrize("body, message", [
    ({"items": [{"id": 1}], "next": None}, "missing required field `title` - at `$.items[0]`"),
    ({"items": [], "next": None, "x": 1}, "unknown field `x`"),
    ({"items": [{"id": "1", "title": "t"}], "next": None}, "at `$.items[0].id`"),
    ({"items": []}, "missing required field `next`"),
])
def test_a_generic_class_body_is_bound_strictly(server, body, message):
    assert message in _error(server.request("POST", "/pages", body))


def test_openapi_has_one_schema_per_instantiation_and_maps_as_objects():
    document = openapi_document([str(PROGRAM)])
    validate(document)
    schemas = document["components"]["schemas"]
    assert "Page" not in schemas
    assert schemas["Page.Task"]["properties"]["items"] == {
        "type": "array", "items": {"$ref": "#/components/schemas/Task"}}
    assert schemas["Stock"]["properties"]["counts"] == {
        "type": "object", "additionalProperties": INT64}
    post = document["paths"]["/counts"]["post"]
    assert post["requestBody"]["content"]["application/json"]["schema"] == {
        "type": "object", "additionalProperties": INT64}
    pages = document["paths"]["/pages"]["post"]["requestBody"]["content"]["application/json"]
    assert pages["schema"] == {"$ref": "#/components/schemas/Page.Task"}


def test_maps_and_generic_classes_in_a_program(tmp_path):
    source = tmp_path / "m.svc"
    source.write_text('''
class Pair[A, B]:
    first: A
    second: B

class Node[T]:
    value: T
    kids: List[Node[T]]

def main():
    let m: Map[str, i64] = Map[str, i64]()
    set(m, "b", 2)
    set(m, "a", 1)
    set(m, "b", 3)
    for k in m:
        set(m, k + "!", 0)
    print(join(keys(m), ","))
    has_a = contains(m, "a")
    has_z = contains(m, "z")
    print(f"{len(m)} {has_a} {has_z}")
    match get(m, "b"):
        case Some(v):
            print(str(v))
        case None:
            print("none")
    c = copy(m)
    set(c, "new", 1)
    print(f"{len(m)} {len(c)}")
    p = Pair[str, List[i64]](first="x", second=[1])
    let q: Pair[i64, str] = Pair(first=1, second="y")
    print(json_encode(p) + json_encode(q))
    n = Node[str](value="root", kids=[Node[str](value="leaf", kids=[])])
    print(n.kids[0].value)
    match json_decode[Map[str, Pair[i64, str]]]("{\\"k\\": {\\"first\\": 1, \\"second\\": \\"s\\"}}"):
        case Ok(d):
            print(json_encode(d))
        case Err(e):
            print(error_message(e))
''')
    result = run_to_end(["run", str(source)])
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "b,a,b!,a!", "4 True False", "3", "4 5",
        '{"first":"x","second":[1]}{"first":1,"second":"y"}', "leaf",
        '{"k":{"first":1,"second":"s"}}']
