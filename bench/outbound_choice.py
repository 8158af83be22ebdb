"""aiohttp's client against httpx's: small GETs per second against one local upstream.

The measurement behind the choice of the outbound HTTP client's library (bench/measurements/outbound.md,
'Calling other services'). One upstream process (a plain asyncio protocol on uvloop answering
every request with a fixed 2-byte JSON body, keep-alive) on CPU 1, the client in this process
on CPU 0 (taskset where present), each library with one shared session and `CONCURRENCY`
coroutines sending GETs for `SECONDS`, three rounds each, alternating. Prints requests/s.

    bench/.work/venv/bin/python bench/outbound_choice.py [--seconds 5] [--concurrency 16]

(bench/.work/venv is made by bench/setup.sh from bench/requirements.txt, which pins both
libraries and uvloop; httpx is not a dependency of svc.)
"""

import argparse
import asyncio
import multiprocessing
import os
import statistics
import time

ANSWER = (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}")


class Upstream(asyncio.Protocol):
    """Answers each complete request head (no bodies are sent) with ANSWER."""

    def connection_made(self, transport):
        self.transport = transport
        self.buffer = b""

    def data_received(self, data):
        self.buffer += data
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            self.buffer = self.buffer[end + 4:]
            self.transport.write(ANSWER)


def serve_upstream(port, ready):
    if hasattr(os, "sched_setaffinity") and os.cpu_count() and os.cpu_count() > 1:
        os.sched_setaffinity(0, {1})
    import uvloop

    loop = uvloop.new_event_loop()
    server = loop.run_until_complete(loop.create_server(Upstream, "127.0.0.1", port))
    ready.set()
    loop.run_until_complete(server.serve_forever())


async def drive(send, seconds, concurrency):
    count = 0
    stop = time.perf_counter() + seconds

    async def one():
        nonlocal count
        while time.perf_counter() < stop:
            await send()
            count += 1

    await asyncio.gather(*(one() for _ in range(concurrency)))
    return count / seconds


async def with_aiohttp(url, seconds, concurrency):
    import aiohttp

    connector = aiohttp.TCPConnector(limit=100, limit_per_host=100)
    async with aiohttp.ClientSession(connector=connector) as session:
        async def send():
            async with session.get(url, allow_redirects=False) as answer:
                await answer.read()

        await drive(send, 0.5, concurrency)  # warm the pool
        return await drive(send, seconds, concurrency)


async def with_httpx(url, seconds, concurrency):
    import httpx

    limits = httpx.Limits(max_connections=100, max_keepalive_connections=100)
    async with httpx.AsyncClient(limits=limits, follow_redirects=False) as client:
        async def send():
            answer = await client.get(url)
            answer.read()

        await drive(send, 0.5, concurrency)
        return await drive(send, seconds, concurrency)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--port", type=int, default=18931)
    args = parser.parse_args()
    ready = multiprocessing.Event()
    upstream = multiprocessing.Process(target=serve_upstream, args=(args.port, ready), daemon=True)
    upstream.start()
    ready.wait(10)
    if hasattr(os, "sched_setaffinity") and os.cpu_count() and os.cpu_count() > 1:
        os.sched_setaffinity(0, {0})
    import uvloop

    url = f"http://127.0.0.1:{args.port}/small"
    rates = {"aiohttp": [], "httpx": []}
    try:
        for _ in range(args.rounds):
            for name, run in (("aiohttp", with_aiohttp), ("httpx", with_httpx)):
                rate = uvloop.run(run(url, args.seconds, args.concurrency))
                rates[name].append(rate)
                print(f"{name:8} {rate:9.0f} req/s", flush=True)
    finally:
        upstream.terminate()
    for name, values in rates.items():
        print(f"{name:8} median {statistics.median(values):9.0f} req/s over {len(values)} rounds "
              f"of {args.seconds:g} s, {args.concurrency} concurrent")


if __name__ == "__main__":
    main()
