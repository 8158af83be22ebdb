"""Turns one run's results into bench/RESULTS.md, and says what failed."""

from pathlib import Path

from harness import contention, file_database, jobs, observability, outbound, scaling, wrk
from harness.machine import describe
from harness.servers import BENCH
import python_calls  # bench/python_calls.py: bench/ is on sys.path wherever the report is made
import live  # bench/live.py, likewise
import topics  # bench/topics.py, likewise
import uploads  # bench/uploads.py, likewise

#: (server, case, peer, minimum ratio server / peer): issue 39's targets for the cases it
#: names, issue 18's for the others (the 4 KiB echo, PostgreSQL, Go).
TARGETS = [
    ("svc", "GET /health", "node", 1.9),
    ("svc", "GET /small", "node", 2.0),
    ("svc", "POST /echo 5 B name", "node", 2.6),
    ("svc", "POST /echo 4 KiB name", "node", 2.0),
    ("svc", "GET /query", "node", 1.8),
    ("svc", "GET /users/{id}", "node", 1.3),
    ("svc-pg", "GET /users/{id}", "node-pg", 1.5),
    *[("svc", case.name, "go", 1.0) for case in wrk.CASES],  # ahead of Go on every case
]
#: svc's CPU µs/request at most this many times nginx's on GET /health in the same run
#: (issue 39: the physical reference, the same for every case).
REFERENCE = ("nginx", "GET /health")
CPU_VS_REFERENCE = [("GET /health", 1.2), ("GET /small", 1.2), ("POST /echo 5 B name", 1.2)]
#: svc's CPU µs/request at most this (issue 39: 0.65× of the 23.3 µs its study measured).
CPU_LIMITS_US = [("GET /users/{id}", 15.0)]
PAIR_LIMIT = 0.15  # a 0.2 path may be this much slower than its 0.1 neighbour (issue 18)
#: Pairs with a limit of their own: a guarded route within 10% of its neighbour (issue 24).
PAIR_LIMITS = {"GET /guarded (a guard)": 0.10}
#: Pairs judged by the lowest ratio of their requests/s instead (issue 39): a transaction
#: against the same statements without one, alone and as 1 request in 10.
PAIR_FLOORS = {"POST /users/{id}/birthday (tx of 2)": 0.5, wrk.MIXED_TX: 0.8}
RSS_LIMIT_MIB = 300
SOAK_RSS_GROWTH_MIB = 5  # allocator noise; a leak of even 50 bytes a request is far more
HOLD_RATIO = 0.8  # /small throughput with 1,000 slow connections open vs without
CLOSE_SLACK_S = 1
PROFILE_NOTES = BENCH / "profile_notes.md"


def command_line(quick: bool) -> str:
    return "BENCH_QUICK=1 make bench" if quick else "make bench"


def ratio(summary: dict, server: str, peer: str, case: str) -> float | None:
    try:
        return summary[server][case]["rps"] / summary[peer][case]["rps"]
    except (KeyError, ZeroDivisionError):
        return None


def cpu_ratio(summary: dict, server: str, peer: str, case: str) -> float | None:
    """How many times less CPU per request `server` needs than `peer` (higher is better)."""
    try:
        return summary[peer][case]["cpu_us"] / summary[server][case]["cpu_us"]
    except (KeyError, ZeroDivisionError):
        return None


def fmt_ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}×"


def _node_peer(server: str) -> str | None:
    """The Node server a server is compared with: node-pg for the PostgreSQL servers, none for
    svc on a file (Node serves `:memory:`)."""
    if server == file_database.SERVER:
        return None
    return "node-pg" if server.endswith("-pg") else "node"


