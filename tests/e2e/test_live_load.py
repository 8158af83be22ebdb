"""Event streams under load and faults (issue 34), on real `svcc run` servers over real
sockets: tests/e2e/programs/live_load.svc, a topic with a POST that publishes to it and a
GET /live event stream whose first event, `listening`, says its subscription is live.

- 10,000 streams on one server process: its RSS stays under 200 MiB, one publish reaches all.
- A reader that stops reading while 50 MiB of events are published: the server's memory stays
  put, it keeps answering, and one warn line says the client reads too slowly.
- Two instances on one PostgreSQL: one killed with SIGKILL, the other's streams still get what
  is published to it; the killed one started again serves streams that get what the other
  publishes.
- SQLite with SVC_WORKERS=2: streams held by both workers all get one publish.

The clients speak bytes on raw sockets: the chunked `text/event-stream` is decoded here,
minimally (EventDecoder). No timing is asserted beyond generous bounds.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import resource
import signal
import socket
import time
from collections import deque
from pathlib import Path

from tests.e2e.test_workers import LISTEN, owners, server_sockets, socket_inodes, worker_pids
from tests.helpers.many_connections import raise_open_file_limit
from tests.helpers.svc_process import REPO, start

PROGRAM = REPO / "tests" / "e2e" / "programs" / "live_load.svc"
#: Seconds any one awaited thing may take (an event, a stream's start, an answer).
WAIT = 20.0


class EventDecoder:
    """The bytes of one GET /live answer, fed as they come: the head (which must be a 200),
    then the chunks of the body, whose text is cut into events at blank lines. `feed` gives
    the events completed so far, each as (its `event:` name or None, its `data:`)."""

    def __init__(self) -> None:
        self.raw = b""
        self.head = True
        self.need = 0  # bytes of the current chunk still to come
        self.skip = 0  # bytes of the CRLF after a chunk still to come
        self.text = b""
        self.ended = False

    def feed(self, data: bytes) -> list[tuple[str | None, bytes]]:
        raw, at = self.raw + data, 0
        if self.head:
            end = raw.find(b"\r\n\r\n")
            if end < 0:
                self.raw = raw
                return []
            head = raw[:end]
            assert head.startswith(b"HTTP/1.1 200") and b"chunked" in head.lower(), head
            self.head, at = False, end + 4
        body = []
        while at < len(raw) and not self.ended:
            if self.skip:
                step = min(self.skip, len(raw) - at)
                at, self.skip = at + step, self.skip - step
            elif self.need:
                step = min(self.need, len(raw) - at)
                body.append(raw[at:at + step])
                at, self.need = at + step, self.need - step
                self.skip = 0 if self.need else 2
            else:
                end = raw.find(b"\r\n", at)
                if end < 0:
                    break
                self.need, at = int(raw[at:end].split(b";", 1)[0], 16), end + 2
                self.ended = not self.need
        self.raw = raw[at:]
        *blocks, self.text = (self.text + b"".join(body)).split(b"\n\n")
        found = []
        for block in blocks:
            name, data = None, []
            for line in block.split(b"\n"):
                if line.startswith(b"event: "):
                    name = line[7:].decode()
                elif line.startswith(b"data: "):
                    data.append(line[6:])
            if data:
                found.append((name, b"\n".join(data)))
        return found


class Reader:
    """One GET /live stream on a blocking socket, read when asked."""

    def __init__(self, port: int, *, receive_buffer: int | None = None) -> None:
        self.sock = socket.socket()
        if receive_buffer is not None:  # before connecting, so the window is small from the start
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        self.sock.settimeout(WAIT)
        self.sock.connect(("127.0.0.1", port))
        self.sock.sendall(b"GET /live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        self.decoder = EventDecoder()
        self.pending: deque[tuple[str | None, bytes]] = deque()
        name, _ = self.next()
        assert name == "listening"

    def local_port(self) -> int:
        return self.sock.getsockname()[1]

    def next(self) -> tuple[str | None, bytes]:
        deadline = time.monotonic() + WAIT
        while not self.pending:
            assert time.monotonic() < deadline, "no event within the wait"
            data = self.sock.recv(65536)
            assert data, "the stream ended"
            self.pending.extend(self.decoder.feed(data))
        return self.pending.popleft()

    def note(self) -> int:
        """The next note's n."""
        name, data = self.next()
        assert name is None, name
        return json.loads(data)["n"]

    def ended(self) -> bool:
        """Whether the server closed the connection (waits for it up to WAIT)."""
        try:
            while data := self.sock.recv(65536):
                self.pending.extend(self.decoder.feed(data))
        except (ConnectionResetError, BrokenPipeError):
            pass
        return True

    def close(self) -> None:
        self.sock.close()


