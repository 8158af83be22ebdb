"""Logs and metrics on vs off: the CPU one request costs the server with JSON access lines,
Prometheus metrics, both, and text lines (the default a terminal gets), against the quiet
server the other sections measure (`SVC_LOG=quiet`, no metrics).

Same program, cases and conditions as the main table (examples/workload/workload.svc, server
on CPU 0, wrk on CPU 1, 64 connections): per round, each variant is started fresh, in a
shuffled order, and runs /small and /users/{id}, the cases the issue judges. The log goes to a
file, as it would in production behind a collector; it is checked to hold one line per request
wrk made, and the metrics endpoint is scraped at the end to check it counted them, so a variant
that silently logged or counted nothing cannot look cheap.
"""

import json
import random
import statistics
import urllib.request

from harness import wrk
from harness.servers import LOGS, SPECS, RunningServer, free_port

CASES = [case for case in wrk.CASES if case.name in ("GET /small", "GET /users/{id}")]
#: The variants differ by a few percent, and a fresh server's CPU per request moves by up to
#: ±10% from one start to the next, nearly all of it kernel time (loopback TCP, two thirds of
#: a small request's CPU: ~6.0 or ~7.5 µs on /small, whichever a start gets): three times
#: the main table's rounds, shorter, and their median; user time is shown apart.
ROUNDS_FACTOR = 3
LONGEST_RUN = 5  # seconds measured per case and round
#: name → (environment, access lines written, metrics on)
VARIANTS = {
    "quiet (the table above)": ({"SVC_LOG": "quiet"}, False, False),
    "text lines (the default)": ({"SVC_LOG": ""}, True, False),
    "JSON lines": ({"SVC_LOG": "", "SVC_LOG_FORMAT": "json"}, True, False),
    "metrics": ({"SVC_LOG": "quiet"}, False, True),
    "JSON lines + metrics": ({"SVC_LOG": "", "SVC_LOG_FORMAT": "json"}, True, True),
}


