"""Live streams (issue 34): server-sent events to 1, 1,000 and 10,000 subscribers of one
server process, and WebSocket echo round trips against Node's `ws`, over real sockets.

Not a test: a bounded measurement for the report, which stops by itself (fixed counts, every
wait bounded, every server stopped at the end whatever happened):

    .venv/bin/python bench/live.py            # the full counts
    .venv/bin/python bench/live.py --quick    # fewer messages and connections, to try it

Event streams: `svcc run bench/live.svc` (one process, SVC_WORKERS unset, an SQLite file as
a real deployment has; pinned to CPU 0), N clients of GET /live opened from this process
(asyncio protocols on raw sockets, pinned to CPU 1; the chunked `text/event-stream` decoded
minimally), each live once its first event, `listening`, came. Then:

    latency      a message POSTed to /publish (one keep-alive connection), carrying the time
                 it was sent (CLOCK_MONOTONIC, ns); the next one once all N got it (or 10 s
                 passed), 2 ms later. Latency is each (subscriber, message) pair's time from
                 the POST's first byte written to the event's bytes read: so at 10,000 it is
                 mostly the fan-out's length, the p50 a subscriber in the middle of it.
    burst        `burst` messages POSTed one after another as fast as they are answered; the
                 events received by all N together, per second from the first POST to the last
                 event (or to 3 s without one: the rest were dropped, and counted missing).

The server's RSS with the N streams open, and how long opening them took, are reported too.

WebSocket echo: C connections, each sending M JSON text messages one at a time and waiting
for each echo (the `websockets` library's asyncio client, pinned to CPU 1), against:

    svc route    bench/live_ws.svc's `WebSocket[Msg, Msg]` route (decodes each message as a
                 Msg and sends it back): needs svc.runtime.http.sockets, and is skipped
                 ("runtime not merged") while that module does not exist
    svc /ws      every svc server's built-in /ws echo (svc.runtime.http.websocket, bytes back
                 as they came, no decoding): what the framing costs alone
    Node ws      bench/peers/node-ws/ws-echo.js, Node's `ws` package, decoding each message's
                 JSON and sending it back encoded (installed by bench/setup.sh into
                 bench/.work/node-ws; skipped when it is not there)

After a warm-up of 10 connections: round trips per second over all connections, each round
trip's latency p50/p99, and the CPU time each side spent a round trip (server: its process's
user + system time over the run; client: this process's). One Python client drives every
connection, so it may be what limits the rate: the servers' CPU a round trip compares them
whoever limits it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "src"))

from harness.measured import lines_results, lines_section  # noqa: E402
from harness.servers import WORK, RunningServer, ServerSpec  # noqa: E402

SVCC = str(Path(sys.executable).with_name("svcc"))
#: Counts: (subscribers, timed messages, burst messages) per case; WebSocket (connections,
#: messages each).
FULL = dict(streams=((1, 500, 5_000), (1_000, 50, 200), (10_000, 20, 20)), ws=(100, 200))
QUICK = dict(streams=((1, 100, 1_000), (1_000, 10, 50), (10_000, 5, 5)), ws=(20, 50))
#: Seconds between a timed message reaching every subscriber and the next one's POST.
PAUSE = 0.002
#: Bounds: a message reaching every subscriber; a burst with no event arriving; opening
#: the streams (each wave); one WebSocket round trip.
DELIVERY_TIMEOUT = 10.0
QUIET_TIMEOUT = 3.0
OPEN_TIMEOUT = 60.0
ROUND_TRIP_TIMEOUT = 10.0
#: Streams opened at once (what a listen backlog takes without dropping).
WAVE = 500
TEXT = "a typical small event"
CLIENT_CPU = 1


def env_for_servers() -> dict:
    """The checkout's src first on PYTHONPATH, as `make bench` runs it."""
    return {"PYTHONPATH": os.pathsep.join(p for p in (str(REPO / "src"),
                                                      os.environ.get("PYTHONPATH", "")) if p),
            "SVC_LOG": "quiet"}


