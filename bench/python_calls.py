"""The cost of one `@python` call (svc.runtime.lib.python_calls) against the same call from
plain Python: microseconds per call, in-process on uvloop, no server and no sockets.

Blocking (a plain `def`, here `html.escape`, run on the pool's threads):
- plain Python, a direct call (the floor: no thread at all);
- plain Python, `await loop.run_in_executor(pool, ...)` on a ThreadPoolExecutor of the same size
  (what a Python server would write to keep the loop free);
- svc, the function `python_calls.function(...)` makes (argument and result conversion, the
  hand-off to its pool and back).
Awaited (a coroutine function, here `asyncio.sleep(0)`, one pass of the loop):
- plain Python, `await asyncio.sleep(0)`;
- svc, through `function(...)`.

Each is timed one call after another (the latency of a call: a thread's wake-up is most of a
blocking one's) and, for the blocking ones, 100 at a time (`asyncio.gather`: the pool's
throughput). Medians of REPEATS runs of CALLS calls. `make bench` runs it pinned to CPU 0 as
it pins the servers, and puts its table into bench/RESULTS.md ("Python functions");
`python bench/python_calls.py` prints it.
"""

from __future__ import annotations

import asyncio
import html
import json
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import uvloop

from harness.measured import json_results  # bench/ is on sys.path, as for run.py

from svc.rules.settings import Settings
from svc.runtime import services
from svc.runtime.lib import python_calls
from svc.runtime.lib.support import T_F64, T_STR

CALLS = 20_000
REPEATS = 5
BATCH = 100
TEXT = "<b>Fish & chips</b>"
THREADS = python_calls.default_threads()


def _per_call(seconds: float, calls: int) -> float:
    return seconds * 1e6 / calls


async def _timed(call, calls: int, batch: int) -> float:
    """Microseconds per call of `calls` calls of `call()`, `batch` at a time."""
    started = time.perf_counter()
    if batch == 1:
        for _ in range(calls):
            await call()
    else:
        for _ in range(calls // batch):
            await asyncio.gather(*[call() for _ in range(batch)])
    return _per_call(time.perf_counter() - started, calls)


async def _variants(calls: int) -> dict[str, float]:
    loop = asyncio.get_running_loop()
    pool = ThreadPoolExecutor(THREADS)
    escape = python_calls.function("escape", "html", "escape", "internal", (T_STR,), T_STR,
                                   "bench.svc:1")
    nap = python_calls.function("nap", "asyncio", "sleep", "internal", (T_F64,), None,
                                "bench.svc:4")

    async def direct():
        return html.escape(TEXT)

    async def executor():
        return await loop.run_in_executor(pool, html.escape, TEXT)

    async def svc_blocking():
        return await escape(TEXT)

    async def plain_await():
        return await asyncio.sleep(0)

    async def svc_awaited():
        return await nap(0.0)

    variants = {
        "blocking: plain Python, direct call": (direct, 1),
        "blocking: plain Python, run_in_executor": (executor, 1),
        "blocking: svc @python on its pool": (svc_blocking, 1),
        f"blocking, {BATCH} at a time: plain Python, run_in_executor": (executor, BATCH),
        f"blocking, {BATCH} at a time: svc @python on its pool": (svc_blocking, BATCH),
        "awaited: plain Python, await": (plain_await, 1),
        "awaited: svc @python": (svc_awaited, 1),
    }
    assert await svc_blocking() == await executor() == html.escape(TEXT)
    for call, batch in variants.values():  # warm: threads started, caches filled
        await _timed(call, 1_000, batch)
    runs: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(REPEATS):
        for name, (call, batch) in variants.items():
            runs[name].append(await _timed(call, calls, batch))
    pool.shutdown()
    return {name: round(statistics.median(times), 2) for name, times in runs.items()}


def measure(calls: int = CALLS) -> dict[str, float]:
    """Microseconds per call of each variant (medians), measured in this process."""
    async def main():
        with services.running(services.Services(Settings(python_threads=THREADS))):
            return await _variants(calls)
    try:
        return uvloop.run(main())
    finally:
        python_calls.stop_pool()


# --- in `make bench` (bench/run.py, bench/harness/report.py) ---------------------------------------

def run(mode: dict, log, incidents: list) -> dict | None:
    """Measured in a process of its own pinned to CPU 0, as the servers are."""
    calls = CALLS if mode.get("rounds", 1) > 1 else CALLS // 4
    command = ["taskset", "-c", "0", sys.executable, str(Path(__file__).resolve()), "--json",
               str(calls)]
    results = json_results("python functions", command, log, incidents)
    if results is None:
        return None
    for name, micros in results.items():
        log(f"  {name:60} {micros:8.2f} µs/call")
    return results


def section(results: dict | None) -> list[str]:
    """The report's "Python functions" section."""
    if not results:
        return []
    return ["## Python functions", "",
            "One `@python` call (svc.runtime.lib.python_calls) against the same call from plain "
            f"Python, in one process pinned to CPU 0, on uvloop: `html.escape` as the blocking "
            "function (on a pool of "
            f"{THREADS} threads), `asyncio.sleep(0)` as the awaited one; medians of "
            f"{REPEATS} runs (bench/python_calls.py).", "",
            *table(results), ""]


def table(results: dict[str, float]) -> list[str]:
    lines = ["| variant | µs per call |", "|---|---:|"]
    lines += [f"| {name} | {micros:.2f} |" for name, micros in results.items()]
    return lines


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--json":
        print(json.dumps(measure(int(sys.argv[2]) if len(sys.argv) > 2 else CALLS)))
    else:
        print("\n".join(table(measure())))
