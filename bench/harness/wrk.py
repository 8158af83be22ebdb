"""Runs wrk pinned to the client CPU and parses what it prints."""

import re
import subprocess
from dataclasses import dataclass

from harness.servers import BENCH, CLIENT_CPU, client_command

UNIT_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}


@dataclass(frozen=True)
class Case:
    """One load case: a path and, for requests wrk cannot express by URL, a Lua script."""

    name: str
    path: str
    script: str | None = None


CASES = [
    Case("GET /health", "/health"),
    Case("GET /small", "/small"),
    Case("POST /echo 5 B name", "/echo", "echo_small.lua"),
    Case("POST /echo 4 KiB name", "/echo", "echo_4k.lua"),
    Case("GET /query", "/query?limit=5&name=x"),
    Case("GET /users/{id}", "/", "users.lua"),
]


@dataclass(frozen=True)
class WrkResult:
    requests_per_s: float
    p50_ms: float
    p99_ms: float
    requests: int
    errors: int  # socket errors plus non-2xx/3xx answers
    error_detail: str


def duration_ms(text: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text)
    if not match:
        raise ValueError(f"unparsable wrk duration {text!r}")
    return float(match.group(1)) * UNIT_MS[match.group(2)]


def parse(output: str) -> WrkResult:
    """Reads the numbers out of `wrk --latency` output; fails loudly on anything unexpected."""
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))
    p50 = duration_ms(re.search(r"^\s+50%\s+(\S+)", output, re.M).group(1))
    p99 = duration_ms(re.search(r"^\s+99%\s+(\S+)", output, re.M).group(1))
    requests = int(re.search(r"(\d+) requests in", output).group(1))
    errors, detail = 0, []
    socket_errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output)
    if socket_errors:
        errors += sum(int(n) for n in socket_errors.groups())
        detail.append(socket_errors.group(0))
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    if non_2xx:
        errors += int(non_2xx.group(1))
        detail.append(non_2xx.group(0))
    return WrkResult(rps, p50, p99, requests, errors, "; ".join(detail))


def run(url_base: str, case: Case, seconds: float, connections: int = 64,
        cpus: str = CLIENT_CPU, threads: int = 1) -> WrkResult:
    """One wrk run of `case` for `seconds` with `connections` on `threads` threads (one unless
    asked), pinned to `cpus`."""
    command = client_command(
        "wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds:g}s", "--latency", "--timeout",
        "5s", cpus=cpus,
    )
    if case.script:
        command += ["-s", str(BENCH / "lua" / case.script)]
    command.append(url_base + case.path)
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 30)
    if done.returncode != 0:
        raise RuntimeError(f"wrk failed: {done.stderr.strip() or done.stdout.strip()}")
    return parse(done.stdout)