def throughput_table(results: dict) -> list[str]:
    summary = results["summary"]
    lines = [
        "| Case | Server | req/s (median) | min–max | p50 ms | p99 ms | CPU µs/req | RSS MiB | vs Node | vs bare uvloop | errors |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for case in results["cases"]:
        measured = [s for s in results["servers"] if case in summary.get(s, {})]
        for server in sorted(measured, key=lambda s: -summary[s][case]["rps"]):
            s = summary[server][case]
            lines.append(
                f"| {case} | {server} | {s['rps']:,.0f} | {s['rps_min']:,.0f}–{s['rps_max']:,.0f} "
                f"| {s['p50_ms']:.2f} | {s['p99_ms']:.2f} | {s['cpu_us']:.1f} | {s['rss_mib']:.0f} "
                f"| {fmt_ratio(ratio(summary, server, _node_peer(server), case))} "
                f"| {fmt_ratio(ratio(summary, server, 'bare-uvloop', case))} | {s['errors']} |"
            )
    return lines


def pair_names() -> list[list[str]]:
    """[0.2 case, neighbour case, why the neighbour is fair] for each pair, as results.json
    keeps them (so --render-only renders the pairs a run measured)."""
    return [[new.name, neighbour.name, why] for new, neighbour, why in wrk.PAIRS]


def pair_ratios(summary: dict, new: str, neighbour: str) -> tuple[float | None, float | None]:
    """(req/s of the 0.2 path ÷ its neighbour's, CPU µs/req of the neighbour ÷ the 0.2 path's):
    1.0 is as fast; 0.85 is 15% slower."""
    return _pair_ratio(summary, new, neighbour, "rps"), _pair_ratio(summary, neighbour, new, "cpu_us")


def _pair_ratio(summary: dict, top: str, bottom: str, key: str) -> float | None:
    try:
        return summary["svc"][top][key] / summary["svc"][bottom][key]
    except (KeyError, ZeroDivisionError):
        return None


def pairs_section(results: dict) -> list[str]:
    """svc's 0.2 paths beside their 0.1 neighbours: both measured in the same rounds."""
    pairs = results.get("pairs") or []
    if not pairs:
        return ["Not measured in this run."]
    summary = results["summary"]
    lines = [
        "svc only (the peers do not have these routes): each 0.2 or 0.3 path, or transaction, and its "
        "neighbour run in the same rounds, in the same shuffled order as the other cases, on the "
        "same fresh server. The neighbours were chosen so that the only difference is the newer "
        "feature (or the transaction):",
        "",
        *[f"- **{new}** beside **{old}**: {why}." for new, old, why in pairs],
        "",
        "| path | req/s (median) | CPU µs/req | neighbour | req/s (median) | CPU µs/req "
        "| req/s ratio | CPU ratio (neighbour ÷ path) | errors |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for new, old, _why in pairs:
        a, b = summary.get("svc", {}).get(new), summary.get("svc", {}).get(old)
        if a is None or b is None:
            lines.append(f"| {new} | — | — | {old} | — | — | — | — | — |")
            continue
        by_rps, by_cpu = pair_ratios(summary, new, old)
        lines.append(
            f"| {new} | {a['rps']:,.0f} | {a['cpu_us']:.1f} | {old} | {b['rps']:,.0f} "
            f"| {b['cpu_us']:.1f} | {fmt_ratio(by_rps)} | {fmt_ratio(by_cpu)} "
            f"| {a['errors'] + b['errors']} |")
    return lines


def pair_target(new: str) -> tuple[float, str]:
    """(the lowest req/s ratio to its neighbour that meets the target, how the target reads):
    at least 85% of the neighbour's (90% for PAIR_LIMITS), or PAIR_FLOORS' ratio."""
    if new in PAIR_FLOORS:
        return PAIR_FLOORS[new], f"≥ {PAIR_FLOORS[new]:.1f}×"
    limit = PAIR_LIMITS.get(new, PAIR_LIMIT)
    return 1 - limit, f"within {limit:.0%} of"


def pair_target_rows(results: dict) -> list[str]:
    """One met/missed row per pair (pair_target)."""
    rows = []
    for new, old, _why in results.get("pairs") or []:
        by_rps, by_cpu = pair_ratios(results["summary"], new, old)
        floor, wording = pair_target(new)
        verdict = "not measured" if by_rps is None else ("met" if by_rps >= floor else "missed")
        rows.append(f"| svc {new} {wording} {old} | {fmt_ratio(by_rps)} "
                    f"| {verdict} | {fmt_ratio(by_cpu)} |")
    return rows


def cpu_target_rows(summary: dict) -> list[str]:
    """svc's CPU µs/request against nginx's on GET /health in the same run, and against a
    fixed bound (issue 39); these rows are judged by CPU time, not requests/s."""
    svc = summary.get("svc", {})
    reference = summary.get(REFERENCE[0], {}).get(REFERENCE[1], {}).get("cpu_us")
    rows = []
    for case, most in CPU_VS_REFERENCE:
        cpu = svc.get(case, {}).get("cpu_us")
        label = f"svc {case} CPU µs/req ≤ {most:.1f}× {REFERENCE[0]} {REFERENCE[1]}'s"
        if cpu is None or not reference:
            rows.append(f"| {label} | — | not measured | |")
            continue
        verdict = "met" if cpu <= most * reference else "missed"
        rows.append(f"| {label} | {cpu / reference:.2f}× ({cpu:.1f} vs {reference:.1f} µs) "
                    f"| {verdict} | |")
    for case, most in CPU_LIMITS_US:
        cpu = svc.get(case, {}).get("cpu_us")
        verdict = "not measured" if cpu is None else ("met" if cpu <= most else "missed")
        measured = "—" if cpu is None else f"{cpu:.1f} µs"
        rows.append(f"| svc {case} CPU µs/req ≤ {most:.0f} µs | {measured} | {verdict} | |")
    return rows


def capacity_row(endurance: dict | None) -> tuple[str, str]:
    if not endurance:
        return "not run", "missed"
    c = endurance["capacity"]
    met = c["failed"] == 0 and c["held_rss_mib"] < RSS_LIMIT_MIB
    return f"{c['answered']:,} answered, RSS {c['held_rss_mib']:.0f} MiB", "met" if met else "missed"


def targets_table(results: dict) -> list[str]:
    lines = [
        "Measured is the ratio of median requests/s (except in the rows that say CPU µs/req: "
        "there it is svc's median CPU time per request, alone or against nginx's on GET /health, "
        "lower is better); the last column, for reference, is the ratio of "
        "CPU time per request (peer ÷ svc), which the other load on a shared machine disturbs less.",
        "",
        "| Target | Measured | Result | by CPU µs/req |",
        "|---|---:|---|---:|",
    ]
    for server, case, peer, minimum in TARGETS:
        value = ratio(results["summary"], server, peer, case)
        label = f"{server} {case} ≥ {minimum:.1f}× {peer}"
        verdict = "not measured" if value is None else ("met" if value >= minimum else "missed")
        by_cpu = fmt_ratio(cpu_ratio(results["summary"], server, peer, case))
        lines.append(f"| {label} | {fmt_ratio(value)} | {verdict} | {by_cpu} |")
    lines += cpu_target_rows(results["summary"])
    lines += pair_target_rows(results)
    lines.append(file_database.target_row(results["summary"]))
    lines += scaling.target_rows(results.get("scaling"))
    measured, verdict = capacity_row(results["endurance"])
    lines.append(f"| 10,000 connections answered, RSS < {RSS_LIMIT_MIB} MiB | {measured} | {verdict} | |")
    return lines


def growth(samples: list) -> tuple[float, int]:
    """RSS and open-file change from the first sample under load to the last."""
    first, last = samples[1], samples[-1]
    return last[1] - first[1], last[2] - first[2]


def endurance_section(endurance: dict | None) -> list[str]:
    if not endurance:
        return ["Not run: the endurance server did not pass conformance or was not selected."]
    c, soak, slow = endurance["capacity"], endurance["soak"], endurance["slow"]
    rss_growth, fd_growth = growth(soak["samples"])
    samples = ", ".join(f"{t} s: {rss:.0f} MiB/{fds} fds" for t, rss, fds in soak["samples"])
    return [
        f"Server: `{endurance['server']}`.",
        "",
        f"- **{c['connections']:,} simultaneous connections**, each answered one GET /health: "
        f"{c['answered']:,} answered, {c['failed']} failed, in {c['seconds']:.2f} s. "
        f"RSS {c['base_rss_mib']:.0f} MiB before → {c['held_rss_mib']:.0f} MiB holding them → "
        f"{c['after_rss_mib']:.0f} MiB after; open files {c['base_fds']} → {c['held_fds']} → "
        f"{c['after_fds']} ({c['fd_settle_s']} s after the clients closed).",
        f"- **Soak**: {soak['seconds']} s of POST /echo (4 KiB name) on {soak['connections']} connections: "
        f"{soak['requests']:,} requests, {soak['requests_per_s']:,.0f} req/s, {soak['errors']} errors"
        f"{' (' + soak['error_detail'] + ')' if soak['errors'] else ''}. RSS change from 10 s to the end "
        f"{rss_growth:+.1f} MiB, open files {fd_growth:+d}; after the load {soak['after_fds']} open files. "
        f"Samples: {samples}.",
        f"- **Slow clients**: {slow['opened']:,} connections ({slow['idle']['count']} idle, "
        f"{slow['drip']['count']} sending one header line a second) with a {slow['deadline_s']} s wait "
        f"deadline, during {slow['deadline_s']} s of GET /small on 64 connections: "
        f"{slow['mixed_rps']:,.0f} req/s with them vs {slow['alone_rps']:,.0f} alone "
        f"({slow['mixed_rps'] / slow['alone_rps']:.0%}), errors {slow['mixed_errors']}, p99 "
        f"{slow['mixed_p99_ms']:.2f} ms. Closed by the server: idle {close_text(slow['idle'])}; "
        f"drip-feeding {close_text(slow['drip'])}.",
        "",
        "| Check | Measured | Result |",
        "|---|---|---|",
        *[f"| {name} | {measured} | {'met' if ok else 'missed'} |" for name, measured, ok in endurance_checks(endurance)],
    ]


def endurance_checks(endurance: dict) -> list[tuple[str, str, bool]]:
    """(check, measured, passed) for each capacity and endurance requirement."""
    c, soak, slow = endurance["capacity"], endurance["soak"], endurance["slow"]
    rss_growth, fd_growth = growth(soak["samples"])
    late = slow["deadline_s"] + CLOSE_SLACK_S
    closed = [slow[kind] for kind in ("idle", "drip")]
    all_closed = all(k["closed"] == k["count"] and k.get("max_s", late + 1) <= late for k in closed)
    held = slow["mixed_rps"] / slow["alone_rps"]
    return [
        ("10,000 connections: all answered", f"{c['answered']:,} of {c['connections']:,}", c["failed"] == 0),
        (f"RSS holding them < {RSS_LIMIT_MIB} MiB", f"{c['held_rss_mib']:.0f} MiB", c["held_rss_mib"] < RSS_LIMIT_MIB),
        ("open files back to baseline", f"{c['after_fds']} vs {c['base_fds']}", c["after_fds"] <= c["base_fds"]),
        ("soak: zero errors", str(soak["errors"]), soak["errors"] == 0),
        (f"soak: RSS growth ≤ {SOAK_RSS_GROWTH_MIB} MiB", f"{rss_growth:+.1f} MiB", rss_growth <= SOAK_RSS_GROWTH_MIB),
        ("soak: open files steady", f"{fd_growth:+d}", fd_growth <= 0),
        (f"slow clients: /small holds ≥ {HOLD_RATIO:.0%}", f"{held:.0%}", held >= HOLD_RATIO),
        ("slow clients: zero errors", str(slow["mixed_errors"]), slow["mixed_errors"] == 0),
        (f"slow clients: all closed by deadline + {CLOSE_SLACK_S} s",
         ", ".join(close_text(k) for k in closed), all_closed),
    ]


def close_text(stats: dict) -> str:
    if not stats["closed"]:
        return f"0 of {stats['count']}"
    return (f"{stats['closed']} of {stats['count']} after {stats['min_s']}–{stats['max_s']} s "
            f"(median {stats['median_s']} s)")


def load_lines(load: list | None) -> list[str]:
    if not load:
        return []
    return [f"- **Load average** (1, 5, 15 min) at the start: {', '.join(load[0])}; at the end: "
            f"{', '.join(load[1])} (the benchmark itself keeps about 2 busy)."]


def render(results: dict) -> str:
    settings = results["settings"]
    lines = [
        "# Benchmark results",
        "",
        f"Produced by `{results['command']}` ({results['mode']} mode) from {results['started']} to "
        f"{results['finished']} UTC; shuffle seed {results['seed']}. Regenerate with the same command.",
        "",
        "## Machine and versions",
        "",
        *[f"- **{label}**: {text}" for label, text in describe().items()],
        *load_lines(results.get("load")),
        "",
        "## Method",
        "",
        f"Each server runs alone, pinned to CPU 0 with `taskset -c 0`; `wrk -t1 -c64` runs pinned to "
        f"CPU 1. Every case: {settings['warmup']} s warm-up, then {settings['seconds']} s measured, "
        f"{settings['rounds']} round(s); in each round the servers and each server's cases run in a "
        "shuffled order and each server is started fresh. Reported: the median requests/s and the "
        "min–max across rounds, the median p50/p99 latency, the server's RSS (VmRSS of the server "
        "process) at the end of the case's last round, the server's CPU time (user + kernel, all its "
        "threads, from /proc) per request, and ratios of medians. Before any load, each "
        "server (except the fixed-response ceilings) passes `bench/conformance.py`: same JSON, status "
        "codes and strictness as `examples/workload/workload.svc`. The ceilings are `bare-uvloop` "
        "(httptools and uvloop answering fixed bytes: the limit of a Python server) and `nginx` "
        "(one process, `return 200` of the same bodies as svc's, on GET /health and GET /small only: "
        "the physical reference, bench/peers/nginx); they are references, not peers. Databases "
        "are SQLite `:memory:` "
        "with the same 1,000 seeded rows, except for `svc-pg` and `node-pg`: the same svc program "
        "and Node peer (with the `pg` package, a pool of 10 as svc's) on PostgreSQL, measured on "
        "GET /users/{id} only; the PostgreSQL cluster is private to the run, on 127.0.0.1, and "
        "pinned to CPU 0 with the server, so the database's work shares the server's core (CPU "
        "µs/req counts the server process only); and `svc-file`: the same svc program on an SQLite "
        "file, on GET /users/{id} and its plain writes (\"Writes on a database file\" below). "
        "svc runs with `SVC_LOG=quiet` (no access log), as uvicorn runs with `--no-access-log`; the "
        "other peers log nothing per request. The \"Every core\" section below is the exception: "
        "there the servers and wrk share both CPUs, as it says.",
        "",
        "## Throughput and latency",
        "",
        *throughput_table(results),
        "",
        "## Targets",
        "",
        *targets_table(results),
        "",
        "## 0.2 and 0.3 paths, and transactions, beside their neighbours",
        "",
        *pairs_section(results),
        "",
        *file_database.section(results["summary"]),
        "## Capacity and endurance",
        "",
        *endurance_section(results["endurance"]),
        "",
        *scaling.section(results.get("scaling")),
        *jobs.section(results.get("jobs")),
        *contention.section(results.get("contention")),
        *observability.section(results.get("observability")),
        *outbound.section(results.get("outbound")),
        *python_calls.section(results.get("python_calls")),
        *uploads.section(results.get("uploads")),
        *topics.section(results.get("topics")),
        *live.section(results.get("live")),
    ]
    if results["incidents"]:
        lines += ["## Incidents", ""] + [f"- {incident}" for incident in results["incidents"]] + [""]
    if results["excluded"]:
        lines += ["## Not measured", ""]
        lines += [f"- `{name}`: {'; '.join(p[:300] for p in problems[:3])}" for name, problems in results["excluded"].items()]
        lines.append("")
    if PROFILE_NOTES.exists():
        lines += [PROFILE_NOTES.read_text().rstrip(), ""]
    return "\n".join(lines)


def failures(results: dict) -> list[str]:
    """What makes the run fail (targets are reported, not enforced): errors, exclusions, leaks."""
    found = [f"{name} excluded" for name in results["excluded"]] + results["incidents"]
    for server, by_case in results["summary"].items():
        found += [f"{server} {case}: {s['errors']} errors" for case, s in by_case.items() if s["errors"]]
    if results["endurance"]:
        found += [f"{name}: {measured}" for name, measured, ok in endurance_checks(results["endurance"]) if not ok]
    for case, by_count in (results.get("scaling") or {}).get("svc", {}).items():
        found += [f"svc x{n} {case}: {r['errors']} errors" for n, r in by_count.items()
                  if isinstance(r, dict) and r["errors"]]
    return found + scaling.check(results.get("scaling"))
