"""OPTIONS, PATCH, 405's Allow and the answers of errors that carry header fields or field
reasons (issue 24), as bytes: a real `Connection` over an in-memory transport, no socket. And
the error makers of svc.runtime.lib.errors themselves, with their bad inputs."""

from __future__ import annotations

import asyncio

import msgspec
import pytest

from svc.rules.contract import DEFAULT_WAIT_SECONDS, Param, ParamSource, ResultKind, Route
from svc.runtime.http import builtin_routes
from svc.runtime.http.connection import App, Connection
from svc.runtime.http.responses import error_answer
from svc.runtime.http.routing import Router
from svc.runtime.lib.errors import (
    error_fields, too_many_requests, unprocessable, with_header,
)
from svc.runtime.observability.serverlog import ServerLog
from svc.runtime.lib.support import SvcError, SvcFault, unauthorized
from svc.runtime.http.test_client import MemoryTransport

# Its subject is the compiled request path: `make test` runs it again on the pure-Python modules.
pytestmark = pytest.mark.compiled_path

PATH, BODY = ParamSource.PATH, ParamSource.BODY


class Patch(msgspec.Struct, forbid_unknown_fields=True):
    title: str


def get_item(id: int) -> object:
    return {"id": id}


def patch_item(id: int, p: Patch) -> object:
    return {"id": id, "title": p.title}


def delete_item(id: int) -> object:
    return None


def failing(kind: str) -> object:
    """Each error shape by the path's last segment."""
    return ERRORS[kind]


ERRORS = {
    "bearer": with_header(unauthorized("no token"), "WWW-Authenticate", 'Bearer realm="svc"'),
    "slow": too_many_requests("slow down", 30),
    "fields": unprocessable("not valid", {"title": "must not be empty", "due": "not a date"}),
    "busy": SvcError("busy", "the database is busy"),
    "busy-own": with_header(SvcError("busy", "maintenance"), "retry-after", "120"),
    "internal": with_header(SvcError("internal", "secret detail"), "X-Trace", "t1"),
    "two": with_header(with_header(SvcError("forbidden", "no"), "X-A", "1"), "X-B", "2"),
}

ROUTES = [
    Route("GET", "/items/{id}", get_item, (Param("id", PATH, "i64"),)),
    Route("PATCH", "/items/{id}", patch_item, (Param("id", PATH, "i64"), Param("p", BODY, Patch))),
    Route("DELETE", "/items/{id}", delete_item, (Param("id", PATH, "i64"),), ResultKind.UNIT),
    Route("GET", "/fail/{kind}", failing, (Param("kind", PATH, "str"),)),
    Route("POST", "/only-post", delete_item, (), ResultKind.UNIT),
]


def exchange(data: bytes) -> bytes:
    """The bytes the server writes back for `data`, through the server's own Connection."""
    async def run() -> bytes:
        loop = asyncio.get_running_loop()
        router = Router(tuple(builtin_routes.serving(True)) + tuple(ROUTES))
        app = App(loop, router, None, DEFAULT_WAIT_SECONDS, ServerLog(quiet=True))
        transport = MemoryTransport(loop)
        conn = Connection(app)
        conn.connection_made(transport)
        conn.on_phase = transport.phase_changed
        conn.data_received(data)
        await asyncio.wait_for(transport.answered, 5)
        conn.connection_lost(None)
        return bytes(transport.data)
    return asyncio.run(run())


