"""docs/reference/http.md "Requests", "Statuses and error bodies" and "Built-in routes" on a
real socket, line by line."""

from __future__ import annotations

import re
import socket
import threading

import pytest

from tests.helpers.http_testkit import Client, request, rss_mib, start_server

# Its subject is the compiled request path: `make test` runs it again on the pure-Python modules.
pytestmark = pytest.mark.compiled_path

MIB = 1_048_576
DATE = re.compile(r"^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$")


def test_every_response_has_date_length_and_type(server):
    for target, ctype in [("/health", "text/plain; charset=utf-8"), ("/hello", "application/json"),
                          ("/page", "text/html; charset=utf-8"), ("/nope", "application/json")]:
        resp = request(server.port, "GET", target)
        assert DATE.match(resp.headers["date"]), resp.headers
        assert int(resp.headers["content-length"]) == len(resp.body)
        assert resp.headers["content-type"] == ctype


def test_health(server):
    resp = request(server.port, "GET", "/health")
    assert (resp.status, resp.body) == (200, b"ok")


def test_json_and_html_and_unit_results(server):
    assert request(server.port, "GET", "/hello").json() == {"hello": "world"}
    page = request(server.port, "GET", "/page")
    assert (page.status, page.body) == (200, b"<h1>hi</h1>")
    unit = request(server.port, "POST", "/nothing", b"")
    assert unit.status == 204 and unit.body == b"" and "content-type" not in unit.headers


def test_optional_result_none_is_404(server):
    assert request(server.port, "GET", "/users/7").json() == {"id": 7}
    resp = request(server.port, "GET", "/users/0")
    assert (resp.status, resp.json()) == (404, {"error": "not found"})


def test_unknown_path_404_and_wrong_method_405_with_allow(server):
    assert request(server.port, "GET", "/no/such/path").status == 404
    resp = request(server.port, "PATCH", "/users/1")
    assert resp.status == 405
    assert resp.headers["allow"] == "DELETE, GET, HEAD, OPTIONS, PUT"
    assert resp.json() == {"error": "method not allowed"}
    assert request(server.port, "POST", "/health", b"").headers["allow"] == "GET, HEAD, OPTIONS"


