"""Field rules over real HTTP (docs/reference/language.md, "Field rules"): a body that breaks
its class's rules is one 422 naming every failing field by its path, in field order; a body
that keeps them reaches the handler; `json_decode[T]` checks them too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.svc_process import start

# Its subject is the compiled request path (binding): `make test` runs it again on the
# pure-Python modules.
pytestmark = pytest.mark.compiled_path

PROGRAM = Path(__file__).with_name("programs") / "field_rules.svc"
LINE = {"qty": 1, "unit": "kg"}
ORDER = {"title": "ok", "code": None, "lines": [LINE], "discount": 0.5, "priority": 1,
         "extras": {}, "parent": None}
NOT_ACCEPTABLE = "the request's fields are not acceptable"


@pytest.fixture(scope="module")
def server():
    server = start([str(PROGRAM)])
    yield server
    assert server.stop() == 0


def _fields(r) -> dict:
    assert r.status == 422, (r.status, r.body)
    body = r.json()
    assert list(body) == ["error", "fields"] and body["error"] == NOT_ACCEPTABLE
    return body["fields"]


def test_a_body_that_keeps_every_rule_reaches_the_handler(server):
    edges = {**ORDER, "title": "x" * 240, "code": "ABC", "lines": [LINE] * 3,
             "discount": 1.0, "priority": 3, "extras": {"a": {"qty": 100, "unit": "g"}}}
    for body in (ORDER, edges, {**ORDER, "title": "é" * 120}):
        r = server.request("POST", "/orders", body)
        assert (r.status, r.json()) == (200, body["title"])


def test_every_failing_field_is_named_in_field_order(server):
    bad = {"title": "", "code": "abc", "lines": [LINE, {"qty": 0, "unit": "kg"},
                                                 {"qty": 5, "unit": "lb"}],
           "discount": 1.5, "priority": 4, "extras": {"x.y": {"qty": 101, "unit": "g"}},
           "parent": {**ORDER, "title": "t" * 241}}
    fields = _fields(server.request("POST", "/orders", bad))
    assert list(fields.items()) == [
        ("title", "must be 1 to 240 bytes long"),
        ("code", "must match [A-Z]{3}"),
        ("lines[1].qty", "must be between 1 and 100"),
        ("lines[2].unit", "must be one of: kg, g"),
        ("discount", "must be between 0.0 and 1.0"),
        ("priority", "must be one of: 1, 2, 3"),
        ('extras["x.y"].qty', "must be between 1 and 100"),
        ("parent.title", "must be 1 to 240 bytes long"),
    ]


def test_lengths_count_utf8_bytes_and_list_items(server):
    assert _fields(server.request("POST", "/orders", {**ORDER, "title": "é" * 121})) == {
        "title": "must be 1 to 240 bytes long"}
    assert _fields(server.request("POST", "/orders", {**ORDER, "lines": []})) == {
        "lines": "must have 1 to 3 items"}


def test_a_pattern_must_match_the_whole_value(server):
    for code in ("ABCD", "xABC", "AB"):
        assert _fields(server.request("POST", "/orders", {**ORDER, "code": code})) == {
            "code": "must match [A-Z]{3}"}


def test_a_wrong_type_stays_a_400_naming_its_field(server):
    r = server.request("POST", "/orders", {**ORDER, "title": 7})
    assert r.status == 400
    assert r.json() == {"error": "invalid request body: Expected `str`, got `int` - at `$.title`",
                        "fields": {"title": "expected `str`, got `int`"}}
    r = server.request("POST", "/orders", {**ORDER, "lines": [{"qty": "1", "unit": "kg"}]})
    assert (r.status, r.json()["fields"]) == (400, {"lines[0].qty": "expected `int`, got `str`"})


def test_a_class_without_rules_is_bound_as_before(server):
    assert server.request("POST", "/plain", {"n": 3}).json() == 3
    r = server.request("POST", "/plain", {"n": "3"})
    assert (r.status, r.json()["fields"]) == (400, {"n": "expected `int`, got `str`"})


@pytest.mark.parametrize("path", ["/decode", "/decode-lenient"])
def test_json_decode_and_its_lenient_form_check_the_rules_too(server, path):
    r = server.request("POST", path, raw=json.dumps([ORDER, ORDER]).encode())
    assert r.json() == "2"
    bad = [ORDER, {**ORDER, "title": "", "lines": [{"qty": 0, "unit": "kg"}]}]
    if path == "/decode-lenient":  # a field the class does not declare changes nothing
        bad[1]["note"] = "ignored"
    r = server.request("POST", path, raw=json.dumps(bad).encode())
    kind, message, fields = r.json().split("|")
    assert (kind, message) == ("unprocessable", "the JSON value's fields are not acceptable")
    assert json.loads(fields) == {
        "[1].title": "must be 1 to 240 bytes long", "[1].lines[0].qty": "must be between 1 and 100"}