def parse(raw: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    fields = [tuple(line.split(": ", 1)) for line in lines[1:]]
    return int(lines[0].split(" ")[1]), [f for f in fields if f[0] != "Date"], body  # type: ignore


# --- OPTIONS, 405, PATCH ---------------------------------------------------------------------------

def test_options_on_a_path_is_204_with_its_methods_and_nothing_else():
    status, fields, body = parse(exchange(b"OPTIONS /items/7 HTTP/1.1\r\nHost: x\r\n\r\n"))
    assert (status, fields, body) == (204, [("Allow", "DELETE, GET, HEAD, OPTIONS, PATCH")], b"")


def test_options_on_a_builtin_path_and_on_a_post_only_path():
    assert parse(exchange(b"OPTIONS /health HTTP/1.1\r\nHost: t\r\n\r\n"))[:2] == (
        204, [("Allow", "GET, HEAD, OPTIONS")])
    assert parse(exchange(b"OPTIONS /only-post HTTP/1.1\r\nHost: t\r\n\r\n"))[:2] == (
        204, [("Allow", "OPTIONS, POST")])


def test_options_star_lists_every_method_the_server_answers():
    status, fields, body = parse(exchange(b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n"))
    assert (status, fields, body) == (
        204, [("Allow", "DELETE, GET, HEAD, OPTIONS, PATCH, POST")], b"")


@pytest.mark.parametrize("method", [b"GET", b"POST", b"DELETE"])
def test_star_is_a_bad_target_for_any_other_method(method):
    status, fields, body = parse(exchange(method + b" * HTTP/1.1\r\nHost: x\r\n\r\n"))
    assert (status, body) == (400, b'{"error":"malformed request target"}')
    assert ("Connection", "close") in fields


def test_options_on_an_unknown_path_is_404():
    assert parse(exchange(b"OPTIONS /nowhere HTTP/1.1\r\nHost: t\r\n\r\n"))[0] == 404


def test_options_with_connection_close_closes_and_keeps_the_allow_line():
    status, fields, _ = parse(exchange(b"OPTIONS /items/1 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"))
    assert status == 204 and ("Connection", "close") in fields
    assert ("Allow", "DELETE, GET, HEAD, OPTIONS, PATCH") in fields


def test_405_allow_lists_patch_and_options():
    status, fields, body = parse(exchange(b"PUT /items/1 HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n"))
    assert status == 405 and body == b'{"error":"method not allowed"}'
    assert ("Allow", "DELETE, GET, HEAD, OPTIONS, PATCH") in fields


def test_patch_binds_its_json_body_like_put_and_post():
    raw = b'{"title":"new"}'
    status, _, body = parse(exchange(b"PATCH /items/4 HTTP/1.1\r\nHost: t\r\nContent-Type: application/json"
                                     b"\r\nContent-Length: %d\r\n\r\n%s" % (len(raw), raw)))
    assert (status, body) == (200, b'{"id":4,"title":"new"}')
    status, _, body = parse(exchange(b'PATCH /items/4 HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\n{}'))
    assert status == 400 and b"title" in body


# --- errors with header fields and field reasons -------------------------------------------------

def _fail(kind: str) -> tuple[int, list[tuple[str, str]], bytes]:
    return parse(exchange(b"GET /fail/" + kind.encode() + b" HTTP/1.1\r\nHost: t\r\n\r\n"))


def test_401_carries_www_authenticate():
    status, fields, body = _fail("bearer")
    assert (status, body) == (401, b'{"error":"no token"}')
    assert ("WWW-Authenticate", 'Bearer realm="svc"') in fields


def test_429_carries_retry_after():
    status, fields, body = _fail("slow")
    assert (status, body) == (429, b'{"error":"slow down"}')
    assert ("Retry-After", "30") in fields


def test_422_names_its_fields_in_order():
    status, fields, body = _fail("fields")
    assert status == 422 and ("Content-Type", "application/json") in fields
    assert body == b'{"error":"not valid","fields":{"title":"must not be empty","due":"not a date"}}'


def test_503_gets_retry_after_1_unless_the_error_says_otherwise():
    status, fields, _ = _fail("busy")
    assert status == 503 and [f for f in fields if f[0].lower() == "retry-after"] == [
        ("Retry-After", "1")]
    status, fields, _ = _fail("busy-own")
    assert status == 503 and [f for f in fields if f[0].lower() == "retry-after"] == [
        ("retry-after", "120")]


def test_a_500_keeps_its_fields_but_never_its_message():
    status, fields, body = _fail("internal")
    assert (status, body) == (500, b'{"error":"internal error"}')
    assert ("X-Trace", "t1") in fields


def test_fields_are_sent_in_the_order_they_were_set():
    _, fields, _ = _fail("two")
    names = [name for name, _ in fields]
    assert names.index("X-A") < names.index("X-B")


def test_head_of_an_error_keeps_its_fields_without_the_body():
    raw = exchange(b"HEAD /fail/slow HTTP/1.1\r\nHost: t\r\n\r\n")
    status, fields, body = parse(raw)
    assert status == 429 and ("Retry-After", "30") in fields and body == b""


def test_error_answer_of_a_plain_error_adds_nothing():
    assert error_answer(SvcError("not_found", "no"))[:3] == (404, b'{"error":"no"}', b"")


# --- the makers themselves -------------------------------------------------------------------------

def test_with_header_makes_a_new_error_and_replaces_a_field_of_the_same_name():
    base = unauthorized("no token")
    once = with_header(base, "WWW-Authenticate", "Basic")
    twice = with_header(once, "www-authenticate", "Bearer")
    assert base.headers == () and once.headers == (("WWW-Authenticate", "Basic"),)
    assert twice.headers == (("www-authenticate", "Bearer"),)
    assert (twice.kind, twice.message) == ("unauthorized", "no token")


def test_with_header_leaves_an_ok_value_as_it_is():
    value = {"a": 1}
    assert with_header(value, "X-A", "1") is value


@pytest.mark.parametrize("name, value, problem", [
    ("Bad Name", "v", "header name 'Bad Name' is not a token"),
    ("", "v", "header name '' is not a token"),
    ("X-A", "a\r\nSet-Cookie: s=1", "holds a CR character"),
    ("X-A", "a\nb", "holds a LF character"),
    ("X-A", "a\0b", "holds a NUL character"),
    ("Content-Length", "5", "is written by the server"),
    ("Content-Type", "text/plain", "of an error's answer is always application/json"),
])
def test_with_header_refuses_what_the_server_would_not_send(name, value, problem):
    with pytest.raises(SvcFault, match="^with_header: .*") as caught:
        with_header(unauthorized("x"), name, value)
    assert problem in str(caught.value)
    # nothing was sent broken: an ok value is refused the same way
    with pytest.raises(SvcFault):
        with_header(1, name, value)


def test_too_many_requests_refuses_a_negative_delay_and_takes_zero():
    with pytest.raises(SvcFault, match=r"too_many_requests: retry_after_s -1 is negative"):
        too_many_requests("x", -1)
    assert too_many_requests("x", 0).headers == (("Retry-After", "0"),)


def test_unprocessable_copies_its_map_and_error_fields_reads_a_copy():
    reasons = {"name": "must not be empty"}
    e = unprocessable("bad", reasons)
    reasons["other"] = "added later"
    assert e.fields == {"name": "must not be empty"}
    read = error_fields(e)
    read["x"] = "y"
    assert error_fields(e) == {"name": "must not be empty"}
    assert error_fields(unauthorized("x")) == {}


def test_errors_are_equal_by_kind_message_fields_and_header_fields():
    assert unprocessable("a", {"x": "1"}) == unprocessable("a", {"x": "1"})
    assert unprocessable("a", {"x": "1"}) != unprocessable("a", {"x": "2"})
    assert with_header(unauthorized("a"), "X", "1") != unauthorized("a")
    assert too_many_requests("a", 3) == too_many_requests("a", 3)