def publish(port: int, n: int, text: str = "", conn: http.client.HTTPConnection | None = None):
    """POST /publish of one note; on `conn` when given (kept alive), else a fresh connection."""
    own = conn is None
    conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT)
    try:
        conn.request("POST", "/publish", body=json.dumps({"n": n, "text": text}),
                     headers={"Content-Type": "application/json"})
        answer = conn.getresponse()
        answer.read()
        assert answer.status == 204, answer.status
    finally:
        if own:
            conn.close()


def health(port: int) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT)
    try:
        conn.request("GET", "/health")
        return conn.getresponse().status
    finally:
        conn.close()


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for {pid}")


def serving_pid(server) -> int:
    """The one process that serves: `svcc run` itself, with no worker under it, holding the
    listening socket."""
    pid = server.process.pid
    assert worker_pids(pid) == []
    held = socket_inodes(pid)
    assert [inode for _, inode in server_sockets(server.port, LISTEN) if inode in held]
    return pid


# --- 10,000 streams on one process ---------------------------------------------------------------

STREAMS = 10_000


class Stream(asyncio.Protocol):
    """One GET /live of many, on this test's event loop."""

    def __init__(self, found: dict) -> None:
        self.found = found
        self.decoder = EventDecoder()

    def connection_made(self, transport) -> None:
        transport.write(b"GET /live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")

    def data_received(self, data: bytes) -> None:
        for name, payload in self.decoder.feed(data):
            key = name or json.loads(payload)["n"]
            self.found[key] = self.found.get(key, 0) + 1
            if self.found[key] == STREAMS:
                self.found["done"].set()


async def until(found: dict, key, timeout: float) -> None:
    found["done"].clear()
    deadline = time.monotonic() + timeout
    while found.get(key, 0) < STREAMS and time.monotonic() < deadline:
        try:
            await asyncio.wait_for(found["done"].wait(), 0.5)
        except asyncio.TimeoutError:
            pass
        found["done"].clear()


async def ten_thousand(port: int, pid: int) -> dict:
    loop = asyncio.get_running_loop()
    found: dict = {"done": asyncio.Event()}
    transports = []
    started = time.monotonic()
    try:
        for first in range(0, STREAMS, 500):  # waves a listen backlog takes
            opened = await asyncio.gather(*(
                loop.create_connection(lambda: Stream(found), "127.0.0.1", port)
                for _ in range(min(500, STREAMS - first))))
            transports += [transport for transport, _ in opened]
        await until(found, "listening", 90)
        live = time.monotonic()
        rss_live = rss_mib(pid)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        body = b'{"n": 1, "text": "to every one of them"}'
        writer.write(b"POST /publish HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        answer = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), WAIT)
        await until(found, 1, 60)
        writer.close()
        return {"listening": found.get("listening", 0), "got": found.get(1, 0),
                "answer": answer.split(b"\r\n", 1)[0], "rss_live": rss_live,
                "rss_after": rss_mib(pid), "open_s": live - started,
                "fan_out_s": time.monotonic() - live}
    finally:
        for transport in transports:
            transport.close()
        await asyncio.sleep(0.1)


def test_ten_thousand_streams_on_one_process_stay_under_200_mib_and_all_get_a_publish(tmp_path):
    old = raise_open_file_limit(STREAMS + 500)
    server = start([str(PROGRAM)], env={"SVC_DB": str(tmp_path / "live.sqlite")})
    try:
        pid = serving_pid(server)
        result = asyncio.run(ten_thousand(server.port, pid))
        assert result["listening"] == STREAMS, result
        assert result["answer"] == b"HTTP/1.1 204 No Content", result
        assert result["got"] == STREAMS, result
        assert result["rss_live"] < 200 and result["rss_after"] < 200, result
        print(f"\n10,000 streams: {result}")
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, old)
        assert server.stop() == 0, "".join(server.stderr[-20:])


# --- a reader that stops reading ------------------------------------------------------------------

#: 50 MiB of events: 800 notes of 64 KiB of text each.
FLOOD_NOTES, FLOOD_TEXT = 800, "x" * 65_536


