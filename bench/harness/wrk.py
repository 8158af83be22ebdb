"""Runs wrk pinned to the client CPU and parses what it prints."""

import re
import subprocess
from dataclasses import dataclass

from harness.servers import BENCH, CLIENT_CPU, client_command

UNIT_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}


@dataclass(frozen=True)
class Case:
    """One load case: a path and, for requests wrk cannot express by URL, a Lua script;
    header lines wrk adds to every request; whether only svc has the route."""

    name: str
    path: str
    script: str | None = None
    headers: tuple[str, ...] = ()
    svc_only: bool = False


CASES = [
    Case("GET /health", "/health"),
    Case("GET /small", "/small"),
    Case("POST /echo 5 B name", "/echo", "echo_small.lua"),
    Case("POST /echo 4 KiB name", "/echo", "echo_4k.lua"),
    Case("GET /query", "/query?limit=5&name=x"),
    Case("GET /users/{id}", "/", "users.lua"),
]

#: Issue 39's mixed case: 1 request in 10 a transaction of three statements, the rest reads.
MIXED_TX = "mixed, 1 in 10 POST /users/{id}/touch (tx of 3)"
MIXED_PLAIN = "mixed, 1 in 10 POST /users/{id}/touch/plain"

#: The 0.2 paths (and issue 39's mixed case), svc only (examples/workload/workload.svc), each
#: beside a neighbour that does the same work without the feature: (case, neighbour case, why
#: it is fair).
#: Both cases of a pair send the same request bytes where the 0.2 feature reads them.
_WHO = ("X-User: ada",)
PAIRS = [
    (Case("GET /whoami (Headers)", "/whoami", headers=_WHO, svc_only=True),
     Case("GET /whoami/plain", "/whoami/plain", headers=_WHO, svc_only=True),
     "the same request (its X-User header included) and the same JSON answer "
     "{\"user\":\"ada\"}; only the neighbour has the value as a constant instead of a "
     "`Headers` parameter and `header(h, \"x-user\")`"),
    (Case("GET /guarded (a guard)", "/guarded", headers=("Authorization: ada",), svc_only=True),
     Case("GET /guarded/by_hand", "/guarded/by_hand", headers=("Authorization: ada",),
          svc_only=True),
     "the same request (its Authorization header included) and the same JSON answer "
     "{\"user\":\"ada\"}; the 0.3 route runs `signed_in` as a guard (`@guard`) and gets "
     "its value as a parameter, the neighbour calls `signed_in(h)` itself in the handler"),
    (Case("GET /created (Response 201)", "/created", svc_only=True),
     Case("GET /created/plain", "/created/plain", svc_only=True),
     "the same User body; the 0.2 handler returns it in a `Response` with status 201 and a "
     "`Location` field (`respond`, `set_header`), the neighbour returns it plainly (200)"),
    (Case("POST /users/{id}/birthday (tx of 2)", "/birthday", "users_post.lua", svc_only=True),
     Case("POST /users/{id}/birthday/plain", "/birthday/plain", "users_post.lua", svc_only=True),
     "the same two UPDATEs of the same rows (ids 1 to 1,000 in turn), once inside "
     "`db_begin`/`db_commit` and once as two statements each committed on its own"),
    (Case(MIXED_TX, "/touch", "users_mixed.lua", svc_only=True),
     Case(MIXED_PLAIN, "/touch/plain", "users_mixed.lua", svc_only=True),
     "the same requests in the same order (ids 1 to 1,000 in turn, every tenth a POST, the "
     "other nine GET /users/{id}); the POST runs the same three statements on its row (a "
     "year on, the row read back, the year off), once inside `db_begin`/`db_commit` and once "
     "each committed on its own"),
]
PAIR_CASES = [case for pair in PAIRS for case in pair[:2]]


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
    for header in case.headers:
        command += ["-H", header]
    if case.script:
        command += ["-s", str(BENCH / "lua" / case.script)]
    command.append(url_base + case.path)
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 30)
    if done.returncode != 0:
        raise RuntimeError(f"wrk failed: {done.stderr.strip() or done.stdout.strip()}")
    return parse(done.stdout)
