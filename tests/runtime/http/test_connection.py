"""`Connection` in-process: a fake transport, a real event loop, a real Router, tiny handlers.

Modelled on h11's ConnectionPair: each test feeds bytes in as the event loop would (from a
loop callback) and asserts on the bytes written, on what the transport was asked to do (close,
write_eof, pause), and on the phases the connection went through. Every phase change a test
causes is checked against `connection.TRANSITIONS`. The subprocess tests (test_http.py,
test_lifecycle.py) cover the same behaviour over real sockets.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import re
import time
from dataclasses import dataclass

import pytest

from svc.rules.contract import BODY_LIMIT, Param, Route
from svc.rules.contract import ParamSource as S
from svc.rules.contract import ResultKind as R
from svc.runtime.http import builtin_routes
from svc.runtime.http import connection
from svc.runtime.http.connection import (
    CLOSED, HANDLING, LINGERING, RECEIVING, STREAMING, TRANSITIONS, UPGRADED, WAITING, App,
    Connection,
)
from svc.runtime.http.context import request_deadline
from svc.runtime.http.eager import Resumer
from svc.runtime.http.routing import Router
from svc.runtime.http.server import shut_down
from svc.runtime.observability.serverlog import ServerLog
from svc.runtime.http.watchdog import SvcTimeout

# Its subject is the compiled request path: `make test` runs it again on the pure-Python modules.
pytestmark = pytest.mark.compiled_path

# --- the tiny application ---------------------------------------------------------------------


def hello():
    return {"hello": "world"}


async def slow(ms):
    await asyncio.sleep(ms / 1000)
    return {"slept": ms}


def search(q):
    return {"q": q}


#: What the handlers below saw, for the tests of a suspended handler.
seen: list = []


async def fails_later():
    await asyncio.sleep(0)
    raise ValueError("failed after an await")


def fails_now():
    raise ValueError("failed at once")


async def deadline_later():
    await asyncio.sleep(0)
    return {"deadline": request_deadline(), "tasks": len(asyncio.all_tasks())}


async def forever():
    try:
        await asyncio.sleep(10)
    except asyncio.CancelledError:
        seen.append("cancelled")
        raise


async def watchdog_later():
    await asyncio.sleep(0)
    raise SvcTimeout()  # what the watchdog raises in code that kept the loop


def echo(body):
    return len(body)


ROUTES = (
    Route("GET", "/hello", hello, (), R.JSON),
    Route("GET", "/slow", slow, (Param("ms", S.QUERY, "i64"),), R.JSON),
    Route("GET", "/search", search, (Param("q", S.QUERY, "str"),), R.JSON),
    Route("POST", "/echo", echo, (Param("body", S.RAW, "bytes"),), R.JSON),
    Route("GET", "/fails-later", fails_later, (), R.JSON),
    Route("GET", "/fails-now", fails_now, (), R.JSON),
    Route("GET", "/deadline-later", deadline_later, (), R.JSON),
    Route("GET", "/forever", forever, (), R.JSON),
    Route("GET", "/watchdog-later", watchdog_later, (), R.JSON),
)


# --- the fake transport and the pair -----------------------------------------------------------


class FakeTransport(asyncio.Transport):
    """Records what the connection writes and asks for; closes the way asyncio does (the
    protocol hears `connection_lost` on a later loop turn)."""

    def __init__(self, protocol: Connection) -> None:
        super().__init__()
        self.protocol = protocol
        self.written = bytearray()
        self.writes = 0
        self.closed = False
        self.eof_written = False
        self.reading = True

    def write(self, data: bytes) -> None:
        assert not self.closed and not self.eof_written, "write after close"
        self.written += data
        self.writes += 1

    def writelines(self, chunks) -> None:
        for chunk in chunks:
            self.write(chunk)

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        self.eof_written = True

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            asyncio.get_running_loop().call_soon(self.protocol.connection_lost, None)

    def abort(self) -> None:
        self.close()

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def take(self) -> bytes:
        data = bytes(self.written)
        self.written.clear()
        return data


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes


class Pair:
    """A Connection on the running loop, its fake transport and its App."""

    def __init__(self, *, wait: float = 10, processing_limit: float = 2.0) -> None:
        loop = asyncio.get_running_loop()
        self.log_stream = io.StringIO()
        router = Router(tuple(builtin_routes.ROUTES) + ROUTES)
        self.app = App(loop, router, None, wait, ServerLog(stream=self.log_stream), processing_limit)
        self.conn = Connection(self.app)
        # every phase change, through the Connection's hook (the class may be compiled, and a
        # compiled class cannot be subclassed in Python)
        self.moves: list[tuple[connection.Phase, connection.Phase]] = []
        self.conn.on_phase = lambda old, new: self.moves.append((old, new))
        self.transport = FakeTransport(self.conn)
        self.conn.connection_made(self.transport)
        _pairs.append(self)

    async def send(self, data: bytes) -> None:
        """Deliver bytes as the loop does, from a callback of its own, and let it run."""
        asyncio.get_running_loop().call_soon(self.conn.data_received, data)
        await asyncio.sleep(0)

    async def send_eof(self) -> None:
        asyncio.get_running_loop().call_soon(self.conn.eof_received)
        await asyncio.sleep(0)

    def responses(self) -> list[Response]:
        return parse_responses(self.transport.take())

    def phases(self) -> list[connection.Phase]:
        return [new for _old, new in self.moves]

    def log(self) -> str:
        self.app.log.flush()
        return self.log_stream.getvalue()

    def sweep_now(self) -> None:
        """What the sweeper does at the connection's deadline."""
        self.conn.deadline_passed(self.conn.deadline)


