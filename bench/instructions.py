"""Instructions per request on svc's request paths: deterministic, unlike wall-clock time.

Drives `Connection` (the server's asyncio Protocol) in process with canned request bytes for
each case, on the event loop and with the SQLite thread of a real server, but no sockets: the
transport's `write` only counts answers. The program is bench/instructions.svc (the workload's
routes and the 0.2 paths), compiled once through the pipeline and kept as marshalled code, so
the measured process imports only the runtime.

Each case runs twice under `valgrind --tool=callgrind`, with a small and a large number of
requests after the same warm-up; the difference in instructions divided by the difference in
requests is the cost of one request, everything in the process included (parsing, routing,
binding, the handler, rendering, the loop's passes, the database thread and SQLite), and
start-up excluded. Requests go out over `--connections` connections at once (64 by default,
as `wrk -c64` in the benchmark), so database jobs are handed over in batches as under load.

    python bench/instructions.py                 # every case
    python bench/instructions.py users query     # some cases
    python bench/instructions.py --pairs         # the 0.2 paths and their neighbours, ratios
    python bench/instructions.py --no-valgrind   # µs per request instead (noisy; a sanity check)
    BENCH_DB=:memory: python bench/instructions.py transaction   # SQLite in memory, as make
                                                 # bench runs it (no fsync per commit)
    BENCH_TRACES=http://127.0.0.1:4318 OTEL_BSP_SCHEDULE_DELAY=600000 \
        python bench/instructions.py small       # with traces exported to that OTLP endpoint
                                                 # in full batches (docs/decisions/observability.md, Traces)

(`--drive CASE COUNT` is the measured process itself.)
"""

from __future__ import annotations

import argparse
import asyncio
import marshal
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROGRAM = HERE / "instructions.svc"
WORK = HERE / ".work" / "instructions"
HOST = b"Host: 127.0.0.1:8080\r\nUser-Agent: bench\r\nAccept: */*\r\n"


