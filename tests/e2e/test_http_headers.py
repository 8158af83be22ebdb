"""Request headers (`Headers`, `header`, `cookie`), statuses and response headers
(`Response[T]`, `respond`, `set_header`, `add_header`) over real HTTP, and the compile-time
refusals of literal statuses and header fields (docs/reference/language.md, handlers;
docs/reference/http.md, statuses)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers.http_testkit import Client
from tests.helpers.svc_process import start, svcc

# Its subject is the compiled request path: `make test` runs it again on the pure-Python modules.
pytestmark = pytest.mark.compiled_path

PROGRAM = Path(__file__).with_name("programs") / "http_headers.svc"


@pytest.fixture(scope="module")
def server():
    server = start([str(PROGRAM)])
    yield server
    assert server.stop() == 0


def raw(server, method: str, target: str, header_lines: list[str], body: bytes = b""):
    """One request with exactly these header lines (repeats and odd cases kept as written)."""
    lines = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1", *header_lines]
    if body:
        lines.append(f"Content-Length: {len(body)}")
    with Client(server.port) as client:
        client.send(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        return client.response(head=method == "HEAD")


def names(response) -> list[str]:
    return [name.lower() for name, _ in response.header_list]


# --- request headers -------------------------------------------------------------------------

def test_header_names_match_in_any_case(server):
    for asked in ("X-Api-Key", "x-api-key", "X-API-KEY"):
        r = raw(server, "GET", f"/header/{asked}", ["x-Api-KEY: k1"])
        assert r.json() == {"name": asked, "value": "k1"}


def test_a_missing_header_is_none(server):
    assert raw(server, "GET", "/header/X-Missing", []).json() == {"name": "X-Missing",
                                                                  "value": None}


def test_repeated_fields_are_joined_in_order(server):
    r = raw(server, "GET", "/header/Accept", ["Accept: text/html", "X-Other: 1",
                                              "accept: application/json"])
    assert r.json()["value"] == "text/html, application/json"


def test_values_are_trimmed_and_utf8_is_text(server):
    r = raw(server, "GET", "/header/X-Name", ["X-Name:   héllo  "])
    assert r.json()["value"] == "héllo"


@pytest.mark.parametrize("lines, name, value", [
    (["Cookie: a=1; b=2; c=3"], "b", "2"),                          # several pairs
    (["Cookie: a=1", "Cookie: b=2"], "b", "2"),                     # several Cookie headers
    (['Cookie: token="x y"; a=1'], "token", "x y"),                 # quoted value
    (["Cookie: a=first; a=second", "Cookie: a=third"], "a", "first"),  # first match wins
    (["Cookie: a=1;b=2"], "b", "2"),                                # no space after ';'
    (["Cookie: flag; a=1"], "a", "1"),                              # a pair without '='
    (["Cookie: A=upper; a=lower"], "a", "lower"),                   # names are case-sensitive
    (["Cookie: e="], "e", ""),                                      # an empty value
    (["Cookie: a=1"], "missing", None),
    ([], "a", None),                                                # no Cookie header
])
def test_cookies(server, lines, name, value):
    assert raw(server, "GET", f"/cookie/{name}", lines).json() == {"name": name, "value": value}


def test_a_handler_that_awaits_reads_headers_too(server):
    assert raw(server, "GET", "/slow-header", ["X-Token: t1"]).json() == "t1"
    r = raw(server, "GET", "/slow-header", [])
    assert (r.status, r.json()) == (401, {"error": "no token"})


# --- statuses and response headers -----------------------------------------------------------

def test_201_with_location(server):
    r = raw(server, "POST", "/notes", ["Content-Type: application/json"], b'{"id":7,"text":"hi"}')
    assert r.status == 201
    assert r.headers["location"] == "/notes/7"
    assert r.headers["content-type"] == "application/json"
    assert r.json() == {"id": 7, "text": "hi"}
    assert "POST /notes 201" in server.log(until="POST /notes 201")  # the access log
    r = raw(server, "PUT", "/notes/9?x=1", [], b'{"id":0,"text":"put"}')
    assert (r.status, r.headers["location"], r.json()) == (201, "/notes/9", {"id": 9, "text": "put"})
    assert "PUT /notes/9?x=1 201" in server.log(until="PUT /notes/9?x=1 201")


def test_an_error_from_a_response_handler_answers_its_status(server):
    r = raw(server, "POST", "/notes", [], b'{"id":-1,"text":"hi"}')
    assert (r.status, r.json()) == (400, {"error": "id must not be negative"})
    r = raw(server, "GET", "/conflict", [])
    assert (r.status, r.json()) == (409, {"error": "already exists"})
    r = raw(server, "POST", "/notes", [], b'{"id":"x"}')
    assert r.status == 400  # binding still refuses a bad body


def test_set_cookie_twice_and_set_header_replaces(server):
    r = raw(server, "GET", "/login", [])
    assert r.status == 200 and r.body == b""
    cookies = [v for k, v in r.header_list if k.lower() == "set-cookie"]
    assert cookies == ["session=abc; HttpOnly", "theme=dark"]
    ones = [(k, v) for k, v in r.header_list if k.lower() == "x-one"]
    assert ones == [("x-one", "second")]
    assert "content-type" not in names(r)  # a unit body has no content type


def test_content_type_replaces_the_default(server):
    r = raw(server, "GET", "/text", [])
    assert (r.status, r.body) == (200, b"plain words")
    assert names(r).count("content-type") == 1
    assert r.headers["content-type"] == "text/plain; charset=utf-8"
    r = raw(server, "GET", "/problem", [])
    assert r.status == 422 and r.json() == {"id": 0, "text": "bad"}
    assert names(r).count("content-type") == 1
    assert r.headers["content-type"] == "application/problem+json"


def test_html_body_with_its_own_status(server):
    r = raw(server, "GET", "/page", [])
    assert (r.status, r.body) == (202, b"<p>later</p>")
    assert r.headers["content-type"] == "text/html; charset=utf-8"
    assert r.headers["cache-control"] == "no-store"


@pytest.mark.parametrize("code", [200, 201, 299, 302, 404, 418, 503, 599])
def test_statuses_in_range(server, code):
    r = raw(server, "GET", f"/status/{code}", [])
    assert (r.status, r.json()) == (code, [code])


@pytest.mark.parametrize("code", [199, 600, 100, 0, -1, 1000])
def test_a_computed_status_out_of_range_is_a_logged_500(server, code):
    r = raw(server, "GET", f"/status/{code}", [])
    assert (r.status, r.json()) == (500, {"error": "internal error"})
    log = server.log(until=f"status {code} is outside 200-599")
    assert f"respond: status {code} is outside 200-599" in log
    assert "http_headers.svc" in log  # the fault names the .svc line
    assert raw(server, "GET", "/status/200", []).status == 200  # still serving


def test_204_and_304_send_no_body(server):
    r = raw(server, "GET", "/nothing", [])
    assert r.status == 204 and r.headers["x-kept"] == "yes"
    assert "content-length" not in names(r) and "content-type" not in names(r)
    r = raw(server, "GET", "/not-modified", [])
    assert r.status == 304 and r.headers["etag"] == '"v1"'
    assert "content-length" not in names(r)
    # nothing follows on the connection but the next answer
    with Client(server.port) as client:
        client.send(b"GET /nothing HTTP/1.1\r\nHost: x\r\n\r\nGET /plain HTTP/1.1\r\nHost: x\r\n\r\n")
        assert client.response().status == 204
        assert client.response().json() == {"id": 1, "text": "plain"}


def test_optional_body_none_is_json_null_with_the_chosen_status(server):
    r = raw(server, "GET", "/maybe/0", [])
    assert (r.status, r.body) == (200, b"null")
    assert raw(server, "GET", "/maybe/4", []).json() == {"id": 4, "text": "found"}


def test_head_keeps_status_and_headers(server):
    get = raw(server, "GET", "/status/201", [])
    head = raw(server, "HEAD", "/status/201", [])
    assert head.status == 201 and head.body == b""
    assert head.headers["content-length"] == get.headers["content-length"]
    head = raw(server, "HEAD", "/login", [])
    assert [v for k, v in head.header_list if k.lower() == "set-cookie"] == [
        "session=abc; HttpOnly", "theme=dark"]
    head = raw(server, "HEAD", "/page", [])
    assert (head.status, head.headers["cache-control"]) == (202, "no-store")


def test_a_handler_that_awaits_answers_its_response(server):
    r = raw(server, "GET", "/slow-response", [])
    assert (r.status, r.headers["x-slow"], r.json()) == (201, "yes", {"id": 2, "text": "slow"})


def test_keep_alive_and_close_still_frame_custom_answers(server):
    with Client(server.port) as client:
        for _ in range(3):
            client.send(b"GET /login HTTP/1.1\r\nHost: x\r\n\r\n")
            assert client.response().status == 200
        client.send(b"GET /status/201 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        r = client.response()
        assert r.status == 201 and r.headers["connection"] == "close"
        assert client.closed_by_peer()


@pytest.mark.parametrize("name, value, problem", [
    ("Content-Length", "1", "header 'Content-Length' is written by the server"),
    ("transfer-encoding", "chunked", "header 'transfer-encoding' is written by the server"),
    ("CONNECTION", "close", "header 'CONNECTION' is written by the server"),
    ("Date", "x", "header 'Date' is written by the server"),
    ("Upgrade", "x", "header 'Upgrade' is written by the server"),
    ("Bad%20Name", "x", "header name 'Bad Name' is not a token"),
    ("X-Ok", "a%0D%0ASet-Cookie:%20evil=1", "holds a CR character"),
    ("X-Ok", "a%0Ab", "holds a LF character"),
    ("X-Ok", "a%00b", "holds a NUL character"),
])
def test_a_refused_computed_header_is_a_logged_500(server, name, value, problem):
    r = raw(server, "GET", f"/set/{name}?value={value}", [])
    assert (r.status, r.json()) == (500, {"error": "internal error"})
    assert "evil" not in names(r) and "set-cookie" not in names(r)
    assert problem in server.log(until=problem)
    r = raw(server, "GET", "/set/X-Ok?value=fine", [])  # the server keeps serving
    assert (r.status, r.headers["x-ok"]) == (200, "fine")


def test_plain_handlers_answer_as_before(server):
    r = raw(server, "GET", "/plain", [])
    assert r.status == 200 and r.json() == {"id": 1, "text": "plain"}
    assert names(r) == ["content-type", "date", "content-length"]


# --- compile-time refusals -------------------------------------------------------------------

BAD = '''\
class Keep:
    h: Headers

class Held:
    r: Response[i64]

def give(h: Headers) -> Headers:
    return h

def many(h: Headers) -> List[Headers]:
    return [h]

@get("/a")
async def a() -> Result[Response[unit], Error]:
    r = respond(600, ())
    set_header(r, "Content-Length", "5")
    add_header(r, "Bad Name", "x")
    add_header(r, "X-Fine", "line\\r\\nbreak")
    set_header(r, "date", "now")
    return ok(respond(199, ()))

@get("/b")
async def b() -> Result[Response[Db], Error]:
    return error("x")

@get("/c")
async def c(h: Headers) -> Result[i64, Error]:
    n = respond(-5, 1)
    return ok(0)

async def main() -> Result[unit, Error]:
    return ok(())
'''


def test_literal_statuses_and_headers_are_compile_errors(tmp_path):
    source = tmp_path / "bad.svc"
    source.write_text(BAD)
    done = subprocess.run(svcc() + ["check", str(source)], capture_output=True, text=True,
                          timeout=60)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "Traceback" not in out
    expected = [
        ("2:8", "field 'h' of class Keep: a Headers cannot be stored in a class field"),
        ("5:8", "field 'r' of class Held: a Response cannot be stored in a class field"),
        ("7:25", "function 'give' cannot return Headers"),
        ("10:25", "a Headers cannot be put in a list"),
        ("11:13", "a Headers cannot be put in a list"),
        ("15:17", "respond: status 600 is outside 200-599"),
        ("16:19", "set_header: header 'Content-Length' is written by the server"),
        ("17:19", "add_header: header name 'Bad Name' is not a token"),
        ("18:29", "add_header: header value 'line\\r\\nbreak' holds a CR character"),
        ("19:19", "set_header: header 'date' is written by the server"),
        ("20:23", "respond: status 199 is outside 200-599"),
        ("23:34", "a Response body must be what a handler may answer"),
        ("28:17", "respond: status -5 is outside 200-599"),
    ]
    for where, message in expected:
        assert f"bad.svc:{where}" in out and message in out, (where, message, out)
    assert out.count("^") >= len(expected)  # each shown with its line and caret
    assert f"{len(expected)} errors" in out, out


# --- the guide's "A real API" program: what tests/docs cannot see (the header fields) ---------

def _guide_program(tmp_path) -> Path:
    from tests.docs.doc_samples import REPO, samples
    sample = next(s for s in samples(REPO / "docs" / "guide.md") if "def caller(h: Headers)" in s.code)
    path = tmp_path / "api.svc"
    path.write_text(sample.code)
    return path


def test_the_guides_api_answers_location_and_a_cookie_that_logs_in(tmp_path):
    server = start([str(_guide_program(tmp_path))], env={"API_SECRET": "test secret"})
    try:
        json_type = ["Content-Type: application/json"]
        r = raw(server, "POST", "/accounts", json_type, b'{"name":"ada","password":"pw"}')
        assert (r.status, r.headers["location"]) == (201, "/accounts/1")
        r = raw(server, "POST", "/accounts", json_type, b'{"name":"ada","password":"x"}')
        assert (r.status, r.json()) == (409, {"error": "the name 'ada' is taken"})
        r = raw(server, "POST", "/login", json_type, b'{"name":"ada","password":"pw"}')
        token = r.json()["token"]
        assert r.headers["set-cookie"] == f"token={token}; HttpOnly; SameSite=Strict; Path=/"
        cookie = r.headers["set-cookie"].split(";")[0]
        r = raw(server, "POST", "/notes", [*json_type, f"Cookie: {cookie}"], b'{"text":"a"}')
        assert (r.status, r.headers["location"], r.json()["owner"]) == (201, "/notes/1", 1)
        r = raw(server, "POST", "/notes", [*json_type, f"authorization: Bearer {token}"],
                b'{"text":"b"}')
        assert (r.status, r.headers["location"]) == (201, "/notes/2")
        # the guide's token was signed with the default secret: this server refuses it
        guide_token = "1.62cef242b16fc2cb0055499b27e0915784f0798612290d66e75dd5833551d4df"
        r = raw(server, "POST", "/notes", [*json_type, f"Authorization: Bearer {guide_token}"],
                b'{"text":"c"}')
        assert (r.status, r.json()) == (401, {"error": "invalid token"})
        r = raw(server, "POST", "/notes", [*json_type, f"Authorization: Basic {token}"],
                b'{"text":"c"}')
        assert (r.status, r.json()) == (401, {"error": "expected Authorization: Bearer <token>"})
    finally:
        assert server.stop() == 0


def test_the_openapi_document_lists_the_statuses_a_response_route_chooses():
    import json

    from openapi_spec_validator import validate

    done = subprocess.run(svcc() + ["openapi", str(PROGRAM)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    validate(document)
    paths = document["paths"]
    created = paths["/notes"]["post"]["responses"]  # respond(201, body)
    assert "200" not in created and "2XX" not in created
    assert created["201"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Note"}
    assert "content" not in paths["/login"]["get"]["responses"]["200"]  # Response[unit]
    assert "text/html" in paths["/page"]["get"]["responses"]["202"]["content"]
    assert "2XX" in paths["/status/{code}"]["get"]["responses"]  # respond(code, ...)
    # a Headers parameter is no path or query parameter
    assert [p["name"] for p in paths["/header/{name}"]["get"]["parameters"]] == ["name"]
    assert "parameters" not in paths["/slow-header"]["get"]
    assert "200" in paths["/plain"]["get"]["responses"]  # plain handlers as before


def test_copy_of_a_response_changes_apart(server):
    r = raw(server, "GET", "/copied/first", [])
    assert (r.headers["x-which"], r.json()) == ("first", {"id": 1, "text": "after"})
    r = raw(server, "GET", "/copied/second", [])
    assert (r.headers["x-which"], r.json()) == ("second", {"id": 1, "text": "before"})