def test_head_has_get_headers_and_no_body(server):
    get = request(server.port, "GET", "/hello")
    with Client(server.port) as client:
        client.send(b"HEAD /hello HTTP/1.1\r\nHost: x\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        head = client.response(head=True)
        after = client.response()  # proves no body bytes followed the HEAD response
    assert head.status == 200
    assert head.headers["content-length"] == get.headers["content-length"]
    assert head.headers["content-type"] == get.headers["content-type"]
    assert after.body == b"ok"


def test_keep_alive_by_default_and_connection_close_honoured(server):
    with Client(server.port) as client:
        for _ in range(3):
            client.send(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            assert client.response().body == b"ok"
        client.send(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        resp = client.response()
        assert resp.headers["connection"] == "close"
        assert client.closed_by_peer()


def test_http_10_closes_unless_keep_alive(server):
    with Client(server.port) as client:
        client.send(b"GET /health HTTP/1.0\r\n\r\n")
        assert client.response().body == b"ok"
        assert client.closed_by_peer()
    with Client(server.port) as client:
        client.send(b"GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        assert client.response().body == b"ok"
        client.send(b"GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        assert client.response().json() == {"hello": "world"}


def test_pipelined_requests_answered_in_order(server):
    # A slow request first: the quick ones behind it must still come back after it, in order.
    batch = (b"GET /slow?ms=300 HTTP/1.1\r\nHost: x\r\n\r\n"
             b"GET /users/1 HTTP/1.1\r\nHost: x\r\n\r\n"
             b"POST /tasks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 39\r\n\r\n"
             b'{"title":"t","priority":2,"note":null}\n'
             b"GET /users/2 HTTP/1.1\r\nHost: x\r\n\r\n"
             b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    with Client(server.port) as client:
        client.send(batch)
        bodies = [client.response().body for _ in range(5)]
    assert bodies == [b'{"slept":300}', b'{"id":1}', b'{"title":"t","priority":2,"note":null}',
                      b'{"id":2}', b"ok"]


def test_many_pipelined_requests_in_one_write(server):
    with Client(server.port) as client:
        client.send(b"".join(b"GET /users/%d HTTP/1.1\r\nHost: x\r\n\r\n" % i for i in range(1, 201)))
        assert [client.response().json()["id"] for _ in range(200)] == list(range(1, 201))


def test_chunked_request_body(server):
    body = b'{"title":"chunky","priority":5,"note":"n"}'
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 7]), body[i:i + 7]) for i in range(0, len(body), 7))
    with Client(server.port) as client:
        client.send(b"POST /tasks HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                    b"Content-Type: application/json\r\n\r\n" + chunked + b"0\r\n\r\n")
        assert client.response().json() == {"title": "chunky", "priority": 5, "note": "n"}


def test_body_of_exactly_one_mib_accepted(server):
    resp = request(server.port, "POST", "/raw", b"x" * MIB)
    assert (resp.status, resp.body) == (200, b"1048576")


def test_body_over_one_mib_refused_413_and_closed(server):
    with Client(server.port) as client:
        client.send(b"POST /raw HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (MIB + 1))
        resp = client.response()
        assert resp.status == 413 and resp.json() == {"error": "request body too large"}
        assert client.closed_by_peer()


def test_chunked_body_over_one_mib_after_dechunking_413(server):
    chunk = b"y" * 65536
    with Client(server.port) as client:
        client.send(b"POST /raw HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        try:
            for _ in range(16):
                client.send(b"10000\r\n" + chunk + b"\r\n")
            client.send(b"1\r\nz\r\n0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
        assert client.response().status == 413


def test_chunked_body_of_exactly_one_mib_accepted(server):
    chunk = b"y" * 65536
    with Client(server.port) as client:
        client.send(b"POST /raw HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + b"10000\r\n" + chunk + b"\r\n" * 1)
        for _ in range(15):
            client.send(b"10000\r\n" + chunk + b"\r\n")
        client.send(b"0\r\n\r\n")
        assert client.response().body == b"1048576"


def test_expect_100_continue_accepted(server):
    with Client(server.port) as client:
        client.send(b"POST /raw HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        interim = client.response()
        assert interim.status == 100
        client.send(b"hello")
        assert client.response().body == b"5"


@pytest.mark.parametrize("head, status, header", [
    (b"POST /nowhere HTTP/1.1\r\nContent-Length: 5\r\n", 404, None),
    (b"POST /hello HTTP/1.1\r\nContent-Length: 5\r\n", 405, ("allow", "GET, HEAD, OPTIONS")),
    (b"PUT /users/3 HTTP/1.1\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n", 415, None),
])
def test_expect_100_continue_for_a_body_that_would_be_refused_gets_the_answer_at_once(
        server, head, status, header):
    with Client(server.port) as client:
        client.send(head + b"Host: x\r\nExpect: 100-continue\r\n\r\n")
        resp = client.response()  # the final answer, never a 100
        assert resp.status == status
        if header:
            assert resp.headers[header[0]] == header[1]
        assert client.closed_by_peer()
    method, path = head.split(b" ")[:2]
    assert re.search(rf"^{method.decode()} {path.decode()} {status} ", server.log(), re.M)


def test_expect_100_continue_is_ignored_on_http_1_0(server):
    with Client(server.port) as client:
        client.send(b"POST /raw HTTP/1.0\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        assert not client.readable_within(0.5)  # no 100: the server waits for the body
        client.send(b"hello")
        assert client.response().body == b"5"


def test_expect_100_continue_over_limit_is_413_at_once(server):
    with Client(server.port) as client:
        client.send(b"POST /raw HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n"
                    b"Expect: 100-continue\r\n\r\n")
        assert client.response().status == 413
        assert client.closed_by_peer()


def test_content_length_too_big_for_64_bits_is_413(server):
    with Client(server.port) as client:
        client.send(b"POST /raw HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n")
        resp = client.response()
        assert (resp.status, resp.json()) == (413, {"error": "request body too large"})
        assert client.closed_by_peer()
    assert re.search(r"^POST /raw 413 \d+\.\dms$", server.log(), re.M)


def test_headers_over_64k_are_431(server):
    with Client(server.port) as client:
        client.send(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 70000 + b"\r\n\r\n")
        assert client.response().status == 431
        assert client.closed_by_peer()


def test_headers_just_under_64k_are_fine(server):
    headers = b"".join(b"X-H%d: %s\r\n" % (i, b"v" * 1000) for i in range(60))
    with Client(server.port) as client:
        client.send(b"GET /health HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\n")
        assert client.response().body == b"ok"


def test_endless_header_is_431_without_waiting_for_its_end(server):
    with Client(server.port) as client:
        client.send(b"GET /health HTTP/1.1\r\nHost: t\r\nX-Endless: ")
        try:
            for _ in range(20):
                client.send(b"a" * 8192)
        except (BrokenPipeError, ConnectionResetError):
            pass
        assert client.response().status == 431


@pytest.mark.parametrize("raw", [
    b"GARBAGE\r\n\r\n",
    b"GET /health\r\n\r\n",
    b"GET /health HTTP/9.9\r\n\r\n",
    b"GET /health HTTP/1.1\nHost: x\n\n",
    b"GET /he alth HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /health HTTP/1.1\r\nHost: t\r\nBad Header: x\r\n\r\n",
    b"GET /health HTTP/1.1\r\nHost: t\r\nX: a\x00b\r\n\r\n",
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",  # a TLS ClientHello
    b"GET * HTTP/1.1\r\nHost: x\r\n\r\n",
])
def test_malformed_requests_are_400_and_closed(server, raw):
    with Client(server.port) as client:
        client.send(raw)
        resp = client.response()
        assert resp.status == 400, resp
        assert resp.json()["error"].startswith(("malformed", "unsupported"))
        assert client.closed_by_peer()


@pytest.mark.parametrize("head, reason", [
    (b"GET /health HTTP/1.1\r\n", "missing Host header"),
    (b"GET /health HTTP/1.1\r\nHost: x\r\nHost: y\r\n", "more than one Host header"),
    (b"GET /health HTTP/1.1\r\nHost: x y\r\n", "invalid Host header"),
])
def test_a_request_without_exactly_one_valid_host_is_400_and_closed(server, head, reason):
    with Client(server.port) as client:
        client.send(head + b"\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        resp = client.response()
        assert (resp.status, resp.json()) == (400, {"error": reason})
        assert client.closed_by_peer()
        assert b"HTTP/1.1" not in client.buffer  # the request after it was not answered


def test_an_absolute_target_without_a_query_is_served(server):
    with Client(server.port) as client:
        client.send(b"GET http://h/health HTTP/1.1\r\nHost: h\r\n\r\n")
        resp = client.response()
        assert (resp.status, resp.body) == (200, b"ok")


def test_an_http_1_0_request_needs_no_host(server):
    with Client(server.port) as client:
        client.send(b"GET /health HTTP/1.0\r\n\r\n")
        assert client.response().status == 200


@pytest.mark.parametrize("framing", [
    b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
    b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
    b"Content-Length: 5\r\nContent-Length: 5\r\n",
    b"Content-Length: 5\r\nContent-Length: 6\r\n",
    b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
    b"Transfer-Encoding: gzip, chunked\r\n",
    b"Transfer-Encoding: identity\r\n",
    b"Content-Length: -5\r\n",
    b"Content-Length : 5\r\n",
    b"Transfer-Encoding : chunked\r\n",
])
def test_request_smuggling_shapes_are_400(server, framing):
    with Client(server.port) as client:
        client.send(b"POST /raw HTTP/1.1\r\nHost: x\r\n" + framing + b"\r\n0\r\n\r\nGET /health HTTP/1.1\r\nHost: t\r\n\r\n")
        resp = client.response()
        assert resp.status == 400, resp
        assert client.closed_by_peer()
        assert b"HTTP/1.1" not in client.buffer  # the smuggled request was not answered


# --- parameters and bodies ---------------------------------------------------------------------

def test_path_and_query_params_typed(server):
    resp = request(server.port, "GET", "/query?limit=-5&ratio=2.5e1&flag=false&name=caf%C3%A9+ok&maybe=9")
    assert resp.json() == {"limit": -5, "ratio": 25.0, "flag": False, "name": "café ok", "maybe": 9}
    assert request(server.port, "GET", "/query?limit=3").json() == {
        "limit": 3, "ratio": None, "flag": None, "name": None, "maybe": None}
    assert request(server.port, "GET", "/names/a%20b%2Fc").json() == "a b/c"


@pytest.mark.parametrize("target, reason", [
    ("/query", "missing required query parameter 'limit'"),
    ("/query?limit=x", "invalid query parameter 'limit': expected i32"),
    ("/query?limit=2147483648", "invalid query parameter 'limit': expected i32"),
    ("/query?limit=1&ratio=nan", "invalid query parameter 'ratio': expected f64"),
    ("/query?limit=1&ratio=inf", "invalid query parameter 'ratio': expected f64"),
    ("/query?limit=1&flag=1", "invalid query parameter 'flag': expected bool"),
    ("/query?limit=1&flag=True", "invalid query parameter 'flag': expected bool"),
    ("/query?limit=1&name=%FF", "invalid query parameter 'name': expected str"),
    ("/query?limit=1&maybe=9223372036854775808", "invalid query parameter 'maybe': expected i64"),
    ("/users/abc", "invalid path parameter 'id': expected i64"),
    ("/users/1.5", "invalid path parameter 'id': expected i64"),
    ("/names/%C3%28", "invalid path parameter 'name': expected str"),
])
def test_bad_parameters_are_400_naming_the_parameter(server, target, reason):
    resp = request(server.port, "GET", target)
    assert (resp.status, resp.json()) == (400, {"error": reason})


def test_i64_extremes_accepted(server):
    assert request(server.port, "GET", "/users/9223372036854775807").json() == {"id": 2**63 - 1}
    assert request(server.port, "GET", "/users/-9223372036854775808").json() == {"id": -(2**63)}


@pytest.mark.parametrize("body, fragment", [
    (b'{"title":"x","priority":1', "invalid request body"),
    (b'{"title":"x"}', "Object missing required field `priority`"),
    (b'{"title":"x","priority":1,"note":null,"extra":1}', "unknown field `extra`"),
    (b'{"title":5,"priority":1,"note":null}', "Expected `str`, got `int`"),
    (b'{"title":"x","priority":"1","note":null}', "Expected `int`, got `str`"),
    (b'{"title":"x","priority":2147483648,"note":null}', "Expected `int` <= 2147483647"),
    (b'{"title":"\xff","priority":1,"note":null}', "invalid request body"),
    (b'', "invalid request body"),
])
def test_bad_json_bodies_are_400(server, body, fragment):
    resp = request(server.port, "POST", "/tasks", body, {"Content-Type": "application/json"})
    assert resp.status == 400, resp
    assert fragment in resp.json()["error"]


def test_non_json_content_type_is_415_and_missing_is_json(server):
    body = b'{"title":"x","priority":1,"note":null}'
    assert request(server.port, "POST", "/tasks", body, {"Content-Type": "text/plain"}).status == 415
    assert request(server.port, "POST", "/tasks", body).json()["title"] == "x"
    ok = request(server.port, "POST", "/tasks", body, {"Content-Type": "application/vnd.api+json; charset=utf-8"})
    assert ok.status == 200


# --- errors and faults -------------------------------------------------------------------------

@pytest.mark.parametrize("kind, status, reason", [
    ("invalid", 400, "secret invalid detail"),
    ("not_found", 404, "secret not_found detail"),
    ("timeout", 504, "secret timeout detail"),
    ("busy", 503, "secret busy detail"),
    ("internal", 500, "internal error"),
    ("database", 500, "internal error"),
])
def test_error_kinds_map_to_status(server, kind, status, reason):
    resp = request(server.port, "GET", f"/failing?kind={kind}")
    assert (resp.status, resp.json()) == (status, {"error": reason})


def test_faults_are_500_with_details_only_in_the_log(server):
    for target in ("/fault", "/crash", "/unencodable"):
        resp = request(server.port, "GET", target)
        assert (resp.status, resp.json()) == (500, {"error": "internal error"})
        assert b"Traceback" not in resp.body
    log = server.log()
    assert "GET /fault: internal error" in log and "SvcFault: integer overflow (i64)" in log
    assert "ZeroDivisionError" in log
    assert "database error: secret database detail" in log


def test_handlers_may_use_task_groups_and_timeouts(server):
    assert request(server.port, "GET", "/scoped?n=4").json() == 6
    resp = request(server.port, "GET", "/child-fails")
    assert (resp.status, resp.json()) == (500, {"error": "internal error"})
    assert "child failed" in server.log()


def test_access_log_line_per_request(server):
    """The target as received, query string included (docs/reference/http.md, "Logs")."""
    request(server.port, "GET", "/users/42?verbose=1&x=%20")
    assert re.search(r"^GET /users/42\?verbose=1&x=%20 200 \d+\.\dms$", server.log(), re.M)


# --- /stream ----------------------------------------------------------------------------------

def test_stream_sends_five_chunks(server):
    with Client(server.port) as client:
        client.send(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
        resp = client.response()
        assert resp.headers["transfer-encoding"] == "chunked"
        assert "content-length" not in resp.headers
        assert resp.chunks == [f"chunk:{i}\n".encode() for i in range(5)]
        client.send(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")  # still usable afterwards
        assert client.response().body == b"ok"


@pytest.fixture
def flooded_server(tmp_path):
    """A server of its own: what the flood leaves behind is not the next test's, and its stop
    has a generous bound (on a loaded machine the pure-Python server once needed more than
    10 s to stop after it)."""
    srv = start_server(tmp_path)
    yield srv
    assert srv.stop(timeout=60) == 0


def test_client_that_never_reads_does_not_grow_the_server(flooded_server):
    """Pipelined requests from a peer that reads nothing: the server stops reading it."""
    server = flooded_server
    batch = b"GET /users/1 HTTP/1.1\r\nHost: x\r\n\r\n" * 2000
    before = rss_mib(server.proc.pid)
    sock = socket.create_connection(("127.0.0.1", server.port))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sent = []

    def flood():
        sock.settimeout(3)
        try:
            for _ in range(300):  # up to ~21 MB of requests, far more than the buffers hold
                sock.sendall(batch)
                sent.append(len(batch))
        except OSError:
            pass

    thread = threading.Thread(target=flood)
    thread.start()
    thread.join(10)
    assert sum(sent) < 300 * len(batch)  # the server stopped reading at some point
    assert request(server.port, "GET", "/health").body == b"ok"
    assert rss_mib(server.proc.pid) - before < 64
    sock.close()
