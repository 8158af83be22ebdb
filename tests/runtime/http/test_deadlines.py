"""The connection wait deadline and the 2-second processing limit (docs/reference/http.md), on
real sockets.

`quick_server` runs with SVC_HTTP_REQUEST_WAIT_SECONDS=1; margins stay at 0.5 s or more.
"""

from __future__ import annotations

import re
import threading
import time

import pytest

from tests.helpers.http_testkit import Client, open_ws, read_frame, request, send_frame

# Its subject is the compiled request path: `make test` runs it again on the pure-Python modules.
pytestmark = pytest.mark.compiled_path


def _elapsed_until_closed(client: Client, limit: float = 6) -> float:
    start = time.monotonic()
    assert client.closed_by_peer(limit)
    return time.monotonic() - start


def test_silent_connection_closed_at_the_deadline_without_response(quick_server):
    with Client(quick_server.port) as client:
        start = time.monotonic()
        assert client.closed_by_peer(5)
        assert 0.8 <= time.monotonic() - start <= 2.0
        assert client.buffer == b""


def test_drip_fed_headers_do_not_extend_the_deadline(quick_server):
    with Client(quick_server.port) as client:
        start = time.monotonic()
        closed = False
        for byte in b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100:
            try:
                client.send(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            time.sleep(0.05)
            if time.monotonic() - start > 3:
                break
        assert closed or client.closed_by_peer(2)
        assert time.monotonic() - start <= 2.5
        assert client.buffer == b""  # closed without a response


def test_idle_keep_alive_connection_closed(quick_server):
    with Client(quick_server.port) as client:
        client.send(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert client.response().body == b"ok"
        assert 0.8 <= _elapsed_until_closed(client) <= 2.0


def test_deadline_restarts_after_each_response(quick_server):
    with Client(quick_server.port) as client:
        for _ in range(4):  # 4 × 0.6 s is past the 1 s deadline, but each wait is shorter
            time.sleep(0.6)
            client.send(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            assert client.response().body == b"ok"


def test_deadline_does_not_apply_while_handling(quick_server):
    resp = request(quick_server.port, "GET", "/slow?ms=1600")
    assert resp.json() == {"slept": 1600}


def test_deadline_does_not_apply_to_a_websocket_session(quick_server):
    from websockets.frames import Opcode
    with open_ws(quick_server.port) as client:
        time.sleep(1.8)
        send_frame(client, Opcode.TEXT, b"still here")
        assert read_frame(client).data == b"still here"


def test_handler_past_two_seconds_is_504_while_others_are_served(server):
    results = {}

    def slow():
        start = time.monotonic()
        results["slow"] = request(server.port, "GET", "/slow?ms=4000")
        results["slow_time"] = time.monotonic() - start

    thread = threading.Thread(target=slow)
    thread.start()
    time.sleep(0.3)
    served = 0
    while thread.is_alive() and served < 200:  # the loop is free while the slow one waits
        assert request(server.port, "GET", "/health").body == b"ok"
        served += 1
        time.sleep(0.01)
    thread.join(10)
    assert served >= 20
    assert results["slow"].status == 504
    assert results["slow"].json() == {"error": "request timed out"}
    assert 1.9 <= results["slow_time"] <= 3.0
    assert request(server.port, "GET", "/hello").status == 200


def test_connection_stays_usable_after_a_504(server):
    with Client(server.port) as client:
        client.send(b"GET /slow?ms=2600 HTTP/1.1\r\nHost: x\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert client.response().status == 504
        assert client.response().body == b"ok"


def test_slow_body_is_cut_at_the_processing_limit(server):
    # a path of its own, for its log line; the body never completes, so it is never routed
    with Client(server.port) as client:
        client.send(b"POST /raw-cut?x=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab")
        start = time.monotonic()
        resp = client.response()
        assert resp.status == 504
        assert 1.8 <= time.monotonic() - start <= 3.0
        assert client.closed_by_peer()
    # logged as the request it was, timed from its complete headers (not "- - 504 0.0ms")
    [line] = re.findall(r"^POST /raw-cut\?x=1 504 (\d+\.\d)ms$", server.log(), re.M)
    assert 1800 <= float(line) <= 3000
