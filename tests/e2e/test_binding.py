"""Handler binding and result mapping (docs/reference/language.md §7, docs/reference/http.md)
over real HTTP: every rule, every 400, and faults that answer 500 with the details (and the .svc
line) only in the log."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.svc_process import start

# Its subject is the compiled request path: `make test` runs it again on the pure-Python modules.
pytestmark = pytest.mark.compiled_path

PROGRAM = Path(__file__).with_name("programs") / "binding.svc"
ITEM = {"id": 1, "name": "a", "qty": 2, "price": 1.5, "note": None, "tags": ["x"]}


@pytest.fixture(scope="module")
def server():
    server = start([str(PROGRAM)])
    yield server
    assert server.stop() == 0


def _error(r, status):
    assert r.status == status, (r.status, r.body)
    assert r.headers["content-type"] == "application/json"
    body = r.json()
    assert list(body) == ["error"] and isinstance(body["error"], str)
    return body["error"]


def test_path_captures_are_typed(server):
    assert server.request("GET", "/items/7").json()["name"] == "item7"
    assert server.request("GET", "/items/-7").json()["id"] == -7
    assert server.request("GET", "/i32/2147483647").json() == 2147483647
    assert server.request("GET", "/names/h%C3%A9llo").json() == "héllo"
    for bad in ("/items/x", "/items/1.5", "/items/9223372036854775808", "/i32/2147483648",
                "/items/"):
        assert server.request("GET", bad).status in (400, 404), bad
    for bad in ("/items/x", "/items/1.5", "/items/9223372036854775808", "/i32/2147483648"):
        _error(server.request("GET", bad), 400)


def test_query_parameters_are_typed_and_optional(server):
    r = server.request("GET", "/query?limit=5&ratio=0.5&flag=true&label=a%20b")
    assert r.json() == "5|0.5|True|a b|-|-"
    r = server.request("GET", "/query?label=x&flag=false&ratio=2&limit=-1&small=7&maybe=m")
    assert r.json() == "-1|2.0|False|x|7|m"


@pytest.mark.parametrize("query", [
    "limit=5&ratio=0.5&flag=true",              # missing required str
    "ratio=0.5&flag=true&label=a",              # missing required i64
    "limit=five&ratio=0.5&flag=true&label=a",   # bad i64
    "limit=5&ratio=x&flag=true&label=a",        # bad f64
    "limit=5&ratio=0.5&flag=1&label=a",         # bools are true/false only
    "limit=5&ratio=0.5&flag=yes&label=a",
    "limit=5&ratio=0.5&flag=true&label=a&small=2147483648",  # i32 range
    "limit=9223372036854775808&ratio=0.5&flag=true&label=a",
])
def test_bad_query_values_are_400(server, query):
    _error(server.request("GET", "/query?" + query), 400)


def test_body_class_round_trip_and_put(server):
    r = server.request("POST", "/items", ITEM)
    assert (r.status, r.json()) == (200, ITEM)
    r = server.request("PUT", "/items/1", ITEM)
    assert r.json()["name"] == "a!"
    assert "differ" in _error(server.request("PUT", "/items/2", ITEM), 400)


@pytest.mark.parametrize("raw, fields", [
    (b"{", None),                                                # malformed
    (b'{"id": 1}', {"name": "missing required field"}),           # missing fields
    (b'{"id":1,"name":"a","qty":2,"price":1.5,"note":null,"tags":[],"extra":0}',  # unknown field
     {"extra": "unknown field"}),
    (b'{"id":true,"name":"a","qty":2,"price":1.5,"note":null,"tags":[]}',          # bool for int
     {"id": "expected `int`, got `bool`"}),
    (b'{"id":1,"name":"a","qty":2147483648,"price":1.5,"note":null,"tags":[]}',    # i32 range
     {"qty": "expected `int` <= 2147483647"}),
    (b'{"id":1,"name":"a","qty":1.5,"price":1.5,"note":null,"tags":[]}',           # float for int
     {"qty": "expected `int`, got `float`"}),
    (b'{"id":1,"name":1,"qty":2,"price":1.5,"note":null,"tags":[]}',               # wrong type
     {"name": "expected `str`, got `int`"}),
    (b'{"id":1,"name":"a","qty":2,"price":1.5,"note":null,"tags":[3]}',            # an element
     {"tags[0]": "expected `str`, got `int`"}),
    (b'{"id":1,"name":"\xff","qty":2,"price":1.5,"note":null,"tags":[]}', None),  # not UTF-8
    (b'{"id":1,"name":"a","qty":2,"price":1.5,"tags":[]}',         # optional field still required
     {"note": "missing required field"}),
    (b"[]", None),
    (b"", None),
])
def test_bad_bodies_are_400(server, raw, fields):
    """A body that does not read is a 400; when it names a field (a wrong type, a missing or
    unknown field), the body names it too, in the `fields` shape of a 422."""
    r = server.request("POST", "/items", raw=raw, headers={"Content-Type": "application/json"})
    assert r.status == 400, (r.status, r.body)
    body = r.json()
    assert body["error"].startswith("invalid request body: ")
    assert body.get("fields") == fields


def test_non_json_content_type_is_415(server):
    r = server.request("POST", "/items", raw=b"{}", headers={"Content-Type": "text/plain"})
    _error(r, 415)


def test_raw_and_view_bodies(server):
    r = server.request("POST", "/raw", raw=b"\x00\xffabc", headers={"Content-Type": "application/octet-stream"})
    assert (r.status, r.json()) == (200, 5)
    import json
    r = server.request("POST", "/view", raw=json.dumps(ITEM).encode())
    assert r.json() == ITEM
    _error(server.request("POST", "/view", raw=b'{"id": 1}'), 400)


def test_result_mapping(server):
    r = server.request("GET", "/maybe/0")
    assert _error(r, 404)
    assert server.request("GET", "/maybe/3").json()["id"] == 3
    r = server.request("DELETE", "/items/3")
    assert (r.status, r.body) == (204, b"")
    r = server.request("GET", "/page")
    assert (r.status, r.headers["content-type"]) == (200, "text/html; charset=utf-8")
    assert r.body == "<p>héllo</p>".encode()
    assert server.request("GET", "/list").json() == [1, 2, 3]
    assert server.request("GET", "/flag").json() is True
    assert _error(server.request("GET", "/items/404"), 404) == "no item 404"


def test_unknown_path_and_wrong_method(server):
    _error(server.request("GET", "/nowhere"), 404)
    r = server.request("PATCH", "/items/1")
    _error(r, 405)
    assert "GET" in r.headers["allow"] and "PUT" in r.headers["allow"]


def test_faults_answer_500_and_log_the_svc_line(server):
    line = next(i for i, text in enumerate(PROGRAM.read_text().splitlines(), 1) if "FAULT-LINE" in text)
    for path in ("/index/3", "/index/-1", "/overflow"):
        assert _error(server.request("GET", path), 500) == "internal error"
    assert _error(server.request("GET", "/internal"), 500) == "internal error"
    log = server.log(until="secret detail")
    assert f"binding.svc\", line {line}" in log or f"binding.svc:{line}" in log
    assert "secret detail" in log
    assert server.request("GET", "/items/1").status == 200  # still serving


def test_database_handlers(server):
    assert server.request("GET", "/rows/1").json() == {"id": 1, "label": "one"}
    _error(server.request("GET", "/rows/9"), 404)
    assert server.request("POST", "/rows", {"id": 3, "label": "three"}).status == 200
    assert [r["id"] for r in server.request("GET", "/rows").json()] == [1, 2, 3]
    # a PRIMARY KEY violation is a conflict: 409 naming the constraint kind only
    reason = _error(server.request("POST", "/rows", {"id": 3, "label": "again"}), 409)
    assert reason == "conflicts with an existing row"


@pytest.mark.parametrize("path", ["/ratio", "/priced", "/priced-maybe", "/encoded"])
def test_an_inf_or_nan_f64_in_a_result_is_a_logged_500_not_null(server, path):
    finite = server.request("GET", f"{path}?a=1&b=4")
    assert finite.status == 200 and "0.25" in finite.body.decode()
    assert "null" in server.request("GET", "/priced?a=1&b=4").body.decode()  # note: None is fine
    for query in ("a=1&b=0", "a=-1&b=0", "a=0&b=0", "a=1e300&b=1e-300"):
        assert _error(server.request("GET", f"{path}?{query}"), 500) == "internal error"
    assert "inf or NaN, which JSON cannot carry" in server.log(until="JSON cannot carry")


def test_handlers_past_the_processing_limit_answer_504(server):
    """Both a handler that awaits too long and one that computes without ever awaiting (which
    the support watchdog interrupts) time out; the server keeps serving."""
    for path in ("/sleepy", "/spin"):
        assert _error(server.request("GET", path), 504) == "request timed out"
        assert server.request("GET", "/items/1").status == 200


def test_bad_utf8_is_reported_in_svc_words_not_pythons(server):
    """A body, path or query value that is not UTF-8 is a 400 saying so in svc's words, with
    the offset of the first bad byte in the whole body (Python's codec message names a
    position inside one JSON string)."""
    raw = b'{"id":1,"name":"ab\xff","qty":2,"price":1.5,"note":null,"tags":[]}'
    message = _error(server.request("POST", "/items", raw=raw,
                                    headers={"Content-Type": "application/json"}), 400)
    assert message == "invalid request body: not valid UTF-8 (bad byte at offset 18)"
    truncated = b'{"id":1,"name":"\xc3","qty":2,"price":1.5,"note":null,"tags":[]}'
    message = _error(server.request("POST", "/items", raw=truncated,
                                    headers={"Content-Type": "application/json"}), 400)
    assert message == "invalid request body: not valid UTF-8 (bad byte at offset 16)"
    message = _error(server.request("GET", "/names/a%FFb"), 400)
    assert message == "invalid path parameter 'name': expected str"
