"""Topics (svc.runtime.topics): publish-to-receive latency between two processes, on PostgreSQL
and on SQLite, and how many publishes a second reach 1, 1,000 and 10,000 local subscribers.

Not a test: a bounded measurement for the report, which stops by itself (fixed counts, every
wait bounded):

    .venv/bin/python bench/topics.py                  # a private PostgreSQL cluster is made
    .venv/bin/python bench/topics.py --postgres URL   # or an existing database is used
    .venv/bin/python bench/topics.py --quick          # fewer messages, to try it

Latency: a receiver process subscribes; this process publishes one message every 2 ms, each
carrying the time it was published (CLOCK_MONOTONIC, which every process on the machine
shares); the receiver records when it got each. Then a burst: messages published as fast as
`publish` goes, yielding to the loop every 64 (as a busy server would between requests); how
many arrived, and how long after the burst began the last one did. Local fan-out: N subscriptions each read by a task of its own, as stream
handlers would; the time from the first publish until every reader has every message.
Event loops are svc's own (uvloop where installed), as a server runs them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.helpers, for a private cluster
sys.path.insert(0, str(REPO / "src"))

from svc.process import run  # noqa: E402
from harness.measured import lines_results, lines_section  # noqa: E402  (bench/ is on sys.path)
from svc.runtime.db import close_all, db_open  # noqa: E402
from svc.runtime.topics import Topics, start_topics  # noqa: E402

#: Seconds between two timed publishes.
PACE = 0.002


async def started(database: str) -> Topics:
    db = await db_open(database)
    if not hasattr(db, "dialect"):
        raise SystemExit(f"cannot open {database}: {db}")
    topics = await start_topics(db)
    if not isinstance(topics, Topics):
        raise SystemExit(f"cannot start topics on {database}: {topics}")
    return topics


# --- the receiving process --------------------------------------------------------------------

async def receive(database: str, timed: int, burst: int) -> None:
    """Subscribe, say so on stdout, then report the latencies (ns) of `timed` messages and how
    many of the `burst` arrived, and in how long."""
    topics = await started(database)
    sub = await topics.subscribe("bench")
    print("ready", flush=True)
    latencies = []
    try:
        while len(latencies) < timed:
            payload = await asyncio.wait_for(sub.next(), 10)
            latencies.append(time.monotonic_ns() - json.loads(payload)["at"])
        began = last = 0
        got = 0

        async def count() -> None:  # reads as a stream handler does: all that is queued
            nonlocal began, last, got
            async for payload in sub:
                last = time.monotonic_ns()
                began = began or json.loads(payload)["at"]  # when the burst's publishing began
                got += 1
                if got == burst:
                    return

        counting = asyncio.ensure_future(count())
        seen = -1
        while got < burst and got != seen:  # until all came, or none for 2 s (the rest lost)
            seen = got
            await asyncio.wait([counting], timeout=2)
        counting.cancel()
    finally:
        print(json.dumps({"latencies": latencies, "burst_got": got,
                          "burst_seconds": (last - began) / 1e9 if got else 0.0}), flush=True)
        topics.stop()
        close_all()


# --- the publishing process (this one) ----------------------------------------------------------

async def publish(database: str, timed: int, burst: int) -> dict:
    topics = await started(database)
    receiver = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--receive", database, str(timed), str(burst),
        stdout=asyncio.subprocess.PIPE)
    assert receiver.stdout is not None
    try:
        line = await asyncio.wait_for(receiver.stdout.readline(), 30)
        if line.strip() != b"ready":
            raise SystemExit(f"the receiver did not start: {line!r}")
        for n in range(timed):
            topics.publish("bench", json.dumps({"n": n, "at": time.monotonic_ns()}).encode())
            await asyncio.sleep(PACE)
        await asyncio.sleep(0.5)  # the last timed ones arrive before the burst begins
        sent_at = time.perf_counter()
        began = time.monotonic_ns()
        for n in range(burst):
            topics.publish("bench", b'{"n": %d, "at": %d}' % (n, began))
            if n % 64 == 63:
                await asyncio.sleep(0)
        publish_seconds = time.perf_counter() - sent_at
        report = json.loads(await asyncio.wait_for(receiver.stdout.readline(), 60))
    finally:
        if receiver.returncode is None:
            await asyncio.wait_for(receiver.wait(), 30)
        dropped = topics.dropped()
        topics.stop()
        close_all()
    report["publish_seconds"] = publish_seconds
    report["not_sent"] = dropped["not_sent"]
    return report


def latency_line(name: str, report: dict, burst: int) -> str:
    ms = sorted(ns / 1e6 for ns in report["latencies"])
    p50 = statistics.median(ms)
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    rate = report["burst_got"] / report["burst_seconds"] if report["burst_seconds"] else 0
    return (f"{name:<11} latency p50 {p50:6.2f} ms  p99 {p99:6.2f} ms  max {ms[-1]:6.2f} ms "
            f"({len(ms)} messages, one per {PACE * 1000:.0f} ms)\n"
            f"{'':<11} burst of {burst:,}: {report['burst_got']:,} arrived "
            f"({report['not_sent']:,} not sent), the last {report['burst_seconds'] * 1000:.0f} "
            f"ms after the first publish: {rate:,.0f} messages/s; publishing them took "
            f"{report['publish_seconds'] * 1000:.0f} ms")


# --- local fan-out ------------------------------------------------------------------------------

async def local(subscribers: int, messages: int) -> str:
    topics = await started(":memory:")
    subs = [await topics.subscribe("bench") for _ in range(subscribers)]
    done = asyncio.get_running_loop().create_future()
    remaining = [subscribers]

    async def read(sub) -> None:
        for _ in range(messages):
            await sub.next()
        remaining[0] -= 1
        if not remaining[0]:
            done.set_result(None)

    readers = [asyncio.ensure_future(read(sub)) for sub in subs]
    await asyncio.sleep(0)
    payload = b'{"text": "a typical small event, about sixty bytes of JSON"}'
    wall, cpu = time.perf_counter(), time.process_time()
    for n in range(messages):
        topics.publish("bench", payload)
        if n % 64 == 63:
            await asyncio.sleep(0)  # the readers run, as they would between requests
    await asyncio.wait_for(done, 120)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    await asyncio.gather(*readers)
    dropped = topics.hub.dropped
    topics.stop()
    close_all()
    return (f"{subscribers:>6,} subscribers: {messages / wall:>10,.0f} publishes/s, "
            f"{messages * subscribers / wall:>12,.0f} deliveries/s "
            f"({messages:,} publishes in {wall:.2f} s, {cpu:.2f} CPU s; {dropped} dropped)")


def measure(quick: bool, postgres: str | None, say) -> None:
    """Every case, each result line given to `say` as soon as it is known."""
    timed, burst = (200, 2_000) if quick else (1_000, 20_000)
    scale = 10 if quick else 1
    say(f"svc topics, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    for subscribers, messages in ((1, 100_000), (1_000, 1_000), (10_000, 200)):
        say(run(local(subscribers, max(messages // scale, 20))))
    with tempfile.TemporaryDirectory() as folder:
        sqlite = str(Path(folder) / "bench.sqlite")
        say(latency_line("SQLite", run(publish(sqlite, timed, burst)), burst))
    cluster = None
    url = postgres
    if url is None:
        from tests.helpers.postgres import start_cluster

        cluster = start_cluster()
        url = cluster.url()
    try:
        say(latency_line("PostgreSQL", run(publish(url, timed, burst)), burst))
    finally:
        if cluster is not None:
            cluster.remove()


# --- in `make bench` (bench/run.py, bench/harness/report.py) ---------------------------------------

def run_section(mode: dict, log, incidents: list) -> dict | None:
    """The cases in a process of their own (`--json`; a quick run has the quick counts)."""
    return lines_results("topics", Path(__file__).resolve(), mode, log, incidents)


def section(results: dict | None) -> list[str]:
    """The report's "Topics" section: the script's own lines."""
    return lines_section("Topics", (
        "svc.runtime.topics on its own (what `publish` and `subscribe` run on): local fan-out "
        "to 1, 1,000 and 10,000 subscribers, and publish-to-receive latency between two "
        "processes on SQLite and on PostgreSQL (bench/topics.py)."), results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", help="a PostgreSQL database URL (else a private cluster)")
    parser.add_argument("--quick", action="store_true", help="fewer messages")
    parser.add_argument("--json", action="store_true", help="print the lines as one JSON object")
    parser.add_argument("--receive", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.receive:
        database, timed, burst = args.receive
        run(receive(database, int(timed), int(burst)))
        return
    if not args.json:
        measure(args.quick, args.postgres, lambda line: print(line, flush=True))
        return
    lines: list[str] = []
    measure(args.quick, args.postgres, lines.append)
    print(json.dumps({"lines": lines}))


if __name__ == "__main__":
    main()
