"""Errors whose answers say more, PATCH routes and OPTIONS (issue 24), over real HTTP: the
program tests/e2e/programs/error_responses/app.svc served by `svcc run`, its answers read
from a socket, checked against its `svcc openapi` document, and the same answers seen in
process by its test file under `svcc test`. Bad inputs (a header name or value the server
will not send, a negative Retry-After) are logged 500s naming the call and the .svc line,
and the connection and the server carry on."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from openapi_spec_validator import validate

from tests.helpers.openapi_check import Exchange, exchange_problems, openapi_document
from tests.helpers.svc_process import run_to_end, start

# Its subject is the compiled request path: `make test` runs it again on the pure-Python modules.
pytestmark = pytest.mark.compiled_path

PROGRAM = Path(__file__).with_name("programs") / "error_responses" / "app.svc"
FORM = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def server():
    server = start([str(PROGRAM)])
    yield server
    assert server.stop() == 0


@pytest.fixture(scope="module")
def document():
    document = openapi_document([str(PROGRAM)])
    validate(document)
    return document


def _exchange(server, method, target, body=None, headers=None) -> tuple[Exchange, object]:
    headers = dict(headers or {})
    raw = None
    if body is not None:
        raw = json.dumps(body).encode()
        headers.setdefault("Content-Type", "application/json")
    r = server.request(method, target, raw=raw, headers=headers)
    sent = {k.lower(): v for k, v in headers.items()}
    return Exchange(method, target, sent, raw, r.status, r.headers, r.body), r


def test_422_names_each_field_and_validates_against_the_document(server, document):
    exchange, r = _exchange(server, "POST", "/signup", {"name": " ", "password": "short"})
    assert r.status == 422 and r.headers["content-type"] == "application/json"
    assert r.json() == {"error": "the sign-up is not valid",
                        "fields": {"name": "must not be empty",
                                   "password": "must be at least 8 bytes"}}
    ok_exchange, ok = _exchange(server, "POST", "/signup", {"name": "ada", "password": "12345678"})
    assert (ok.status, ok.json()) == (200, "welcome, ada")
    assert exchange_problems(document, [exchange, ok_exchange]) == []
    responses = document["paths"]["/signup"]["post"]["responses"]
    assert responses["422"] == {"$ref": "#/components/responses/UnprocessableContent"}


def test_error_fields_reads_the_reasons_back(server):
    r = server.request("GET", "/signup/reasons?name=&password=12345678")
    assert r.json() == {"kind": "unprocessable", "fields": {"name": "must not be empty"}}
    r = server.request("GET", "/signup/reasons?name=ada&password=12345678")
    assert r.json() == {"kind": "", "fields": {}}


def test_429_carries_retry_after(server, document):
    exchange, r = _exchange(server, "GET", "/limited?wait=17")
    assert (r.status, r.json()) == (429, {"error": "too many requests, wait 17 s"})
    assert r.headers["retry-after"] == "17"
    assert server.request("GET", "/limited?wait=0").json() == "go ahead"
    assert exchange_problems(document, [exchange]) == []
    too_many = document["components"]["responses"]["TooManyRequests"]
    assert too_many["headers"]["Retry-After"]["schema"] == {"type": "integer", "minimum": 0}
    assert "429" in document["paths"]["/limited"]["get"]["responses"]
    assert "429" not in document["paths"]["/me"]["get"]["responses"]


def test_401_carries_www_authenticate_through_try(server, document):
    exchange, r = _exchange(server, "GET", "/me")
    assert (r.status, r.json()) == (401, {"error": "no token"})
    assert r.headers["www-authenticate"] == 'Bearer realm="svc"'
    r = server.request("GET", "/me", headers={"Authorization": "Bearer"})
    assert r.headers["www-authenticate"] == 'Bearer realm="svc", error="invalid_token"'
    r = server.request("GET", "/me", headers={"Authorization": "Bearer guest"})
    assert r.status == 403 and "www-authenticate" not in r.headers
    r = server.request("GET", "/me", headers={"Authorization": "Bearer ada"})
    assert (r.status, r.json()) == (200, "hello, ada")
    assert exchange_problems(document, [exchange]) == []


def test_a_response_route_keeps_the_fields_of_its_error(server):
    r = server.request("GET", "/kept")
    assert r.status == 401
    assert (r.headers["cache-control"], r.headers["www-authenticate"]) == ("no-store", "Basic")
    r = server.request("GET", "/kept", headers={"Authorization": "Bearer ada"})
    assert (r.status, r.body, r.headers["cache-control"]) == (200, b'"ok ada"', "no-store")


def test_a_header_field_the_client_names_is_sent_as_given(server):
    r = server.request("GET", "/echo-header?name=X-Note&value=caf%C3%A9")
    assert (r.status, r.headers["x-note"].encode("latin-1").decode("utf-8")) == (409, "café")


@pytest.mark.parametrize("query, problem", [
    ("name=X%20Y&value=v", "with_header: header name 'X Y' is not a token"),
    ("name=X-A&value=a%0D%0ASet-Cookie:%20s=1", "with_header: header value 'a\\r\\nSet-Cookie: s=1' holds a CR character"),
    ("name=X-A&value=a%00b", "with_header: header value 'a\\x00b' holds a NUL character"),
    ("name=Content-Length&value=5", "with_header: header 'Content-Length' is written by the server"),
    ("name=content-type&value=text/plain", "with_header: header 'content-type' of an error's answer is always application/json"),
])
def test_a_bad_header_field_is_a_logged_500_and_nothing_is_sent_broken(server, query, problem):
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(f"GET /echo-header?{query} HTTP/1.1\r\nHost: x\r\n\r\n"
                     "GET /limited?wait=0 HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        data = b""
        while data.count(b"HTTP/1.1 ") < 2 or not data.endswith(b'"go ahead"'):
            chunk = sock.recv(65536)
            assert chunk, data
            data += chunk
    first, _, second = data.partition(b"HTTP/1.1 200")
    assert first.startswith(b"HTTP/1.1 500 ") and first.endswith(b'{"error":"internal error"}')
    assert b"Set-Cookie" not in data and b"text/plain" not in data
    assert second.endswith(b'"go ahead"')  # the same connection answers the next request
    log = server.log(until=problem)
    assert problem in log
    assert "app.svc\", line 71" in log or "app.svc:71" in log


def test_a_negative_retry_after_is_a_logged_500(server):
    r = server.request("GET", "/limited?wait=-3")
    assert (r.status, r.json()) == (500, {"error": "internal error"})
    assert "retry-after" not in r.headers
    problem = "too_many_requests: retry_after_s -3 is negative"
    assert problem in server.log(until=problem)


def test_patch_binds_its_body_and_answers_like_any_route(server, document):
    exchange, r = _exchange(server, "PATCH", "/tasks/1", {"title": "ship it", "done": None})
    assert (r.status, r.json()) == (200, {"title": "ship it", "done": False})
    refused, bad = _exchange(server, "PATCH", "/tasks/1", {"title": "", "done": True})
    assert (bad.status, bad.json()) == (422, {"error": "the patch is not valid",
                                              "fields": {"title": "must not be empty"}})
    missing = server.request("PATCH", "/tasks/2", raw=b'{"title":null,"done":true}', headers=FORM)
    assert (missing.status, missing.json()) == (404, {"error": "no task 2"})
    unbound = server.request("PATCH", "/tasks/1", raw=b'{"title":null}', headers=FORM)
    assert unbound.status == 400 and "done" in unbound.json()["error"]
    text = server.request("PATCH", "/tasks/1", raw=b"x", headers={"Content-Type": "text/plain"})
    assert text.status == 415
    assert exchange_problems(document, [exchange, refused]) == []
    operation = document["paths"]["/tasks/{id}"]["patch"]
    assert operation["operationId"] == "patch_task"
    assert "requestBody" in operation and {"200", "404", "415", "422"} <= set(operation["responses"])


def test_a_guards_error_keeps_its_header_fields(server, document):
    exchange, r = _exchange(server, "PATCH", "/guarded/3")
    assert (r.status, r.json()) == (401, {"error": "say who calls"})
    assert r.headers["www-authenticate"] == "Caller"
    r = server.request("PATCH", "/guarded/3", headers={"X-Caller": "flood"})
    assert (r.status, r.headers["retry-after"]) == (429, "42")
    r = server.request("PATCH", "/guarded/3", headers={"X-Caller": "ada"})
    assert (r.status, r.json()) == (200, "ada patched 3")
    assert exchange_problems(document, [exchange]) == []
    assert {"401", "429"} <= set(document["paths"]["/guarded/{id}"]["patch"]["responses"])


def test_options_and_405_list_the_same_methods(server):
    r = server.request("OPTIONS", "/tasks/7")
    assert (r.status, r.body, r.headers["allow"]) == (204, b"", "DELETE, GET, HEAD, OPTIONS, PATCH")
    assert "content-length" not in r.headers and "content-type" not in r.headers
    wrong = server.request("PUT", "/tasks/7")
    assert (wrong.status, wrong.headers["allow"]) == (405, r.headers["allow"])
    assert server.request("OPTIONS", "/health").headers["allow"] == "GET, HEAD, OPTIONS"
    assert server.request("OPTIONS", "/signup").headers["allow"] == "OPTIONS, POST"
    assert server.request("OPTIONS", "/nowhere").status == 404


def test_options_star_answers_for_the_whole_server(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\nGET * HTTP/1.1\r\nHost: x\r\n\r\n")
        data = b""
        while b"malformed request target" not in data:
            chunk = sock.recv(65536)
            assert chunk, data
            data += chunk
    first, _, second = data.partition(b"\r\n\r\n")
    assert first.startswith(b"HTTP/1.1 204 No Content\r\n")
    assert b"\r\nAllow: DELETE, GET, HEAD, OPTIONS, PATCH, POST\r\n" in first + b"\r\n"
    assert second.startswith(b"HTTP/1.1 400 ")


def test_the_test_file_sees_the_same_answers():
    done = run_to_end(["test", str(PROGRAM)], timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed, 0 failed" in done.stdout