_pairs: list[Pair] = []


@pytest.fixture(autouse=True)
def every_move_is_allowed():
    """After each test: every phase change any connection made is in TRANSITIONS."""
    _pairs.clear()
    yield
    for pair in _pairs:
        for old, new in pair.moves:
            assert new in TRANSITIONS[old], f"{old.name} → {new.name} is not an allowed move"


def run(scenario):
    return asyncio.run(scenario())


def parse_responses(data: bytes) -> list[Response]:
    out = []
    while data:
        head, _, data = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if headers.get("transfer-encoding") == "chunked":
            body = b""
            while True:
                size_line, _, data = data.partition(b"\r\n")
                size = int(size_line, 16)
                body, data = body + data[:size], data[size + 2:]
                if size == 0:
                    break
        elif status == 101:
            body, data = data, b""  # WebSocket frames follow
        else:
            length = int(headers.get("content-length", "0"))
            body, data = data[:length], data[length:]
        out.append(Response(status, headers, body))
    return out


def get(target: str, *headers: str) -> bytes:
    lines = [f"GET {target} HTTP/1.1", "Host: x", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


# --- keep-alive and pipelining -------------------------------------------------------------------


def test_keep_alive_answers_request_after_request():
    async def scenario():
        pair = Pair()
        for _ in range(3):
            await pair.send(get("/hello"))
            [resp] = pair.responses()
            assert (resp.status, resp.body) == (200, b'{"hello":"world"}')
            assert "connection" not in resp.headers
            assert pair.conn.phase is WAITING
            assert pair.conn.deadline == pytest.approx(pair.app.loop.time() + 10, abs=0.5)
        assert not pair.transport.closed and not pair.transport.eof_written
        assert pair.phases() == [WAITING] * 4  # connection_made, then one per answer
    run(scenario)


def test_connection_close_is_answered_then_lingers_then_closes():
    async def scenario():
        pair = Pair()
        await pair.send(get("/hello", "Connection: close"))
        [resp] = pair.responses()
        assert resp.headers["connection"] == "close"
        assert pair.transport.eof_written and not pair.transport.closed
        assert pair.conn.phase is LINGERING
        await pair.send(b"more bytes the peer still sends")  # read and dropped
        assert pair.transport.take() == b""
        pair.sweep_now()
        assert pair.transport.closed
        await asyncio.sleep(0)
        assert pair.phases()[-2:] == [LINGERING, CLOSED]
        assert pair.conn not in pair.app.connections
    run(scenario)


def test_pipelined_requests_are_answered_in_order_around_a_handler_that_suspends():
    async def scenario():
        pair = Pair()
        await pair.send(get("/slow?ms=30") + get("/hello") + get("/search?q=a"))
        assert pair.conn.phase is HANDLING and pair.transport.take() == b""
        await asyncio.sleep(0.1)
        answers = pair.responses()
        assert [r.body for r in answers] == [b'{"slept":30}', b'{"hello":"world"}', b'{"q":"a"}']
        assert pair.conn.phase is WAITING and not pair.conn.pending
        assert pair.phases() == [WAITING, HANDLING, WAITING, WAITING, WAITING]
    run(scenario)


def test_pipelined_answers_that_need_no_wait_leave_in_one_write():
    async def scenario():
        pair = Pair()
        await pair.send(get("/hello") * 3)
        assert pair.transport.writes == 1
        assert len(pair.responses()) == 3
    run(scenario)


def test_a_client_that_pipelines_too_far_ahead_is_paused_until_answered():
    async def scenario():
        pair = Pair()
        await pair.send(get("/slow?ms=20"))
        await pair.send(get("/hello") * (connection.PIPELINE_PAUSE + 1))
        assert not pair.transport.reading
        await asyncio.sleep(0.08)
        assert pair.transport.reading
        assert len(pair.responses()) == connection.PIPELINE_PAUSE + 2
    run(scenario)


# --- refusals -----------------------------------------------------------------------------------


def test_unknown_path_is_404_and_the_connection_stays_open():
    async def scenario():
        pair = Pair()
        await pair.send(get("/nowhere"))
        [resp] = pair.responses()
        assert (resp.status, resp.body) == (404, b'{"error":"not found"}')
        assert pair.conn.phase is WAITING
    run(scenario)


def test_wrong_method_is_405_with_allow():
    async def scenario():
        pair = Pair()
        await pair.send(b"DELETE /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        [resp] = pair.responses()
        assert (resp.status, resp.headers["allow"]) == (405, "GET, HEAD, OPTIONS")
        assert resp.body == b'{"error":"method not allowed"}'
    run(scenario)


def test_body_over_the_limit_is_413_and_the_rest_is_never_read():
    async def scenario():
        pair = Pair()
        await pair.send(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\nabc"
                        % (BODY_LIMIT + 1))
        [resp] = pair.responses()
        assert (resp.status, resp.headers["connection"]) == (413, "close")
        assert pair.conn.phase is LINGERING and pair.transport.eof_written
        await pair.send(b"x" * 1000)  # the body keeps coming: drained, not answered
        assert pair.transport.take() == b""
    run(scenario)


def test_expect_100_continue_for_a_route_that_takes_the_body():
    async def scenario():
        pair = Pair()
        await pair.send(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                        b"Expect: 100-continue\r\n\r\n")
        assert pair.transport.take() == b"HTTP/1.1 100 Continue\r\n\r\n"
        assert pair.conn.phase is RECEIVING
        await pair.send(b"hello")
        [resp] = pair.responses()
        assert (resp.status, resp.body) == (200, b"5")
    run(scenario)


def test_expect_100_continue_for_a_missing_route_is_answered_at_once():
    async def scenario():
        pair = Pair()
        await pair.send(b"POST /nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                        b"Expect: 100-continue\r\n\r\n")
        [resp] = pair.responses()
        assert (resp.status, resp.headers["connection"]) == (404, "close")
        assert pair.conn.phase is LINGERING
    run(scenario)


# --- handlers that wait, and the processing limit ----------------------------------------------


def test_a_handler_that_suspends_answers_when_it_is_done():
    async def scenario():
        pair = Pair()
        await pair.send(get("/slow?ms=20"))
        assert pair.conn.phase is HANDLING and pair.conn.task is not None
        assert pair.conn.deadline == pytest.approx(pair.app.loop.time() + 2.0, abs=0.5)
        await asyncio.sleep(0.06)
        [resp] = pair.responses()
        assert resp.body == b'{"slept":20}' and pair.conn.phase is WAITING
    run(scenario)


def test_a_handler_past_the_processing_limit_is_504_and_cancelled():
    async def scenario():
        pair = Pair(processing_limit=0.05)
        pair.app.sweeper.tick = 0.01
        pair.app.sweeper.start()
        await pair.send(get("/slow?ms=5000") + get("/hello"))
        task = pair.conn.task
        await asyncio.sleep(0.15)
        first, second = pair.responses()
        assert (first.status, first.body) == (504, b'{"error":"request timed out"}')
        assert second.status == 200  # the connection carries on
        assert task.cancelled() and pair.conn.phase is WAITING
        pair.app.sweeper.stop()
    run(scenario)


def test_a_suspended_handler_runs_without_a_task_with_its_request_deadline():
    async def scenario():
        pair = Pair()
        await pair.send(get("/deadline-later"))
        assert isinstance(pair.conn.task, Resumer)
        deadline = pair.conn.deadline
        await asyncio.sleep(0.01)
        [resp] = pair.responses()
        assert resp.status == 200 and request_deadline() is None
        body = json.loads(resp.body)
        assert body == {"deadline": deadline, "tasks": 1}  # the scenario's Task only
        assert pair.conn.task is None and pair.conn.phase is WAITING
    run(scenario)


def test_a_suspended_handler_that_raises_is_a_logged_500():
    async def scenario():
        pair = Pair()
        await pair.send(get("/fails-later") + get("/hello"))
        await asyncio.sleep(0.01)
        first, second = pair.responses()
        assert (first.status, first.body) == (500, b'{"error":"internal error"}')
        assert second.status == 200
        log = pair.log()
        assert "GET /fails-later: internal error" in log and "failed after an await" in log
        assert "Traceback" in log
    run(scenario)


def test_a_request_started_when_a_suspended_one_ends_has_a_log_of_its_own():
    async def scenario():
        pair = Pair()
        await pair.send(get("/slow?ms=1") + get("/fails-now"))
        await asyncio.sleep(0.02)
        first, second = pair.responses()
        assert (first.status, second.status) == (200, 500)
        log = pair.log()
        assert "failed at once" in log
        assert "StopIteration" not in log  # not raised "during the handling" of the first's end
    run(scenario)


def test_the_watchdog_s_timeout_in_a_resumed_handler_is_a_504():
    async def scenario():
        pair = Pair()
        await pair.send(get("/watchdog-later"))
        await asyncio.sleep(0.01)
        [resp] = pair.responses()
        assert (resp.status, resp.body) == (504, b'{"error":"request timed out"}')
        assert "GET /watchdog-later: request timed out" in pair.log()
    run(scenario)


def test_a_peer_that_leaves_cancels_its_suspended_handler():
    async def scenario():
        seen.clear()
        pair = Pair()
        await pair.send(get("/forever"))
        task = pair.conn.task
        pair.transport.close()  # connection_lost on the next loop turn
        await asyncio.sleep(0.01)
        assert seen == ["cancelled"] and task.cancelled()
        assert pair.transport.take() == b"" and pair.conn.task is None
    run(scenario)


def test_a_suspended_handler_cut_off_by_shutdown_s_grace_is_cancelled():
    async def scenario():
        seen.clear()
        pair = Pair()
        pair.app.sweeper.start()
        await pair.send(get("/forever"))
        await asyncio.wait_for(shut_down(pair.app, None, grace=0.05), 1.0)
        await asyncio.sleep(0.01)
        assert seen == ["cancelled"] and pair.transport.closed
    run(scenario)


def test_a_body_that_stops_arriving_is_504_at_the_processing_limit():
    async def scenario():
        pair = Pair(processing_limit=0.05)
        pair.app.sweeper.tick = 0.01
        pair.app.sweeper.start()
        await pair.send(b"POST /echo?x=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab")
        assert pair.conn.phase is RECEIVING
        await asyncio.sleep(0.15)
        [resp] = pair.responses()
        assert (resp.status, resp.headers["connection"]) == (504, "close")
        assert pair.conn.phase in (LINGERING, CLOSED)
        assert re.search(r"^POST /echo\?x=1 504 \d+\.\dms$", pair.log(), re.M)
        pair.app.sweeper.stop()
    run(scenario)


def test_a_silent_connection_is_closed_at_the_wait_deadline_without_a_word():
    async def scenario():
        pair = Pair(wait=0.05)
        pair.app.sweeper.tick = 0.01
        pair.app.sweeper.start()
        await asyncio.sleep(0.15)
        assert pair.transport.closed and pair.transport.take() == b""
        assert pair.conn.phase is CLOSED
        pair.app.sweeper.stop()
    run(scenario)


def test_a_peer_that_half_closes_while_its_request_runs_is_answered_then_closed():
    async def scenario():
        pair = Pair()
        await pair.send(get("/slow?ms=20"))
        await pair.send_eof()
        await asyncio.sleep(0.06)
        [resp] = pair.responses()
        assert (resp.status, resp.headers["connection"]) == (200, "close")
        assert pair.conn.phase is LINGERING
    run(scenario)


# --- the access log -----------------------------------------------------------------------------


def test_the_access_log_shows_the_target_as_received():
    async def scenario():
        pair = Pair()
        await pair.send(get("/search?q=x%20y&n=1"))
        await pair.send(get("/nowhere?a=b"))
        log = pair.log()
        assert re.search(r"^GET /search\?q=x%20y&n=1 200 \d+\.\dms$", log, re.M), log
        assert re.search(r"^GET /nowhere\?a=b 404 \d+\.\dms$", log, re.M), log
    run(scenario)


def test_a_quiet_log_never_decodes_the_target():
    async def scenario():
        pair = Pair()
        pair.app.log.quiet = True
        await pair.send(get("/search?q=x"))
        assert pair.log() == "" and pair.responses()[0].status == 200
    run(scenario)


# --- /stream and /ws ----------------------------------------------------------------------------


def test_stream_writes_its_chunks_then_waits_for_the_next_request():
    async def scenario():
        pair = Pair()
        await pair.send(get("/stream"))
        assert pair.conn.phase is STREAMING
        await asyncio.sleep(0.05)
        [resp] = pair.responses()
        assert resp.body == b"".join(builtin_routes.STREAM_CHUNKS)
        assert pair.conn.phase is WAITING
    run(scenario)


def _upgrade_request() -> bytes:
    key = base64.b64encode(b"0123456789abcdef").decode()
    return get("/ws", "Upgrade: websocket", "Connection: Upgrade", f"Sec-WebSocket-Key: {key}",
               "Sec-WebSocket-Version: 13")


def test_websocket_upgrade_then_shutdown_sends_close_1001_and_lingers_briefly():
    async def scenario():
        pair = Pair()
        await pair.send(_upgrade_request())
        [resp] = pair.responses()
        assert resp.status == 101 and pair.conn.phase is UPGRADED
        pair.app.shutting_down = True
        pair.conn.shutdown()
        frame = pair.transport.take()
        assert frame[0] == 0x88 and frame[2:4] == (1001).to_bytes(2, "big")  # Close, 1001
        assert pair.conn.phase is LINGERING
        assert pair.conn.deadline <= pair.app.loop.time() + connection.SHUTDOWN_LINGER_SECONDS
    run(scenario)


# --- shutdown -----------------------------------------------------------------------------------


def test_shutdown_closes_an_idle_connection_at_once():
    async def scenario():
        pair = Pair()
        await pair.send(get("/hello"))
        pair.responses()
        started = time.monotonic()
        await shut_down(pair.app, None)
        assert time.monotonic() - started < 0.05  # waits on the close, not on a timer
        assert pair.transport.closed and pair.conn.phase is CLOSED
        assert not pair.app.connections
    run(scenario)


def test_shutdown_lets_a_busy_connection_answer_then_closes_it():
    async def scenario():
        pair = Pair()
        pair.app.sweeper.start()
        await pair.send(get("/slow?ms=50") + get("/hello"))
        stopping = asyncio.ensure_future(shut_down(pair.app, None))
        await asyncio.sleep(0.01)
        assert not pair.transport.closed and pair.conn.phase is HANDLING
        await asyncio.wait_for(stopping, 1.0)
        first, second = pair.responses()
        assert (first.body, first.headers["connection"]) == (b'{"slept":50}', "close")
        assert (second.status, second.body) == (503, b'{"error":"shutting down"}')
        assert second.headers["retry-after"] == "1"
        assert pair.transport.closed
        assert pair.phases()[-3:] == [HANDLING, LINGERING, CLOSED]
    run(scenario)


def test_shutdown_cuts_a_lingering_connection_short():
    async def scenario():
        pair = Pair()
        pair.app.sweeper.start()
        await pair.send(get("/hello", "Connection: close"))
        assert pair.conn.phase is LINGERING
        started = time.monotonic()
        await shut_down(pair.app, None)
        assert time.monotonic() - started < connection.LINGER_SECONDS / 2
        assert pair.transport.closed
    run(scenario)


# --- the phase table ----------------------------------------------------------------------------


def test_every_phase_has_its_moves_and_can_end_closed():
    assert set(TRANSITIONS) == set(connection.Phase)
    for phase, moves in TRANSITIONS.items():
        assert phase is CLOSED or CLOSED in moves, phase
    assert TRANSITIONS[CLOSED] == frozenset()


def test_the_phase_changes_only_in_enter():
    """One place changes the phase (h11's _state.py style), so the table above is the truth."""
    import ast

    from svc import native
    # read from the source file: the module itself may be compiled (svc.native)
    source = native.source_path("svc.runtime.http.connection").read_text()
    assert source.count("self.phase = ") == 2  # the initial phase in __init__, and enter
    enter = next(node for node in ast.walk(ast.parse(source))
                 if isinstance(node, ast.FunctionDef) and node.name == "enter")
    assert "self.phase = phase" in ast.unparse(enter)