def raise_open_files(needed: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < needed:
        raise SystemExit(f"the open-file hard limit ({hard}) is below {needed}")
    if soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def percentiles(values_ns: list[int]) -> tuple[float, float]:
    """(p50, p99) in ms."""
    ms = sorted(v / 1e6 for v in values_ns)
    if not ms:
        return float("nan"), float("nan")
    return statistics.median(ms), ms[min(len(ms) - 1, int(len(ms) * 0.99))]


# --- server-sent events -------------------------------------------------------------------------

class Collector:
    """What every stream received: counts per message, latencies while timing."""

    def __init__(self, subscribers: int) -> None:
        self.subscribers = subscribers
        self.counts: Counter[int] = Counter()
        self.waiters: dict[int, asyncio.Future] = {}
        self.latencies: list[int] = []
        self.timing = True
        self.events = 0
        self.last = 0
        self.listening = 0
        self.all_listening: asyncio.Future | None = None
        self.problems: list[str] = []

    def got(self, data: bytes, now: int) -> None:
        message = json.loads(data)
        n = message["n"]
        self.events += 1
        self.last = now
        if self.timing:
            self.latencies.append(now - message["at"])
        count = self.counts[n] + 1
        self.counts[n] = count
        if count == self.subscribers:
            waiter = self.waiters.pop(n, None)
            if waiter is not None and not waiter.done():
                waiter.set_result(None)

    def live(self) -> None:
        self.listening += 1
        if self.listening == self.subscribers and self.all_listening is not None:
            if not self.all_listening.done():
                self.all_listening.set_result(None)


class Stream(asyncio.Protocol):
    """One GET /live: the head, then chunks, each chunk's bytes split into events at blank
    lines; each event's `data:` given to the collector (the `listening` one counted apart)."""

    def __init__(self, collector: Collector) -> None:
        self.collector = collector
        self.transport: asyncio.Transport | None = None
        self.raw = b""       # bytes not yet decoded: the head, or a chunk's size line
        self.head = True
        self.need = 0        # the current chunk's bytes still to come
        self.skip = 0        # the CRLF after a chunk's bytes, still to come
        self.text = b""      # the event stream's text not yet split into events

    def connection_made(self, transport) -> None:
        self.transport = transport
        transport.write(b"GET /live HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                        b"Accept: text/event-stream\r\n\r\n")

    def data_received(self, data: bytes) -> None:
        now = time.monotonic_ns()
        raw = self.raw + data if self.raw else data
        at = 0
        if self.head:
            end = raw.find(b"\r\n\r\n")
            if end < 0:
                self.raw = raw
                return
            head = raw[:end]
            if not head.startswith(b"HTTP/1.1 200") or b"chunked" not in head.lower():
                self.collector.problems.append(head.split(b"\r\n", 1)[0].decode("latin-1"))
                self.transport.close()
                return
            self.head = False
            at = end + 4
        body = []
        while at < len(raw):
            if self.skip:
                step = min(self.skip, len(raw) - at)
                at += step
                self.skip -= step
            elif self.need:
                step = min(self.need, len(raw) - at)
                body.append(raw[at:at + step])
                at += step
                self.need -= step
                if not self.need:
                    self.skip = 2
            else:
                end = raw.find(b"\r\n", at)
                if end < 0:
                    break
                self.need = int(raw[at:end].split(b";", 1)[0], 16)
                at = end + 2
                if not self.need:  # the last chunk: the stream ended
                    self.transport.close()
                    break
        self.raw = raw[at:]
        if body:
            self.events(b"".join(body), now)

    def events(self, text: bytes, now: int) -> None:
        text = self.text + text
        *blocks, self.text = text.split(b"\n\n")
        for block in blocks:
            data = None
            named = False
            for line in block.split(b"\n"):
                if line.startswith(b"data: "):
                    data = line[6:]
                elif line.startswith(b"event: "):
                    named = line == b"event: listening"
            if named:
                self.collector.live()
            elif data is not None:
                self.collector.got(data, now)


class Publisher:
    """POST /publish on one keep-alive connection, one request at a time."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    async def post(self, n: int) -> None:
        body = b'{"n":%d,"at":%d,"text":"%s"}' % (n, time.monotonic_ns(), TEXT.encode())
        self.writer.write(b"POST /publish HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                          b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                          % (len(body), body))
        head = await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), DELIVERY_TIMEOUT)
        if not head.startswith(b"HTTP/1.1 204"):
            raise SystemExit(f"POST /publish answered {head[:200]!r}")


async def streams_case(port: int, subscribers: int, timed: int, burst: int,
                       server: RunningServer) -> dict:
    loop = asyncio.get_running_loop()
    collector = Collector(subscribers)
    collector.all_listening = loop.create_future()
    protocols: list[Stream] = []
    opened = time.perf_counter()
    for first in range(0, subscribers, WAVE):
        wave = [loop.create_connection(lambda: Stream(collector), "127.0.0.1", port)
                for _ in range(min(WAVE, subscribers - first))]
        for _transport, protocol in await asyncio.wait_for(asyncio.gather(*wave), OPEN_TIMEOUT):
            protocols.append(protocol)
    try:
        await asyncio.wait_for(asyncio.shield(collector.all_listening), OPEN_TIMEOUT)
    except asyncio.TimeoutError:
        raise SystemExit(f"{collector.listening:,} of {subscribers:,} streams began within "
                         f"{OPEN_TIMEOUT:.0f} s; {collector.problems[:3]}") from None
    open_seconds = time.perf_counter() - opened
    rss_mib = server.rss_mib()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    publisher = Publisher(reader, writer)
    late = 0
    try:
        for n in range(timed):  # latency: one message at a time
            waiter = collector.waiters[n] = loop.create_future()
            await publisher.post(n)
            try:
                await asyncio.wait_for(waiter, DELIVERY_TIMEOUT)
            except asyncio.TimeoutError:
                late += 1
            await asyncio.sleep(PAUSE)
        collector.timing = False
        await asyncio.sleep(0.2)
        before = collector.events
        server_cpu, client_cpu = server.cpu_seconds(), time.process_time()
        began = time.monotonic_ns()
        for n in range(timed, timed + burst):  # throughput: as fast as the POSTs are answered
            await publisher.post(n)
        published = time.monotonic_ns()
        expected = before + burst * subscribers
        while collector.events < expected:  # until all came, or none for QUIET_TIMEOUT
            seen = collector.events
            await asyncio.sleep(0.05)
            quiet = time.monotonic_ns() - max(collector.last, published)
            if collector.events == seen and quiet > QUIET_TIMEOUT * 1e9:
                break
        got = collector.events - before
        server_cpu = server.cpu_seconds() - server_cpu
        client_cpu = time.process_time() - client_cpu
        seconds = (max(collector.last, published) - began) / 1e9
        server_rss_after = server.rss_mib()
    finally:
        writer.close()
        for protocol in protocols:
            if protocol.transport is not None:
                protocol.transport.close()
        await asyncio.sleep(0.2)
    p50, p99 = percentiles(collector.latencies)
    return {"subscribers": subscribers, "timed": timed, "late": late, "p50_ms": p50,
            "p99_ms": p99, "burst": burst, "burst_got": got, "burst_seconds": seconds,
            "events_per_s": got / seconds if seconds else 0.0,
            "publishes_per_s": burst / ((published - began) / 1e9),
            "server_cpu_us": server_cpu * 1e6 / max(got, 1),
            "client_cpu_us": client_cpu * 1e6 / max(got, 1), "open_seconds": open_seconds,
            "rss_mib": rss_mib, "rss_after_mib": server_rss_after,
            "problems": collector.problems[:3]}


def streams_line(r: dict) -> str:
    """Two lines: latency and the streams, then the burst."""
    missing = r["burst"] * r["subscribers"] - r["burst_got"]
    late = f", {r['late']} not to all within {DELIVERY_TIMEOUT:.0f} s" if r["late"] else ""
    return (f"{r['subscribers']:>6,} streams: latency p50 {r['p50_ms']:7.2f} ms  p99 "
            f"{r['p99_ms']:7.2f} ms ({r['timed']} messages one at a time{late}); opened in "
            f"{r['open_seconds']:.1f} s, server RSS {r['rss_mib']:.0f} MiB\n"
            f"{'':>14} burst of {r['burst']:,}: {r['events_per_s']:>7,.0f} events/s received "
            f"({r['burst_got']:,} in {r['burst_seconds']:.2f} s, {missing:,} missing; "
            f"{r['publishes_per_s']:,.0f} POSTs/s); CPU an event: server "
            f"{r['server_cpu_us']:.1f} us, client {r['client_cpu_us']:.1f} us")


def run_streams(subscribers: int, timed: int, burst: int, folder: str) -> dict:
    spec = ServerSpec("svc-live", (SVCC, "run", str(HERE / "live.svc")),
                      env={**env_for_servers(),
                           "SVC_DB": str(Path(folder) / f"live-{subscribers}.sqlite")})
    with RunningServer(spec) as server:
        return run_loop(streams_case(server.port, subscribers, timed, burst, server))


# --- WebSocket echo ---------------------------------------------------------------------------

def sockets_runtime() -> bool:
    """Whether this checkout has the WebSocket runtime (svc.runtime.http.sockets)."""
    try:
        import svc.runtime.http.sockets  # noqa: F401
    except ImportError:
        return False
    return True


async def echo_case(url: str, connections: int, messages: int, server: RunningServer) -> dict:
    from websockets.asyncio.client import connect

    latencies: list[int] = []

    async def one(k: int) -> None:
        async with connect(url, compression=None, max_size=2**20, open_timeout=OPEN_TIMEOUT,
                           ping_interval=None) as ws:
            for n in range(messages):
                sent = time.monotonic_ns()
                await ws.send('{"n":%d,"at":%d,"text":"%s"}' % (n, sent, TEXT))
                answer = await asyncio.wait_for(ws.recv(), ROUND_TRIP_TIMEOUT)
                latencies.append(time.monotonic_ns() - sent)
                if json.loads(answer)["n"] != n:
                    raise SystemExit(f"{url}: echo of {n} was {answer!r}")

    # warm: 10 connections first, so a JIT (Node's) has compiled the path
    await asyncio.wait_for(asyncio.gather(*(one(-1) for _ in range(10))), OPEN_TIMEOUT)
    latencies.clear()
    server_cpu, client_cpu = server.cpu_seconds(), time.process_time()
    started = time.perf_counter()
    await asyncio.gather(*(one(k) for k in range(connections)))
    seconds = time.perf_counter() - started
    server_cpu = server.cpu_seconds() - server_cpu
    client_cpu = time.process_time() - client_cpu
    p50, p99 = percentiles(latencies)
    return {"round_trips": len(latencies), "seconds": seconds,
            "per_s": len(latencies) / seconds, "p50_ms": p50, "p99_ms": p99,
            "server_cpu_us": server_cpu * 1e6 / len(latencies),
            "client_cpu_us": client_cpu * 1e6 / len(latencies)}


def echo_line(name: str, r: dict, connections: int, messages: int) -> str:
    return (f"{name:<11} {r['per_s']:>9,.0f} round trips/s  p50 {r['p50_ms']:6.2f} ms  p99 "
            f"{r['p99_ms']:6.2f} ms ({connections} connections x {messages} messages in "
            f"{r['seconds']:.2f} s); CPU a round trip: server {r['server_cpu_us']:.1f} us, "
            f"client {r['client_cpu_us']:.1f} us")


def run_echo(connections: int, messages: int, say) -> dict:
    results: dict = {}
    node_modules = WORK / "node-ws" / "node_modules"
    targets = []
    if sockets_runtime():
        targets.append(("svc route", ServerSpec(
            "svc-live-ws", (SVCC, "run", str(HERE / "live_ws.svc")), env=env_for_servers()),
            "/echo"))
    else:
        say("WebSocket echo: skipped (runtime not merged)")
    targets.append(("svc /ws", ServerSpec(
        "svc-live", (SVCC, "run", str(HERE / "live.svc")),
        env={**env_for_servers(), "SVC_DB": ":memory:"}), "/ws"))
    if (node_modules / "ws").is_dir():
        targets.append(("Node ws", ServerSpec(
            "node-ws", ("node", str(HERE / "peers" / "node-ws" / "ws-echo.js")),
            env={"NODE_PATH": str(node_modules)}), "/echo"))
    else:
        say("Node ws: skipped (not installed: bash bench/setup.sh)")
    for name, spec, path in targets:
        with RunningServer(spec) as server:
            found = run_loop(echo_case(f"ws://127.0.0.1:{server.port}{path}", connections,
                                       messages, server))
            found["rss_mib"] = round(server.rss_mib(), 1)
        results[name] = found
        say(echo_line(name, found, connections, messages))
    return results


# --- the whole run --------------------------------------------------------------------------------

def run_loop(coroutine):
    """The coroutine on uvloop where installed, as the servers' own loops are."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover
        return asyncio.run(coroutine)
    return uvloop.run(coroutine)


def measure(quick: bool, say) -> dict:
    """Every case, each result line given to `say` as soon as it is known."""
    counts = QUICK if quick else FULL
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {CLIENT_CPU})  # the servers run on CPU 0 (harness/servers.py)
    raise_open_files(max(n for n, _, _ in counts["streams"]) + 1000)
    say(f"svc live streams, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
        f"{'quick' if quick else 'full'} counts, load {load()} at the start")
    results: dict = {"streams": [], "echo": {}}
    with tempfile.TemporaryDirectory(prefix="svc-bench-live-") as folder:
        for subscribers, timed, burst in counts["streams"]:
            found = run_streams(subscribers, timed, burst, folder)
            results["streams"].append(found)
            say(streams_line(found))
    connections, messages = counts["ws"]
    results["echo"] = run_echo(connections, messages, say)
    say(f"load {load()} at the end")
    return results


# --- in `make bench` (bench/run.py, bench/harness/report.py) ---------------------------------------

def run_section(mode: dict, log, incidents: list) -> dict | None:
    """The cases in a process of their own (`--json`; a quick run has the quick counts)."""
    return lines_results("live streams", Path(__file__).resolve(), mode, log, incidents)


def section(results: dict | None) -> list[str]:
    """The report's "Live streams" section: the script's own lines."""
    return lines_section("Live streams", (
        "Server-sent events from one `svcc run bench/live.svc` process (CPU 0) to 1, 1,000 "
        "and 10,000 GET /live streams of one asyncio client process (CPU 1): latency from a "
        "POST /publish to each stream's event, and events a second received in a burst; "
        "WebSocket echo round trips against Node's `ws` (bench/live.py)."), results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer messages and connections")
    parser.add_argument("--json", action="store_true", help="print the lines as one JSON object")
    args = parser.parse_args()
    if not args.json:
        measure(args.quick, lambda line: print(line, flush=True))
        return
    lines: list[str] = []
    results = measure(args.quick, lines.append)
    print(json.dumps({"lines": lines, **results}))


if __name__ == "__main__":
    main()
