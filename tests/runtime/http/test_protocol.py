"""The connection state machine with bytes alone: events, limits, and fuzzing that it never raises."""

from __future__ import annotations

import os
import socket

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.helpers.http_testkit import request
from svc.rules.contract import HEAD_LIMIT
from svc.runtime.http.protocol import Continue, HttpConnection, Reject, Request

# Its subject is the compiled request path: `make test` runs it again on the pure-Python modules.
pytestmark = pytest.mark.compiled_path

EXAMPLES = int(os.environ.get("SVC_FUZZ_EXAMPLES", "300"))

GET = b"GET /a?x=1 HTTP/1.1\r\nHost: h\r\n\r\n"
POST = b"POST /b HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"


def feed_all(data: bytes, step: int | None = None) -> list:
    conn = HttpConnection()
    if step is None:
        return conn.feed(data)
    events = []
    for i in range(0, len(data), step):
        events.extend(conn.feed(data[i:i + step]))
    return events


def test_request_fields():
    [req] = feed_all(POST)
    assert isinstance(req, Request)
    assert (req.method, req.path, req.query, req.body) == ("POST", "/b", b"", b"{}")
    assert req.content_type == b"application/json" and req.keep_alive and not req.upgrade
    assert req.header(b"host") == b"h"


def test_pipelined_requests_come_out_in_order_however_the_bytes_are_split():
    stream = GET + POST + GET
    for step in (None, 1, 3, 17):
        events = feed_all(stream, step)
        assert [(e.method, e.path) for e in events] == [("GET", "/a"), ("POST", "/b"), ("GET", "/a")]


def test_absolute_form_target():
    [req] = feed_all(b"GET http://example.com/p/q?z=2 HTTP/1.1\r\nHost: example.com\r\n\r\n")
    assert (req.path, req.query) == ("/p/q", b"z=2")
    assert req.target == b"http://example.com/p/q?z=2"  # the log shows it as received


@pytest.mark.parametrize("head, reason", [
    (b"GET / HTTP/1.1\r\n", "missing Host header"),
    (b"GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n", "more than one Host header"),
    (b"GET / HTTP/1.1\r\nhost: a\r\nHOST: b\r\n", "more than one Host header"),
    (b"GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n", "more than one Host header"),
    (b"GET / HTTP/1.1\r\nHost: a b\r\n", "invalid Host header"),
    (b"GET / HTTP/1.1\r\nHost: a/b\r\n", "invalid Host header"),
    (b"GET / HTTP/1.1\r\nHost: a:80x\r\n", "invalid Host header"),
    (b"GET / HTTP/1.1\r\nHost: a@b\r\n", "invalid Host header"),
    (b"GET / HTTP/1.0\r\nHost: [::1\r\n", "invalid Host header"),
    (b"GET http://a/p HTTP/1.1\r\n", "missing Host header"),
    (b"POST / HTTP/1.1\r\nContent-Length: 2\r\n", "missing Host header"),
])
def test_a_request_without_exactly_one_valid_host_is_400(head, reason):
    """RFC 9112 §3.2: an HTTP/1.1 request has one Host; no request has two, or a bad one."""
    for step in (None, 1):
        [reject] = feed_all(head + b"\r\n{}", step)
        assert reject == Reject(400, reason)
        assert (reject.method, reject.target) != ("-", b"-")  # the log names the request


@pytest.mark.parametrize("host", [b"example.com", b"127.0.0.1:8080", b"[::1]:8080", b"",
                                  b"a.example:", b"xn--bcher-kva.example", b"[v1.x]",
                                  b"example.com  ", b"my_host.local:1"])
def test_a_valid_host_is_accepted_and_http_1_0_needs_none(host):
    [req] = feed_all(b"GET / HTTP/1.1\r\nHost: " + host + b"\r\n\r\n")
    assert req.path == "/"
    [req] = feed_all(b"GET / HTTP/1.0\r\n\r\n")
    assert req.path == "/" and not req.keep_alive
    [first, second] = feed_all(b"GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n")
    assert (first.path, second.path) == ("/1", "/2")  # each request has its own count