def test_a_reader_that_stops_reading_does_not_grow_the_server():
    """On an in-memory database, which has no bus: what is measured is the stream's own
    buffering. (On an SQLite file the bus's outgoing queue and the statements that write
    those 50 MiB to the table add memory of their own, whoever reads.)"""
    server = start([str(PROGRAM)], env={"SVC_DB": ":memory:"})
    try:
        pid = serving_pid(server)
        stuck = Reader(server.port, receive_buffer=4096)  # reads its first event, then nothing
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=WAIT)
        before = rss_mib(pid)
        for n in range(1, FLOOD_NOTES + 1):
            publish(server.port, n, FLOOD_TEXT, conn)
            if n % 100 == 0:  # other requests are answered meanwhile
                assert health(server.port) == 200
        after = rss_mib(pid)
        conn.close()
        assert after - before < 4, (before, after)
        assert "reads too slowly" not in server.log()  # the episode is not over yet
        fresh = Reader(server.port)  # streams still start, and get what is published
        publish(server.port, -1)
        assert fresh.note() == -1
        fresh.close()
        stuck.close()  # its stream ends: the episode's one line
        log = server.log(until="reads too slowly", timeout=WAIT)
    finally:
        assert server.stop() == 0, "".join(server.stderr[-20:])
    lines = [line for line in log.splitlines() if "reads too slowly" in line]
    assert len(lines) == 1, lines
    print(f"\nRSS {before:.1f} MiB before 50 MiB to a stuck reader, {after:.1f} MiB after; "
          f"{lines[0]}")


def test_publishing_to_an_sqlite_file_keeps_the_server_s_memory_bounded(tmp_path):
    """50 MiB published to the bus of an SQLite file, nobody reading: what stays is the bus's
    outgoing queue at most (16 MiB), not a copy of every batch (the INSERT of a batch keeps
    its arguments while it is cached: one statement shape, sqlite_bus.py; +61 MiB with one
    shape per batch size)."""
    server = start([str(PROGRAM)], env={"SVC_DB": str(tmp_path / "live.sqlite")})
    try:
        pid = serving_pid(server)
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=WAIT)
        publish(server.port, 0, FLOOD_TEXT, conn)  # the bus and its table are made
        before = rss_mib(pid)
        for n in range(1, FLOOD_NOTES + 1):
            publish(server.port, n, FLOOD_TEXT, conn)
        conn.close()
        time.sleep(1)  # the last batches are written
        after = rss_mib(pid)
        assert after - before < 28, (before, after)
    finally:
        assert server.stop() == 0, "".join(server.stderr[-20:])
    print(f"\nRSS {before:.1f} MiB before 50 MiB published to an SQLite file, {after:.1f} after")


# --- two instances on one PostgreSQL, one killed --------------------------------------------------

def test_a_killed_instance_leaves_the_other_s_streams_live_and_comes_back_subscribed(
        postgres_cluster):
    url = postgres_cluster.create_database()
    first = start([str(PROGRAM)], env={"SVC_DB": url})
    second = start([str(PROGRAM)], env={"SVC_DB": url})
    readers: list[Reader] = []
    again = None
    try:
        on_first = [Reader(first.port) for _ in range(3)]
        on_second = [Reader(second.port) for _ in range(3)]
        readers += on_first + on_second
        publish(first.port, 1)
        assert [r.note() for r in readers] == [1] * 6  # across the instances, both ways
        publish(second.port, 2)
        assert [r.note() for r in readers] == [2] * 6

        first.process.send_signal(signal.SIGKILL)
        assert first.process.wait(timeout=WAIT) == -signal.SIGKILL
        assert all(r.ended() for r in on_first)
        publish(second.port, 3)
        assert [r.note() for r in on_second] == [3] * 3

        again = start([str(PROGRAM)], env={"SVC_DB": url})
        newcomer = Reader(again.port)
        readers.append(newcomer)
        publish(second.port, 4)
        assert newcomer.note() == 4  # it subscribed anew: the other's messages reach it
        assert [r.note() for r in on_second] == [4] * 3
        publish(again.port, 5)
        assert [r.note() for r in on_second + [newcomer]] == [5] * 4
    finally:
        for reader in readers:
            reader.close()
        first.stop()
        assert second.stop() == 0, "".join(second.stderr[-20:])
        if again is not None:
            assert again.stop() == 0, "".join(again.stderr[-20:])


# --- SQLite, two workers --------------------------------------------------------------------------

def test_streams_held_by_both_workers_all_get_one_publish(tmp_path):
    server = start([str(PROGRAM)], env={"SVC_DB": str(tmp_path / "live.sqlite"),
                                        "SVC_WORKERS": "2"})
    readers: list[Reader] = []
    try:
        pids = worker_pids(server.process.pid)
        assert len(pids) == 2
        held: dict[int, int] = {}
        while len(readers) < 64:  # the kernel spreads connections: open until both hold 4
            readers.append(Reader(server.port))
            held = owners(server.port, pids)
            holders = [held.get(r.local_port()) for r in readers]
            if len(readers) >= 8 and all(holders.count(pid) >= 4 for pid in pids):
                break
        holders = [held.get(r.local_port()) for r in readers]
        assert all(holders.count(pid) >= 4 for pid in pids), holders
        for n in (1, 2):  # the publish lands on either worker; both times every stream gets it
            publish(server.port, n)
            assert [r.note() for r in readers] == [n] * len(readers)
    finally:
        for reader in readers:
            reader.close()
        assert server.stop() == 0, "".join(server.stderr[-20:])