def _scraped_requests(port: int) -> int:
    """svc_http_requests_total summed over its labels, from the metrics endpoint."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    return int(sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith("svc_http_requests_total{")))


def measure_variant(name: str, mode: dict, order: list, log) -> dict:
    env, lines_on, metrics_on = VARIANTS[name]
    env = dict(env)
    metrics_port = free_port() if metrics_on else None
    if metrics_port:
        env["SVC_METRICS_PORT"] = str(metrics_port)
    (LOGS / "svc.log").unlink(missing_ok=True)
    measured, sent = {}, 0
    with RunningServer(SPECS["svc"], env) as server:
        for case in order:
            sent += wrk.run(server.url(""), case, mode["warmup"]).requests
            user_before, kernel_before = server.cpu_split()
            result = wrk.run(server.url(""), case, mode["seconds"])
            sent += result.requests
            user, kernel = server.cpu_split()
            per_request = 1e6 / max(result.requests, 1)
            user_us = (user - user_before) * per_request
            cpu_us = user_us + (kernel - kernel_before) * per_request
            measured[case.name] = {"rps": result.requests_per_s, "cpu_us": cpu_us,
                                   "user_us": user_us}
            log(f"  {name:26} {case.name:18} {result.requests_per_s:9.0f} req/s  "
                f"{cpu_us:6.2f} µs CPU/request ({user_us:5.2f} user)")
        counted = _scraped_requests(metrics_port) if metrics_port else None
    logged = _count_access_lines(LOGS / "svc.log") if lines_on else None
    # wrk counts the answers it read: a request in flight when it stopped may be in the log
    # or the counts without being in wrk's number, never the other way round
    for what, seen in (("access lines", logged), ("metrics requests", counted)):
        if seen is not None and not sent <= seen <= sent + 64 * 2 * len(order) + 16:
            raise RuntimeError(f"{name}: {seen} {what} for {sent} requests wrk made")
    return measured


def _count_access_lines(path) -> int:
    count = 0
    with open(path, "rb") as log:
        for line in log:
            if line.startswith(b"{"):
                count += json.loads(line).get("message") == "request"
            elif line.startswith((b"GET ", b"POST ")):
                count += 1
    return count


def run(mode: dict, log, incidents: list, seed: int) -> dict:
    """results[variant][case] = median CPU µs and requests/s over the rounds."""
    shuffle = random.Random(seed)
    runs: dict = {}
    mode = dict(mode, seconds=min(mode["seconds"], LONGEST_RUN))
    for round_no in range(1, mode["rounds"] * ROUNDS_FACTOR + 1):
        log(f"logs and metrics round {round_no}")
        for name in shuffle.sample(list(VARIANTS), len(VARIANTS)):
            try:
                measured = measure_variant(name, mode, shuffle.sample(CASES, len(CASES)), log)
            except (RuntimeError, OSError, ValueError) as failure:
                incidents.append(f"logs and metrics round {round_no}, {name}: {failure}")
                log(f"  INCIDENT: {failure}")
                continue
            for case, values in measured.items():
                runs.setdefault(name, {}).setdefault(case, []).append(values)
    return {name: {case: {key: statistics.median(r.get(key, 0.0) for r in rounds)
                          for key in ("rps", "cpu_us", "user_us")}
                   for case, rounds in by_case.items()}
            for name, by_case in runs.items()}


def section(results: dict | None) -> list[str]:
    """The report's "Logs and metrics on vs off" section (bench/RESULTS.md)."""
    if not results:
        return []
    base = results.get(QUIET, {})
    lines = [
        "## Logs and metrics on vs off", "",
        "examples/workload/workload.svc served by svc on CPU 0, wrk on CPU 1 with 64 "
        "connections, the access log to a file (`SVC_LOG_FORMAT=json` or the text default), "
        "metrics with `SVC_METRICS_PORT`; each variant started fresh per round in a shuffled "
        "order, for three times the main table's rounds of at most 5 s; medians over the "
        "rounds. CPU is the server process's user + system time over the measured run divided "
        "by the requests wrk counted; user is its share in user space, where the log and the "
        "counts run (the rest is the kernel's TCP work, the same in every variant but for "
        "noise). The log is checked to hold a line per request and the metrics endpoint to "
        "have counted them.", "",
        "| variant | " + " | ".join(f"{c.name} CPU µs/request (vs quiet) | user µs (vs quiet)"
                                   for c in CASES)
        + " | " + " | ".join(f"{c.name} req/s" for c in CASES) + " |",
        "|---|" + "---:|" * (3 * len(CASES)),
    ]
    for name, by_case in results.items():
        cells = []
        for case in CASES:
            for key in ("cpu_us", "user_us"):
                cells.append(_cell(by_case.get(case.name), base.get(case.name), key,
                                   name == QUIET))
        rates = [f"{by_case[c.name]['rps']:,.0f}" if c.name in by_case else "—" for c in CASES]
        lines.append(f"| {name} | " + " | ".join(cells + rates) + " |")
    return lines + ["", *_verdict(results, QUIET, "the quiet server"),
                    *_verdict(results, DEFAULT, "the default server (text lines, no metrics)")]


def _cell(value: dict | None, reference: dict | None, key: str, is_base: bool) -> str:
    if value is None or key not in value:
        return "—"
    if is_base or reference is None or not reference.get(key):
        return f"{value[key]:.2f}"
    return f"{value[key]:.2f} ({value[key] / reference[key] - 1:+.1%})"


QUIET = "quiet (the table above)"
DEFAULT = "text lines (the default)"
#: The issue's target: JSON lines and metrics together cost at most this much more CPU a request.
TARGET = 0.10


def _verdict(results: dict, base_name: str, base_text: str) -> list[str]:
    """One line: JSON lines with metrics against `base_name`, case by case, and whether the
    target holds."""
    both, base = results.get("JSON lines + metrics", {}), results.get(base_name, {})
    overheads = {case.name: both[case.name]["cpu_us"] / base[case.name]["cpu_us"] - 1
                 for case in CASES if case.name in both and case.name in base}
    if not overheads:
        return []
    shown = ", ".join(f"{overhead:+.1%} on {name}" for name, overhead in overheads.items())
    held = all(round(overhead, 3) <= TARGET for overhead in overheads.values())  # as shown
    return [f"JSON lines with metrics against {base_text}: {shown} CPU a request; the target "
            f"(at most {TARGET:.0%}) is **{'met' if held else 'missed'}**.", ""]
