"""The fast path (head.py) is taken for ordinary requests, and left for good at the first bytes
it does not take whole, which httptools then parses from that request's first byte."""

from __future__ import annotations

import asyncio

import pytest

from svc import native
from svc.runtime.http import protocol
from svc.runtime.http.head import HeadReader
from svc.runtime.http.protocol import Continue, HttpConnection, Reject, Request
from tests.runtime.http.test_connection import Pair, get
from tests.runtime.http.test_head_differential import compare

# Its subject is the compiled request path: `make test` runs it again on the pure-Python modules.
pytestmark = pytest.mark.compiled_path

HOST = b"Host: 127.0.0.1:8080\r\nUser-Agent: bench\r\nAccept: */*\r\n"
SMALL = b"GET /small?x=1 HTTP/1.1\r\n" + HOST + b"\r\n"
ECHO = (b"POST /echo HTTP/1.1\r\n" + HOST + b"Content-Type: application/json\r\n"
        b"Content-Length: 11\r\nX-Request-Id: abc-1\r\n\r\n{\"id\":1234}")
HTTP_1_0 = b"GET /a HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"


def test_the_fast_path_is_the_compiled_runtime_s_and_pure_python_keeps_httptools():
    assert protocol.FAST_PATH is (native.state == "")
    assert HttpConnection().fast is protocol.FAST_PATH


@pytest.mark.parametrize("stream", [SMALL, ECHO, HTTP_1_0, SMALL + ECHO + HTTP_1_0 + SMALL])
def test_ordinary_requests_are_taken_by_the_fast_path(stream):
    conn = compare([stream])  # the same events as httptools'
    assert conn.fast and conn.fast_taken == stream.count(b" HTTP/1.")
    again = conn.feed(stream)  # and on the same connection, request after request
    assert conn.fast and conn.fast_taken == 2 * stream.count(b" HTTP/1.")
    assert all(event.__class__ is Request for event in again)


def test_a_request_taken_fast_is_the_request_httptools_makes():
    [request] = HttpConnection(fast=True).feed(ECHO)
    assert (request.method, request.path, request.query, request.target) == \
        ("POST", "/echo", b"", b"/echo")
    assert request.headers == [
        (b"Host", b"127.0.0.1:8080"), (b"User-Agent", b"bench"), (b"Accept", b"*/*"),
        (b"Content-Type", b"application/json"), (b"Content-Length", b"11"), (b"X-Request-Id", b"abc-1")]
    assert (request.body, request.content_type, request.rid) == \
        (b'{"id":1234}', b"application/json", "abc-1")
    assert request.keep_alive and not request.upgrade and request.form is None
    [request] = HttpConnection(fast=True).feed(SMALL)
    assert (request.path, request.query, request.target, request.body) == \
        ("/small", b"x=1", b"/small?x=1", b"")


@pytest.mark.parametrize("stream", [
    [b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"],
    [b"POST /c HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n", b"abc"],
    [SMALL[:20], SMALL[20:]],  # a head cut in two
    [ECHO[:-3], ECHO[-3:]],  # a body cut in two
    [b"GET /ws HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n\x81\x80"],
    [b"PROPFIND /p HTTP/1.1\r\nHost: t\r\n\r\n"],
    [b"GET http://t/p HTTP/1.1\r\nHost: t\r\n\r\n"],
    [b"GET /p HTTP/1.1\r\nHost: t\r\nX: a\r\n b\r\n\r\n"],  # obs-fold: httptools refuses it
    [b"GET /p HTTP/1.1\nHost: t\n\n"],  # LF alone: httptools takes it
    [b"GET /p HTTP/1.1\r\nHost: t\r\nHost: t\r\n\r\n"],  # refused by httptools
    [b"POST /p HTTP/1.1\r\nHost: t\r\nContent-Length: 1048577\r\n\r\n" + b"x" * 1048577],  # 413
])
def test_anything_else_goes_to_httptools_from_that_request_s_first_byte(stream):
    conn = compare([SMALL, *stream, SMALL])
    assert not conn.fast and conn.fast_taken == 1  # the first SMALL only


def test_after_a_request_that_closes_the_connection_httptools_refuses_what_follows():
    """llhttp refuses all but CR and LF after such a request: the fast path hands it the
    request it took (its events dropped), so that it does so here too."""
    close = b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
    for stream in ([close, b"\r\n", SMALL], [close + SMALL], [b"GET / HTTP/1.0\r\n\r\n", SMALL]):
        conn = compare(stream)
        assert conn.fast_taken == 1 and not conn.fast
    events = HttpConnection(fast=True).feed(close + SMALL)
    assert [event.__class__ for event in events] == [Request, Reject]
    assert events[1].reason == "malformed request: Data after `Connection: close`"


def test_a_body_the_route_must_see_first_goes_to_httptools():
    """With route terms (a body limit or uploads), httptools asks the route at the end of the
    head; the fast path takes only requests without a body then."""
    asked = []
    conn = HttpConnection(fast=True)
    conn.body_hook = lambda method, path: asked.append((method, path))
    assert [e.__class__ for e in conn.feed(SMALL)] == [Request] and conn.fast
    assert [e.__class__ for e in conn.feed(ECHO)] == [Request] and not conn.fast
    assert asked == [("POST", "/echo")]


def test_the_reader_remembers_a_valid_host_and_checks_a_new_one():
    reader = HeadReader()
    assert reader.read(SMALL, 0, True) is not None and reader.valid_host == b"127.0.0.1:8080"
    assert reader.end == len(SMALL)
    assert reader.read(SMALL.replace(b"127.0.0.1:8080", b"a b"), 0, True) is None
    assert reader.read(SMALL.replace(b"127.0.0.1:8080", b"[::1]:80"), 0, True) is not None
    assert reader.valid_host == b"[::1]:80"
    assert reader.read(SMALL + SMALL, len(SMALL), True) is not None and reader.end == 2 * len(SMALL)


def test_a_continue_is_never_made_by_the_fast_path():
    conn = HttpConnection(fast=True)
    [ask] = conn.feed(b"POST /p HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n"
                      b"Expect: 100-continue\r\n\r\n")
    assert ask.__class__ is Continue and not conn.fast


def test_a_server_connection_takes_requests_on_the_fast_path_when_compiled():
    async def scenario():
        pair = Pair()
        for _ in range(3):
            await pair.send(get("/hello"))
            [response] = pair.responses()
            assert response.status == 200
        assert pair.conn.http.fast is protocol.FAST_PATH
        assert pair.conn.http.fast_taken == (3 if protocol.FAST_PATH else 0)
    asyncio.run(scenario())
