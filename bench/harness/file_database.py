"""Writes on a database file (issue 39): svc's plain write route against its reads, both on
one SQLite file, as `svc-file` (harness/servers.py) serves them in the main table's rounds.

svc opens every SQLite file with WAL and `synchronous=FULL`, so a write is answered only once
it is on disk; on `:memory:` (every other case) a write costs what a read does. The file is
made afresh, and seeded, at every start of the server (bench/.work/db/svc-file.sqlite).
"""

SERVER = "svc-file"
READS = "GET /users/{id}"
WRITES = "POST /users/{id}/birthday/plain"
TARGET = 0.25  # writes at least this fraction of the reads' requests/s (issue 39)


def ratios(summary: dict) -> tuple[float | None, float | None]:
    """(the writes' req/s ÷ the reads', the reads' CPU µs/request ÷ the writes')."""
    try:
        reads, writes = summary[SERVER][READS], summary[SERVER][WRITES]
        return writes["rps"] / reads["rps"], reads["cpu_us"] / writes["cpu_us"]
    except (KeyError, ZeroDivisionError):
        return None, None


def target_row(summary: dict) -> str:
    """The report's met/missed line (bench/RESULTS.md "Targets")."""
    by_rps, by_cpu = ratios(summary)
    verdict = "not measured" if by_rps is None else ("met" if by_rps >= TARGET else "missed")
    return (f"| {SERVER} {WRITES} ≥ {TARGET:.2f}× {READS} (one SQLite file) "
            f"| {_times(by_rps)} | {verdict} | {_times(by_cpu)} |")


def section(summary: dict) -> list[str]:
    """The report's "Writes on a database file" section; nothing when svc-file did not run."""
    measured = summary.get(SERVER, {})
    if READS not in measured and WRITES not in measured:
        return []
    lines = [
        "## Writes on a database file", "",
        f"`{SERVER}`: examples/workload/workload.svc served by svc as in the table above, but "
        "on an SQLite file instead of `:memory:` (WAL and `synchronous=FULL`, as svc opens "
        "every file: an answered write survives a power cut), made afresh at every start, in "
        "the same rounds and shuffled order as the other servers. Writes: "
        f"{WRITES} (two UPDATEs of the same row, each committed on its own, ids 1 to 1,000 in "
        f"turn); reads: {READS}, on the same server.", "",
        "| case | req/s (median) | min–max | p50 ms | p99 ms | CPU µs/req | errors |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for case in (READS, WRITES):
        s = measured.get(case)
        if s is None:
            lines.append(f"| {case} | — | — | — | — | — | — |")
            continue
        lines.append(f"| {case} | {s['rps']:,.0f} | {s['rps_min']:,.0f}–{s['rps_max']:,.0f} "
                     f"| {s['p50_ms']:.2f} | {s['p99_ms']:.2f} | {s['cpu_us']:.1f} "
                     f"| {s['errors']} |")
    by_rps, by_cpu = ratios(summary)
    lines += ["", f"Writes ÷ reads: {_times(by_rps)} by requests/s, {_times(by_cpu)} by CPU "
              "time per request (reads' ÷ writes'); the target is "
              f"{TARGET:.2f}× by requests/s.", ""]
    return lines


def _times(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}×"
