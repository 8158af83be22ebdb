"""Server-sent events on a real socket (docs/reference/http.md, "Server-sent events"):
tests/helpers/events_app.py served in a process of its own, read with raw sockets."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import time
from pathlib import Path

import pytest

from tests.helpers.event_stream import Stream
from tests.helpers.http_testkit import Client, request, start_server

# Its subject is the compiled request path: `make test` runs it again on the pure-Python modules.
pytestmark = pytest.mark.compiled_path

EVENTS_APP = Path(__file__).resolve().parents[2] / "helpers" / "events_app.py"
HEARTBEAT = 0.3


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    proc = start_server(tmp_path_factory.mktemp("events"),
                        {"EVENTS_APP_HEARTBEAT": str(HEARTBEAT)}, app=EVENTS_APP)
    yield proc
    proc.stop()


def seen(port: int) -> list[dict]:
    return request(port, "GET", "/seen").json()


def test_events_are_encoded_retry_first(server):
    stream = Stream(server.port, "/events?n=3", {"X-Request-Id": "sse-test-1"})
    head = stream.head()
    assert head.status == 200
    assert head.headers["content-type"] == "text/event-stream"
    assert head.headers["cache-control"] == "no-store"
    assert head.headers["transfer-encoding"] == "chunked"
    assert head.headers["x-request-id"] == "sse-test-1"
    assert stream.rest() == [
        b"retry: 2000\n\n",
        b'id: 0\ndata: {"i":0}\n\n',
        b'id: 1\nevent: tick\ndata: {"i":1}\n\n',
        b'id: 2\ndata: {\ndata:   "i": 2\ndata: }\n\n',
    ]
    # the connection is kept for the next request
    stream.client.send(b"GET /ping HTTP/1.1\r\nHost: x\r\n\r\n")
    assert stream.client.response().json() == {"pong": True}
    stream.close()


def test_a_handler_that_sends_nothing_answers_204(server):
    assert request(server.port, "GET", "/nothing").status == 204


def test_an_error_before_the_first_event_is_that_errors_answer(server):
    answer = request(server.port, "GET", "/refuse")
    assert answer.status == 403
    assert answer.json() == {"error": "not yours"}


def test_head_answers_the_streams_head_alone(server):
    with Client(server.port) as client:
        client.send(b"HEAD /forever?tag=head HTTP/1.1\r\nHost: x\r\n\r\n")
        head = client.response(head=True)
        assert head.status == 200 and head.headers["content-type"] == "text/event-stream"
    assert not [s for s in seen(server.port) if s["tag"] == "head"]


def test_last_event_id_reaches_the_handler(server):
    stream = Stream(server.port, "/resume", {"Last-Event-ID": "41"})
    assert stream.head().status == 200
    assert stream.rest() == [b"retry: 2000\n\n", b'data: "41"\n\n']
    stream.close()
    stream = Stream(server.port, "/resume")
    stream.head()
    assert stream.rest()[1] == b'data: "none"\n\n'
    stream.close()


def test_an_idle_stream_gets_heartbeats(server):
    stream = Stream(server.port, "/idle?ms=1200")
    assert stream.head().status == 200
    chunks = stream.rest()
    assert chunks[:2] == [b"retry: 2000\n\n", b'data: "hello"\n\n']
    pings = chunks[2:]
    assert 2 <= len(pings) <= 6 and set(pings) == {b": ping\n\n"}  # every ~0.3 s of 1.2 s
    stream.close()


def test_a_client_that_leaves_cancels_the_handler(server):
    stream = Stream(server.port, "/forever?tag=leaves")
    stream.head()
    assert stream.chunk() == b"retry: 2000\n\n"
    assert stream.chunk() == b'data: "started"\n\n'
    left = time.time()
    stream.close()
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        cancels = [s for s in seen(server.port) if s["tag"] == "leaves"]
        if cancels:
            break
        time.sleep(0.05)
    assert cancels and cancels[0]["cancelled"] - left < 1.0
    log = server.log()
    assert re.search(r"GET /forever\?tag=leaves 200 ", log)  # its access line, at its end


def test_an_invalid_id_is_a_fault_before_the_stream_and_dropped_after(server):
    answer = request(server.port, "GET", "/bad-id?after=false")
    assert answer.status == 500
    stream = Stream(server.port, "/bad-id?after=true")
    assert stream.head().status == 200
    assert stream.rest() == [b"retry: 2000\n\n", b'data: "first"\n\n', b'data: "dropped"\n\n']
    stream.close()
    log = server.log()
    assert "CR, LF or NUL" in log


def test_an_error_after_the_stream_started_is_logged_and_the_stream_ends(server):
    stream = Stream(server.port, "/fails-after")
    assert stream.head().status == 200
    assert stream.rest() == [b"retry: 2000\n\n", b'data: "one"\n\n']
    stream.close()
    log = server.log()
    assert re.search(r"GET /fails-after.*after the stream started.*changed meanwhile", log)


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
def test_a_reader_that_never_reads_is_bounded_and_others_are_served(server):
    pid = server.proc.pid
    before = rss_kib(pid)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
    sock.connect(("127.0.0.1", server.port))
    sock.sendall(b"GET /flood?ms=1500 HTTP/1.1\r\nHost: x\r\n\r\n")
    peak = before
    served = 0
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline:
        peak = max(peak, rss_kib(pid))
        assert request(server.port, "GET", "/ping").json() == {"pong": True}
        served += 1
        time.sleep(0.05)
    for _ in range(40):  # the flood ends at 1.5 s; its record follows
        floods = [s for s in seen(server.port) if s["tag"] == "flood"]
        if floods:
            break
        time.sleep(0.05)
    peak = max(peak, rss_kib(pid))
    sock.close()
    assert served >= 5
    assert floods and floods[0]["dropped"] > 0 and floods[0]["sent"] > 0
    # unbounded, the ~1 KiB events sent for 1.5 s would be hundreds of MiB
    assert peak - before < 40 * 1024, (before, peak, floods)
    log = server.log()
    drops = re.findall(r"GET /flood\?ms=1500.*client reads too slowly: (\d+) events dropped", log)
    assert len(drops) == 1 and int(drops[0]) == floods[0]["dropped"]


def test_the_processing_limit_does_not_cut_a_stream(server):
    started = time.monotonic()
    stream = Stream(server.port, "/steady?ms=3000")
    assert stream.head().status == 200
    chunks = stream.rest()
    assert time.monotonic() - started >= 2.9
    assert chunks[0] == b"retry: 2000\n\n" and len(chunks) >= 12
    stream.close()


def test_a_handler_that_waits_past_the_limit_before_its_first_event_gets_504(server):
    started = time.monotonic()
    answer = request(server.port, "GET", "/late?ms=3000")
    assert answer.status == 504
    assert time.monotonic() - started < 2.9


def test_shutdown_ends_open_streams_at_once(tmp_path):
    proc = start_server(tmp_path, app=EVENTS_APP)
    streams = [Stream(proc.port, f"/forever?tag=stop{i}") for i in range(3)]
    for stream in streams:
        assert stream.head().status == 200
        assert stream.chunk() == b"retry: 2000\n\n"
        assert stream.chunk() == b'data: "started"\n\n'
    # and one whose handler sends its first event 0.3 s after the stop began
    late = Stream(proc.port, "/forever?tag=late&ms=300")
    time.sleep(0.1)  # its request is read
    started = time.monotonic()
    assert proc.stop(signal.SIGTERM) == 0
    assert time.monotonic() - started < 1.5  # well under the 2 s processing limit
    assert late.head().headers["connection"] == "close"
    assert late.rest() == [b"retry: 2000\n\n", b'data: "started"\n\n']
    late.close()
    for stream in streams:
        assert stream.chunk() == b""  # the last chunk: a proper end
        assert stream.client.closed_by_peer(2)
        stream.close()
