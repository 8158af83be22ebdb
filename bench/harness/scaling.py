"""Every core: svc with 1 and 2 workers (SVC_WORKERS) beside Node with 1 and 2 `cluster` workers
(NODE_WORKERS, bench/peers/node/server.js) and Go with GOMAXPROCS 1 and 2, under the same
conditions, and the scaling factor of each (requests/s with 2 divided by requests/s with 1).

Conditions: every server and wrk (two threads, so that one wrk thread is not the limit of a
two-worker server) may run on both CPUs (`taskset -c 0,1`), so on a 2-core
machine the load generator shares the cores with the servers, and a perfect 2.0 is out of
reach for everyone alike. Each server serves one seeded SQLite file (a fresh one per start;
`:memory:` cannot be shared by workers). CPU time is measured over the server's whole process
tree (supervisor or primary included) and divided by the requests answered: the CPU time per
request, which must not grow with the number of workers.
"""

import statistics

from harness import wrk
from harness.servers import SPECS, WORK, RunningServer

ALL_CPUS = "0,1"
#: (server, workers, the environment that asks for them)
VARIANTS = [
    ("svc", 1, {"SVC_WORKERS": "1"}), ("svc", 2, {"SVC_WORKERS": "2"}),
    ("node", 1, {"NODE_WORKERS": "1"}), ("node", 2, {"NODE_WORKERS": "2"}),
    ("go", 1, {"GOMAXPROCS": "1"}), ("go", 2, {"GOMAXPROCS": "2"}),
]
CASE_NAMES = ["GET /small", "GET /users/{id}"]


def cases() -> list[wrk.Case]:
    return [case for case in wrk.CASES if case.name in CASE_NAMES]


def measure_variant(server: str, workers: int, env: dict, mode: dict, log) -> dict:
    """One fresh start of `server` with `workers`, each scaling case once."""
    database = WORK / f"scaling-{server}-{workers}.sqlite"
    for leftover in WORK.glob(database.name + "*"):
        leftover.unlink()
    results = {}
    with RunningServer(SPECS[server], {**env, "SVC_DB": str(database)}, cpus=ALL_CPUS) as running:
        for case in cases():
            wrk.run(running.url(""), case, mode["warmup"], cpus=ALL_CPUS, threads=2)
            before = running.tree_cpu_seconds()
            result = wrk.run(running.url(""), case, mode["seconds"], cpus=ALL_CPUS, threads=2)
            after = running.tree_cpu_seconds()
            spent = {pid: after[pid] - before.get(pid, 0.0) for pid in after}
            requests = max(result.requests, 1)
            results[case.name] = {
                "rps": result.requests_per_s, "p99_ms": result.p99_ms, "errors": result.errors,
                "cpu_us": round(sum(spent.values()) * 1e6 / requests, 2),
                "processes": len(after),
                # the busiest and idlest process's share of the CPU time (1.0 alone)
                "cpu_shares": sorted((round(s / max(sum(spent.values()), 1e-9), 2)
                                      for s in spent.values()), reverse=True),
            }
            log(f"  {server:5} x{workers} {case.name:18} {result.requests_per_s:9.0f} req/s"
                f"  {results[case.name]['cpu_us']:7.1f} us CPU/request  errors {result.errors}")
    for leftover in WORK.glob(database.name + "*"):
        leftover.unlink()
    return results


def run(mode: dict, servers: list[str], shuffle, log, incidents: list) -> dict:
    """runs[server][workers][case] = per-round results; rounds in a shuffled order."""
    variants = [v for v in VARIANTS if v[0] in servers]
    runs: dict = {}
    for round_no in range(1, mode["rounds"] + 1):
        order = shuffle.sample(variants, len(variants))
        log(f"scaling round {round_no}: " + ", ".join(f"{s} x{w}" for s, w, _ in order))
        for server, workers, env in order:
            try:
                measured = measure_variant(server, workers, env, mode, log)
            except (RuntimeError, OSError) as failure:
                incidents.append(f"scaling round {round_no}, {server} x{workers}: {failure}")
                log(f"  {server} x{workers}: INCIDENT: {failure}")
                continue
            for case, result in measured.items():
                runs.setdefault(server, {}).setdefault(str(workers), {}).setdefault(
                    case, []).append(result)
    return summarize(runs)


