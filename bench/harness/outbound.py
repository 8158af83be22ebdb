"""Calling other services: an svc handler that calls a local upstream with `http_get`
(bench/outbound.svc, /proxy) beside the same library, aiohttp's client, used directly from
Python behind the smallest Python server (bench/peers/outbound_aiohttp.py), and beside svc
answering the same text without calling out (/local), the floor.

The upstream is bench/peers/bare_uvloop.py (a fixed 2-byte answer), pinned to CPU 1 with wrk;
the server under test to CPU 0, as in the main table. Per round each variant is started fresh,
in a shuffled order: a warm-up and a measured wrk run with 64 connections. CPU is the server
process's own (user + system) per request; the upstream's is not counted. Every answer is
checked to be the upstream's body first, so a variant that answered an error cannot look fast.
"""

import json
import random
import urllib.request

from harness import wrk
from harness.servers import BENCH, CLIENT_CPU, ROOT, RunningServer, ServerSpec

_PYTHON = str(ROOT / ".venv/bin/python")
UPSTREAM = ServerSpec("upstream", (_PYTHON, "bench/peers/bare_uvloop.py"), conforms=False)
#: name → (server, the path wrk loads)
VARIANTS = {
    "svc, no call (/local)": (ServerSpec(
        "svc-outbound", (str(ROOT / ".venv/bin/svcc"), "run", "bench/outbound.svc"),
        env={"SVC_LOG": "quiet"}), "/local"),
    "svc http_get (/proxy)": (ServerSpec(
        "svc-outbound", (str(ROOT / ".venv/bin/svcc"), "run", "bench/outbound.svc"),
        env={"SVC_LOG": "quiet"}), "/proxy"),
    "Python + aiohttp client": (ServerSpec(
        "aiohttp-outbound", (_PYTHON, "outbound_aiohttp.py"), cwd=BENCH / "peers",
        conforms=False), "/proxy"),
}


def _check(port: int, path: str) -> None:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as answer:
        body = json.loads(answer.read())
    if answer.status != 200 or body != "ok":
        raise RuntimeError(f"GET {path} answered {answer.status} {body!r}, not 200 \"ok\"")


def measure_variant(name: str, upstream_url: str, mode: dict, log) -> dict:
    spec, path = VARIANTS[name]
    with RunningServer(spec, {"UPSTREAM": upstream_url}) as server:
        _check(server.port, path)
        case = wrk.Case(name, path)
        wrk.run(server.url(""), case, mode["warmup"])
        before = server.cpu_seconds()
        result = wrk.run(server.url(""), case, mode["seconds"])
        cpu_us = (server.cpu_seconds() - before) * 1e6 / max(result.requests, 1)
        if result.errors:
            raise RuntimeError(f"{name}: {result.errors} errors ({result.error_detail})")
    log(f"  {name:26} {result.requests_per_s:9.0f} req/s  p50 {result.p50_ms:.2f} ms  "
        f"p99 {result.p99_ms:.2f} ms  {cpu_us:6.1f} µs CPU/request")
    return {"rps": result.requests_per_s, "p50_ms": result.p50_ms, "p99_ms": result.p99_ms,
            "cpu_us": cpu_us}


def run(mode: dict, log, incidents: list, seed: int) -> dict:
    """results[variant] = the medians over the rounds (rps, p50_ms, p99_ms, cpu_us)."""
    shuffle = random.Random(seed)
    runs: dict = {}
    with RunningServer(UPSTREAM, cpus=CLIENT_CPU) as upstream:
        for round_no in range(1, mode["rounds"] + 1):
            log(f"outbound calls round {round_no}")
            for name in shuffle.sample(list(VARIANTS), len(VARIANTS)):
                try:
                    runs.setdefault(name, []).append(
                        measure_variant(name, upstream.url(""), mode, log))
                except (RuntimeError, OSError, ValueError) as failure:
                    incidents.append(f"outbound calls round {round_no}, {name}: {failure}")
                    log(f"  INCIDENT: {failure}")
    return {name: {key: sorted(r[key] for r in rounds)[len(rounds) // 2]
                   for key in ("rps", "p50_ms", "p99_ms", "cpu_us")}
            for name, rounds in runs.items()}


def section(results: dict | None) -> list[str]:
    """The report's "Calling other services" section (bench/RESULTS.md)."""
    if not results:
        return []
    peer = results.get("Python + aiohttp client")
    lines = [
        "## Calling other services", "",
        "An svc handler calling a local upstream with `http_get` and answering its body "
        "(bench/outbound.svc `/proxy`), beside aiohttp's client used directly from Python "
        "behind a uvloop + httptools server (bench/peers/outbound_aiohttp.py), and beside svc "
        "answering the same text without a call (`/local`). The upstream is "
        "bench/peers/bare_uvloop.py on CPU 1 with wrk (64 connections); the server on CPU 0, "
        "started fresh per round in a shuffled order; medians over the rounds. CPU is the "
        "server process's user + system time per request (not the upstream's).", "",
        "| variant | req/s | p50 ms | p99 ms | CPU µs/request | req/s vs Python + aiohttp |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, value in results.items():
        versus = f"{value['rps'] / peer['rps']:.2f}" if peer and name.startswith("svc http") \
            else "—"
        lines.append(f"| {name} | {value['rps']:,.0f} | {value['p50_ms']:.2f} | "
                     f"{value['p99_ms']:.2f} | {value['cpu_us']:.1f} | {versus} |")
    return lines + [""]