def _post(path: bytes, body: bytes) -> bytes:
    return (b"POST " + path + b" HTTP/1.1\r\n" + HOST + b"Content-Type: application/json\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


def _get(target: bytes, extra: bytes = b"") -> bytes:
    return b"GET " + target + b" HTTP/1.1\r\n" + HOST + extra + b"\r\n"


def _echo_body(name_length: int) -> bytes:
    """The User the benchmark's wrk scripts send (bench/lua/echo_*.lua)."""
    return b'{"id":1,"name":"' + b"alice"[:name_length].ljust(name_length, b"a") + b'","age":30}'


#: case → (request bytes, expected status line prefix)
CASES: dict[str, tuple[bytes, bytes]] = {
    "health": (_get(b"/health"), b"HTTP/1.1 200"),
    "small": (_get(b"/small"), b"HTTP/1.1 200"),
    "echo_small": (_post(b"/echo", _echo_body(5)), b"HTTP/1.1 200"),
    "echo_4k": (_post(b"/echo", _echo_body(4096)), b"HTTP/1.1 200"),
    "query": (_get(b"/query?limit=5&name=x"), b"HTTP/1.1 200"),
    "users": (_get(b"/users/7"), b"HTTP/1.1 200"),
    "headers": (_get(b"/whoami", b"X-User: ada\r\n"), b"HTTP/1.1 200"),
    "headers_plain": (_get(b"/whoami/plain", b"X-User: ada\r\n"), b"HTTP/1.1 200"),
    "response": (_get(b"/created"), b"HTTP/1.1 201"),
    "created": (_get(b"/created/one"), b"HTTP/1.1 201"),
    "created_plain": (_get(b"/created/plain"), b"HTTP/1.1 200"),
    "transaction": (_post(b"/users/7/birthday", b""), b"HTTP/1.1 204"),
    "tx_plain": (_post(b"/users/7/birthday/plain", b""), b"HTTP/1.1 204"),
    "guarded": (_get(b"/guarded", b"Authorization: Bearer ada\r\n"), b"HTTP/1.1 200"),
    "guarded_by_hand": (_get(b"/guarded/by_hand", b"Authorization: Bearer ada\r\n"),
                        b"HTTP/1.1 200"),
}
#: `make bench`'s pairs (bench/harness/wrk.py PAIRS): 0.2 case → its 0.1 neighbour.
PAIRS = {"headers": "headers_plain", "created": "created_plain", "transaction": "tx_plain",
         "guarded": "guarded_by_hand"}  # the last: a guard beside the same check by hand
WARMUP = 300


class CountingTransport:
    """Takes the answers: checks the first, counts them, wakes the driver after the last."""

    def __init__(self, driver: "Driver") -> None:
        self.driver = driver

    def write(self, data: bytes) -> None:
        self.driver.answered(data)

    def is_closing(self) -> bool:
        return False

    def get_extra_info(self, name, default=None):
        return default


class Driver:
    def __init__(self, loop, conns, request: bytes, status: bytes) -> None:
        self.loop = loop
        self.conns = conns
        self.request = request
        self.status = status
        self.remaining = 0
        self.done: asyncio.Future | None = None

    def answered(self, data: bytes) -> None:
        if not data.startswith(self.status):
            self.conns[0].app.log.flush()
            raise SystemExit(f"unexpected answer: {data[:200]!r}")
        self.remaining -= 1
        if self.remaining == 0 and self.done is not None:
            self.done.set_result(None)

    async def run(self, count: int) -> None:
        """`count` requests, one in flight per connection at a time."""
        rounds, rest = divmod(count, len(self.conns))
        for n in [len(self.conns)] * rounds + ([rest] if rest else []):
            self.remaining = n
            self.done = self.loop.create_future()
            # From a loop callback, as a transport delivers bytes: outside any Task.
            self.loop.call_soon(self.feed, n)
            await self.done
            self.done = None

    def feed(self, n: int) -> None:
        for conn in self.conns[:n]:
            conn.data_received(self.request)


def load_program(compile_now: bool = False) -> dict:
    """The compiled bench program's namespace: compiled by the run (`compile_now`, outside
    valgrind: the compiler may have changed since the last run, not only the program), then
    read from WORK by each measured process."""
    cached = WORK / "program.marshal"
    if compile_now or not cached.exists():
        from svc import pipeline

        compiled = pipeline.compile(pipeline.Target(file=str(PROGRAM)))
        if isinstance(compiled, pipeline.Failed):
            raise SystemExit(f"{PROGRAM} does not compile: {compiled.diagnostics}")
        WORK.mkdir(parents=True, exist_ok=True)
        cached.write_bytes(marshal.dumps(compiled.code))
    from svc.runner import load_namespace

    return load_namespace(marshal.loads(cached.read_bytes()))


async def drive(case: str, count: int, connections: int, db_path: str) -> float:
    """Warm up, then `count` requests of `case`; returns µs per request (wall clock)."""
    from svc.rules.contract import Route
    from svc.runtime.http import builtin_routes
    from svc.runtime.http.connection import App, Connection
    from svc.runtime.http.routing import Router
    from svc.runtime.observability.serverlog import ServerLog

    namespace = load_program()
    db = await namespace["setup"](db_path)
    routes: list[Route] = namespace["_svc_ROUTES"]
    loop = asyncio.get_running_loop()
    # A processing limit far above the server's: under valgrind everything runs ~50x slower,
    # and 64 transactions waiting on each other must not time out there.
    app = App(loop, Router(tuple(builtin_routes.ROUTES) + tuple(routes)), db, 10,
              ServerLog(quiet=os.environ.get("BENCH_LOG") is None), processing_limit=120.0)
    request, status = CASES[case]
    tracer = None
    if os.environ.get("BENCH_TRACES"):  # spans exported to this OTLP endpoint, as a server does
        from svc.runtime.observability import tracing

        os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = os.environ["BENCH_TRACES"]
        tracer = tracing.start(8080, app.log, loop, "bench")
        if tracer is None or not hasattr(tracer, "shut_down"):
            raise SystemExit(f"traces: {getattr(tracer, 'message', 'not started')}")
        app.tracer, app.every_id = tracer, True
        from svc.runtime import services

        services.use(services.Services(tracer=tracer))  # the statements' spans too
    from svc.runtime.http import server

    if hasattr(server, "settle_collector"):  # as the server does before it listens
        server.settle_collector()
    conns = [Connection(app) for _ in range(connections)]
    driver = Driver(loop, conns, request, status)
    transport = CountingTransport(driver)
    for conn in conns:
        conn.transport = transport
    await driver.run(WARMUP)
    started = time.perf_counter()
    await driver.run(count)
    elapsed = time.perf_counter() - started
    if tracer is not None:  # the spans still queued are exported (and counted) too
        await tracer.shut_down()
    from svc.runtime import db as db_module

    db_module.close_all()
    return elapsed / max(count, 1) * 1e6


def run_drive(case: str, count: int, connections: int) -> float:
    import uvloop

    if os.environ.get("BENCH_DB") == ":memory:":  # as `make bench` runs the workload
        return uvloop.run(drive(case, count, connections, ":memory:"))
    with tempfile.TemporaryDirectory() as folder:
        return uvloop.run(drive(case, count, connections, os.path.join(folder, "bench.db")))


def instructions(case: str, count: int, connections: int) -> int:
    """Total instructions of one driven process under callgrind."""
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "callgrind.out")
        env = dict(os.environ, PYTHONHASHSEED="0")
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                        sys.executable, __file__, "--drive", case, str(count),
                        "--connections", str(connections)],
                       check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        text = Path(out).read_text(errors="replace")
    match = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
    assert match, "no totals in callgrind's output"
    return int(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("cases", nargs="*", help=f"some of: {', '.join(CASES)}")
    parser.add_argument("--drive", nargs=2, metavar=("CASE", "COUNT"))
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--small", type=int, default=200, help="requests of the short run")
    parser.add_argument("--large", type=int, default=1200, help="requests of the long run")
    parser.add_argument("--no-valgrind", action="store_true")
    parser.add_argument("--pairs", action="store_true", help="the cases of PAIRS, with ratios")
    args = parser.parse_args()
    if args.drive:
        case, count = args.drive
        print(f"{run_drive(case, int(count), args.connections):.2f}")
        return
    load_program(compile_now=True)  # compile once, outside valgrind
    cases = [c for pair in PAIRS.items() for c in pair] if args.pairs else args.cases or list(CASES)
    measured = {}
    for case in cases:
        if case not in CASES:
            raise SystemExit(f"unknown case {case!r}; cases: {', '.join(CASES)}")
        if args.no_valgrind:
            best = min(run_drive(case, 20_000, args.connections) for _ in range(3))
            print(f"{case:14} {best:8.2f} µs/request (wall clock, best of 3 × 20,000)", flush=True)
            continue
        small = instructions(case, args.small, args.connections)
        large = instructions(case, args.large, args.connections)
        measured[case] = (large - small) / (args.large - args.small)
        print(f"{case:14} {measured[case]:10,.0f} instructions/request", flush=True)
    for new, old in PAIRS.items():
        if new in measured and old in measured:
            print(f"{new} / {old}: {measured[new] / measured[old]:.2f}×", flush=True)


if __name__ == "__main__":
    main()