def summarize(runs: dict) -> dict:
    """Medians per server, workers and case, and the scaling factor 2 over 1."""
    summary: dict = {}
    for server, by_workers in runs.items():
        for workers, by_case in by_workers.items():
            for case, rounds in by_case.items():
                summary.setdefault(server, {}).setdefault(case, {})[workers] = {
                    "rps": statistics.median(r["rps"] for r in rounds),
                    "cpu_us": statistics.median(r["cpu_us"] for r in rounds),
                    "p99_ms": statistics.median(r["p99_ms"] for r in rounds),
                    "errors": sum(r["errors"] for r in rounds),
                    "cpu_shares": rounds[-1]["cpu_shares"],
                }
        for case, by_count in summary.get(server, {}).items():
            if "1" in by_count and "2" in by_count and by_count["1"]["rps"]:
                by_count["scaling"] = round(by_count["2"]["rps"] / by_count["1"]["rps"], 2)
    return summary


def section(scaling: dict | None) -> list[str]:
    """The report's "Every core" section (bench/RESULTS.md)."""
    if not scaling:
        return []
    lines = [
        "## Every core: 1 and 2 workers", "",
        "svc with `SVC_WORKERS` 1 and 2, Node with 1 and 2 `cluster` workers, Go with "
        "`GOMAXPROCS` 1 and 2, each serving one SQLite file. **The load generator shares the "
        "cores:** servers and wrk (`-t2 -c64`) all run on CPUs 0 and 1 (`taskset -c 0,1`), so "
        "on a 2-core machine wrk takes part of the second core and no server can reach a scaling factor of "
        "2.0; compare the factors with one another. CPU time per request is the whole process "
        "tree's (supervisor or primary included) divided by the requests answered; it should "
        "not grow with the number of workers. CPU shares: each process's part of that time.", "",
        "| server | case | req/s x1 | req/s x2 | scaling | CPU us/req x1 | CPU us/req x2 "
        "| CPU shares x2 |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for server, by_case in scaling.items():
        for case, by_count in by_case.items():
            one, two = by_count.get("1"), by_count.get("2")
            lines.append(
                f"| {server} | {case} | {_n(one, 'rps')} | {_n(two, 'rps')} "
                f"| {by_count.get('scaling', 'n/a')} | {_n(one, 'cpu_us', 1)} "
                f"| {_n(two, 'cpu_us', 1)} | {_shares(two)} |")
    return lines + [""]


def _shares(entry: dict | None) -> str:
    return " / ".join(map(str, (entry or {}).get("cpu_shares", [])))


def _n(entry: dict | None, key: str, digits: int = 0) -> str:
    return "n/a" if entry is None else f"{entry[key]:,.{digits}f}"


#: How much more CPU per request 2 workers may take than 1 before it counts as growth: the
#: spread between rounds of one configuration.
CPU_NOISE = 0.10


def target_rows(scaling: dict | None) -> list[str]:
    """The targets table's rows for workers: svc's CPU per request with 2 no higher than with 1."""
    rows = []
    for case, by_count in (scaling or {}).get("svc", {}).items():
        one, two = by_count.get("1"), by_count.get("2")
        if one and two:
            met = two["cpu_us"] <= one["cpu_us"] * (1 + CPU_NOISE)
            rows.append(f"| svc {case}: CPU µs/req with SVC_WORKERS=2 no higher than with 1 "
                        f"(within {CPU_NOISE:.0%}) | {one['cpu_us']:.1f} → {two['cpu_us']:.1f} "
                        f"| {'met' if met else 'missed'} | |")
    return rows


def check(scaling: dict | None) -> list[str]:
    """svc's CPU time per request must not grow with the number of workers (CPU_NOISE)."""
    problems = []
    for case, by_count in (scaling or {}).get("svc", {}).items():
        one, two = by_count.get("1"), by_count.get("2")
        if one and two and two["cpu_us"] > one["cpu_us"] * (1 + CPU_NOISE):
            problems.append(f"svc {case}: CPU time per request grew with 2 workers "
                            f"({one['cpu_us']} -> {two['cpu_us']} us)")
    return problems

