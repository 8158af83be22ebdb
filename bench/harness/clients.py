"""Load clients that wrk cannot play: many simultaneous connections, and slow clients.

Run as a subprocess pinned to the client CPU; each subcommand prints JSON lines on stdout.
  connections PORT COUNT   open COUNT connections, one GET /health on each, hold them until a
                           line arrives on stdin, then close them all.
  slow PORT IDLE DRIP WAIT open IDLE silent connections and DRIP connections that send one
                           header line a second and never finish; report when the server
                           closes each one (giving up WAIT seconds after the last opened).
"""

import asyncio
import json
import resource
import statistics
import sys
import time

import uvloop

REQUEST = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
CONNECTING_AT_ONCE = 1000  # connects in flight; more only overflows the listen backlog


def emit(**fields) -> None:
    print(json.dumps(fields), flush=True)


class HealthClient(asyncio.Protocol):
    """Sends one GET /health and resolves `answered` once a full 200 `ok` has arrived."""

    def __init__(self, answered: asyncio.Future):
        self.answered = answered
        self.buffer = b""
        self.closed_by_peer = False

    def connection_made(self, transport):
        transport.write(REQUEST)

    def data_received(self, data):
        self.buffer += data
        if not self.answered.done() and self.buffer.endswith(b"\r\n\r\nok"):
            self.answered.set_result(self.buffer.startswith(b"HTTP/1.1 200 "))

    def connection_lost(self, exc):
        self.closed_by_peer = True
        if not self.answered.done():
            self.answered.set_result(False)


async def open_and_ask(port: int, gate: asyncio.Semaphore):
    loop = asyncio.get_running_loop()
    async with gate:
        answered = loop.create_future()
        try:
            transport, _ = await loop.create_connection(lambda: HealthClient(answered), "127.0.0.1", port)
        except OSError:
            return None
        ok = await asyncio.wait_for(answered, 30)
        return transport if ok else None


async def connections(port: int, count: int) -> None:
    gate = asyncio.Semaphore(CONNECTING_AT_ONCE)
    started = time.monotonic()
    transports = await asyncio.gather(*(open_and_ask(port, gate) for _ in range(count)), return_exceptions=True)
    elapsed = time.monotonic() - started
    held = [t for t in transports if t is not None and not isinstance(t, BaseException)]
    emit(answered=len(held), failed=count - len(held), seconds=round(elapsed, 3))
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    for transport in held:
        transport.close()
    await asyncio.sleep(0.5)
    emit(closed=len(held))


class SlowClient(asyncio.Protocol):
    """A connection that never completes its request headers; notes when the server hangs up."""

    def __init__(self, drip: bool):
        self.drip = drip
        self.opened = time.monotonic()
        self.closed_after: float | None = None
        self.transport = None

    def connection_made(self, transport):
        self.transport = transport
        if self.drip:
            transport.write(b"GET /small HTTP/1.1\r\nHost: 127.0.0.1\r\n")

    def connection_lost(self, exc):
        self.closed_after = time.monotonic() - self.opened

    def drip_once(self) -> None:
        if self.closed_after is None and self.drip:
            self.transport.write(b"X-Drip: a\r\n")


def close_stats(clients: list[SlowClient]) -> dict:
    times = [c.closed_after for c in clients if c.closed_after is not None]
    if not times:
        return {"count": len(clients), "closed": 0}
    return {
        "count": len(clients),
        "closed": len(times),
        "min_s": round(min(times), 2),
        "median_s": round(statistics.median(times), 2),
        "max_s": round(max(times), 2),
    }


async def slow(port: int, idle: int, drip: int, wait: float) -> None:
    loop = asyncio.get_running_loop()
    clients = [SlowClient(drip=i >= idle) for i in range(idle + drip)]
    for client in clients:
        client.opened = time.monotonic()
        await loop.create_connection(lambda c=client: c, "127.0.0.1", port)
    emit(ready=len(clients))
    give_up = time.monotonic() + wait
    while time.monotonic() < give_up and any(c.closed_after is None for c in clients):
        await asyncio.sleep(1.0)
        for client in clients:
            client.drip_once()
    emit(idle=close_stats(clients[:idle]), drip=close_stats(clients[idle:]))
    for client in clients:
        client.transport.close()


def main(argv: list[str]) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    command, port, *numbers = argv
    if command == "connections":
        uvloop.run(connections(int(port), int(numbers[0])))
    elif command == "slow":
        uvloop.run(slow(int(port), int(numbers[0]), int(numbers[1]), float(numbers[2])))
    else:
        raise SystemExit(f"unknown client command {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