@pytest.mark.parametrize("target, path, query", [
    (b"http://h/api/stats", "/api/stats", b""),
    (b"http://h", "/", b""),
    (b"http://h?x=1", "/", b"x=1"),
    (b"https://h:8443/a/b?", "/a/b", b""),
])
def test_absolute_form_target_without_a_query_or_a_path(target, path, query):
    """httptools' stub says a URL's parts are bytes, but an absent one is None: the compiled
    module, which checks the stub's types, answered these 400 (issue 35)."""
    [req] = feed_all(b"GET " + target + b" HTTP/1.1\r\nHost: h\r\n\r\n")
    assert (req.path, req.query, req.target) == (path, query, target)


def test_expect_continue_names_the_path_the_router_resolves_and_the_target_as_received():
    [ask] = HttpConnection().feed(b"POST http://example.com/p?q=1 HTTP/1.1\r\nHost: example.com\r\n"
                                  b"Content-Length: 3\r\nExpect: 100-continue\r\n\r\n")
    assert (ask.path, ask.target) == ("/p", b"http://example.com/p?q=1")


def test_connection_close_and_http10():
    [req] = feed_all(b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
    assert not req.keep_alive
    [req] = feed_all(b"GET / HTTP/1.0\r\n\r\n")
    assert not req.keep_alive


def test_chunked_body_is_dechunked():
    [req] = feed_all(b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\n\r\n", 5)
    assert req.body == b"abcde"


def test_expect_continue_only_while_the_body_is_awaited():
    conn = HttpConnection()
    [ask] = conn.feed(b"POST /p?q HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nExpect: 100-continue\r\n"
                      b"Content-Type: text/plain\r\n\r\n")
    assert (ask.__class__, ask.method, ask.path, ask.content_type) == (Continue, "POST", "/p", b"text/plain")
    assert conn.in_body
    [req] = conn.feed(b"abc")
    assert req.body == b"abc" and not conn.in_body
    # the body came along with the headers: no 100 needed
    [req] = HttpConnection().feed(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\nabc")
    assert req.body == b"abc"
    # RFC 9110 §10.1.1: HTTP/1.0 expectations are ignored
    assert HttpConnection().feed(b"POST / HTTP/1.0\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n") == []


def test_limits():
    assert feed_all(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1048577\r\n\r\n") == [Reject(413, "request body too large")]
    [req] = feed_all(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1048576\r\n\r\n" + b"a" * 1048576, 65536)
    assert len(req.body) == 1048576
    big = b"GET / HTTP/1.1\r\nHost: t\r\nX: " + b"a" * HEAD_LIMIT + b"\r\n\r\n"
    assert feed_all(big) == [Reject(431, "request header fields too large")]
    assert feed_all(big, 1000) == [Reject(431, "request header fields too large")]


def _head_of(size: int, method: bytes) -> bytes:
    """A request head of exactly `size` bytes: request line, Host, one padded header, blank
    line."""
    line = method + b" /h HTTP/1.1\r\nHost: t\r\n"
    head = line + b"X: " + b"a" * (size - len(line) - 7) + b"\r\n\r\n"
    assert len(head) == size
    return head


@pytest.mark.parametrize("method", [b"GET", b"POST", b"DELETE"])
@pytest.mark.parametrize("chunk", [None, 1000])
def test_head_limit_is_exactly_64_kib(method, chunk):
    [req] = feed_all(_head_of(HEAD_LIMIT, method), chunk)
    assert req.method == method.decode()
    assert feed_all(_head_of(HEAD_LIMIT + 1, method), chunk) == [Reject(431, "request header fields too large")]


def test_content_length_beyond_64_bits_is_413_not_400():
    huge = b"POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 99999999999999999999999\r\n\r\n"
    assert feed_all(huge) == [Reject(413, "request body too large")]


def test_a_refusal_after_the_request_line_names_the_request():
    """By its target as received, query included, as the access log shows every request."""
    [reject] = feed_all(b"POST /upload?big=1 HTTP/1.1\r\nHost: t\r\nContent-Length: 2000000\r\n\r\n")
    assert (reject.status, reject.method, reject.target) == (413, "POST", b"/upload?big=1")
    [reject] = feed_all(b"GARBAGE\r\n\r\n")
    assert (reject.status, reject.method, reject.target) == (400, "-", b"-")
    # refused by llhttp itself once the headers or the body were under way
    for bad in (b"POST /e?x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                b"POST /e?x HTTP/1.1\r\nHost: t\r\nContent-Length: 30\r\nTransfer-Encoding: chunked\r\n\r\n",
                b"POST /e?x HTTP/1.1\r\nHost: t\r\nContent-Length: -1\r\n\r\n"):
        [reject] = feed_all(bad)
        assert (reject.status, reject.method, reject.target) == (400, "POST", b"/e?x"), bad


def test_reject_is_final():
    conn = HttpConnection()
    [reject] = conn.feed(b"BOGUS\r\n\r\n")
    assert reject.status == 400 and conn.closed
    assert conn.feed(GET) == []


def test_upgrade_keeps_the_following_bytes():
    conn = HttpConnection()
    [req] = conn.feed(b"GET /ws HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n\x81\x80")
    assert req.upgrade and conn.upgraded
    assert conn.feed(b"more") == []
    assert conn.take_upgrade_data() == b"\x81\x80more"


def test_smuggling_shapes_rejected():
    for framing in (b"Content-Length: 1\r\nTransfer-Encoding: chunked\r\n",
                    b"Content-Length: 1\r\nContent-Length: 1\r\n",
                    b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
                    b"Transfer-Encoding: gzip, chunked\r\n"):
        events = feed_all(b"POST / HTTP/1.1\r\nHost: t\r\n" + framing + b"\r\n0\r\n\r\n")
        assert len(events) == 1 and isinstance(events[0], Reject) and events[0].status == 400


# --- fuzzing: random and mutated byte streams never make feed() raise ----------------------

SEEDS = [GET, POST, GET + POST,
         b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n4\r\nwxyz\r\n0\r\n\r\n",
         b"GET /ws HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: a\r\n\r\n",
         b"GET http://h/x HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"]


@st.composite
def mutated(draw):
    data = bytearray(draw(st.sampled_from(SEEDS)) * draw(st.integers(1, 3)))
    for _ in range(draw(st.integers(0, 6))):
        op = draw(st.sampled_from(["flip", "insert", "delete", "dup"]))
        pos = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "flip" and data:
            data[pos] = draw(st.integers(0, 255))
        elif op == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete" and data:
            del data[pos:pos + draw(st.integers(1, 8))]
        elif op == "dup" and data:
            data[pos:pos] = data[pos:pos + draw(st.integers(1, 40))]
    return bytes(data)


def _check_stream(data: bytes, cuts: list[int]) -> None:
    conn = HttpConnection()
    pieces, last = [], 0
    for cut in sorted(c % (len(data) + 1) for c in cuts):
        pieces.append(data[last:cut])
        last = cut
    pieces.append(data[last:])
    seen_reject = False
    for piece in pieces:
        for event in conn.feed(piece):
            assert not seen_reject, "nothing may follow a Reject"
            assert isinstance(event, (Request, Reject, Continue))
            if isinstance(event, Reject):
                seen_reject = True
                assert event.status in (400, 413, 431)
            elif isinstance(event, Request):
                assert len(event.body) <= 1_048_576
    conn.take_upgrade_data()


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=600), st.lists(st.integers(0, 10_000), max_size=5))
def test_random_bytes_never_raise(data, cuts):
    _check_stream(data, cuts)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(), st.lists(st.integers(0, 10_000), max_size=5))
def test_mutated_requests_never_raise(data, cuts):
    _check_stream(data, cuts)


# --- the same streams against a real server: it answers or closes, and never breaks ----------

@settings(max_examples=max(EXAMPLES // 6, 25), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.one_of(mutated(), st.binary(max_size=400)))
def test_hostile_bytes_on_a_real_socket(quick_server, data):
    with socket.create_connection(("127.0.0.1", quick_server.port), timeout=5) as sock:
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
            while sock.recv(65536):
                pass
        except (ConnectionResetError, BrokenPipeError):
            pass


def test_server_survived_the_fuzzing(quick_server):
    assert request(quick_server.port, "GET", "/health").body == b"ok"
    log = quick_server.log()
    assert "Traceback" not in log and "Exception" not in log, log[-2000:]
