"""`make bench`: every server side by side on this machine, in one run, then bench/RESULTS.md.

Servers run pinned to CPU 0, wrk and the other clients to CPU 1. Each server first passes the
conformance check (same JSON shapes, status codes and strictness as workload.svc) or it is
not measured. Then rounds: in each round the servers, and each server's cases, run in a
shuffled order, each case a warm-up and a measured wrk run on 64 connections; every server is
started fresh for each round. Then capacity and endurance runs against svc.

svc alone also runs the 0.2 and 0.3 paths beside their neighbours (wrk.PAIRS: a `Headers`
handler, a guarded route, a `Response` with status 201 and a header field, a transaction of two
statements; issue 39's mixed case, 1 request in 10 a transaction of three statements and the rest
reads), in the same rounds as the other cases, so each pair is measured under the same conditions.

Two servers are references or variants rather than peers (issue 39): `nginx`, one process
answering fixed bytes (bench/peers/nginx), the physical reference, on GET /health and GET /small
only, with no conformance check; and `svc-file`, the same svc program on an SQLite file (WAL,
synchronous=FULL; a fresh file at every start), on GET /users/{id} and its plain write route
POST /users/{id}/birthday/plain only (harness/file_database.py reports them).

  run.py            full mode (3 rounds, 2 s warm-up, 10 s measured, 120 s soak)
  run.py --quick    1 round, 1 s + 3 s, 20 s soak: to try the harness (also BENCH_QUICK=1)

`svc-pg` and `node-pg` run only GET /users/{id}, on a private PostgreSQL cluster pinned to
CPU 0 with the servers (harness/postgres.py).

Then "every core" (harness/scaling.py): svc, Node and Go with 1 and 2 workers, servers and wrk
sharing both CPUs; `--scaling only` runs just that, `--scaling off` skips it.
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import conformance  # noqa: E402
import python_calls  # noqa: E402
import uploads  # noqa: E402
import topics  # noqa: E402
import live  # noqa: E402
from harness import (  # noqa: E402
    contention, endurance, jobs, observability, outbound, report, scaling, wrk,
)
from harness.servers import SPECS, WORK, RunningServer  # noqa: E402

FULL = dict(rounds=3, warmup=2, seconds=10, soak=120, deadline=10)
QUICK = dict(rounds=1, warmup=1, seconds=3, soak=20, deadline=4)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def conforming(names: list[str]) -> tuple[list[str], dict]:
    """The servers that start and answer like workload.svc, and why each other one is out."""
    kept, excluded = [], {}
    for name in names:
        spec = SPECS[name]
        try:
            with RunningServer(spec) as server:
                problems = conformance.check(server.port, svc=spec.svc) if spec.conforms else []
        except RuntimeError as failure:
            problems = [str(failure)]
        if problems:
            excluded[name] = problems
            log(f"{name}: EXCLUDED: " + "; ".join(problems[:3]))
        else:
            kept.append(name)
            log(f"{name}: conforms")
    return kept, excluded


def measure_server(name: str, cases: list[wrk.Case], mode: dict, runs: dict) -> None:
    """One fresh start of `name`, every case once, in the given order."""
    spec = SPECS[name]
    with RunningServer(spec) as server:
        for case in cases:
            if spec.cases is not None and case.name not in spec.cases:
                continue
            if case.svc_only and not spec.svc:
                continue
            wrk.run(server.url(""), case, mode["warmup"])
            cpu_before = server.cpu_seconds()
            result = wrk.run(server.url(""), case, mode["seconds"])
            cpu_us = (server.cpu_seconds() - cpu_before) * 1e6 / max(result.requests, 1)
            runs[name][case.name].append(
                {**result.__dict__, "rss_mib": round(server.rss_mib(), 1), "cpu_us": round(cpu_us, 2)}
            )
            log(f"  {name:12} {case.name:24} {result.requests_per_s:10.0f} req/s"
                f"  p99 {result.p99_ms:6.2f} ms  errors {result.errors}")


def measure(names: list[str], cases: list[wrk.Case], mode: dict, seed: int, incidents: list) -> dict:
    """runs[server][case] = list of per-round dicts (one wrk result plus the RSS at its end).

    A server that dies or a wrk that fails is an incident: recorded, reported, and the run
    goes on with the next server, so one crash does not throw away the other measurements.
    """
    shuffle = random.Random(seed)
    runs = {name: {case.name: [] for case in cases} for name in names}
    for round_no in range(1, mode["rounds"] + 1):
        order = shuffle.sample(names, len(names))
        log(f"round {round_no}: {', '.join(order)}")
        for name in order:
            try:
                measure_server(name, shuffle.sample(cases, len(cases)), mode, runs)
            except (RuntimeError, OSError, subprocess.SubprocessError) as failure:
                incidents.append(f"round {round_no}, {name}: {failure}")
                log(f"  {name}: INCIDENT: {failure}")
            (WORK / "runs-partial.json").write_text(json.dumps(runs))  # for a look while it runs
    return runs


def summarize(runs: dict) -> dict:
    """Per server and case: medians, the spread of requests/s across rounds, total errors."""
    summary = {}
    for name, by_case in runs.items():
        for case, rounds in by_case.items():
            if not rounds:
                continue
            rps = [r["requests_per_s"] for r in rounds]
            summary.setdefault(name, {})[case] = {
                "rps": statistics.median(rps), "rps_min": min(rps), "rps_max": max(rps),
                "p50_ms": statistics.median(r["p50_ms"] for r in rounds),
                "p99_ms": statistics.median(r["p99_ms"] for r in rounds),
                "cpu_us": statistics.median(r["cpu_us"] for r in rounds),
                "rss_mib": rounds[-1]["rss_mib"], "errors": sum(r["errors"] for r in rounds),
                "rounds": len(rounds),
            }
    return summary


def endurance_runs(name: str, mode: dict) -> dict:
    spec = SPECS[name]
    log(f"capacity: 10,000 connections against {name}")
    results = {"server": name, "capacity": endurance.capacity(spec, 10_000)}
    log(f"  {results['capacity']}")
    log(f"soak: {mode['soak']} s of POST /echo 4 KiB on 128 connections against {name}")
    results["soak"] = endurance.soak(spec, mode["soak"])
    log(f"  {results['soak']}")
    log(f"slow clients: 1,000 idle and drip-feeding connections during GET /small against {name}")
    results["slow"] = endurance.slow_clients(spec, 500, 500, mode["deadline"])
    log(f"  {results['slow']}")
    return results


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", default=os.environ.get("BENCH_QUICK") == "1")
    parser.add_argument("--servers", default=",".join(SPECS), help="comma-separated subset of " + ",".join(SPECS))
    parser.add_argument("--endurance-server", default="svc", help="server for capacity and endurance ('none' skips)")
    parser.add_argument("--out", help="default: bench/RESULTS.md, or bench/.work/RESULTS-quick.md in quick mode")
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--jobs", choices=["on", "off", "only"], default="on",
                        help="the durable jobs section (harness/jobs.py); 'only' runs just that")
    parser.add_argument("--contention", choices=["on", "off", "only"], default="on",
                        help="the contention section (harness/contention.py, issue 38's "
                             "ledger); 'only' runs just that")
    parser.add_argument("--observability", choices=["on", "off", "only"], default="on",
                        help="JSON logs and metrics on vs off (harness/observability.py); 'only' "
                             "runs just that")
    parser.add_argument("--outbound", choices=["on", "off", "only"], default="on",
                        help="an svc handler calling a local upstream vs aiohttp's client from "
                             "Python (harness/outbound.py); 'only' runs just that")
    parser.add_argument("--python", choices=["on", "off", "only"], default="on",
                        help="one @python call vs the same call from plain Python "
                             "(bench/python_calls.py); 'only' runs just that")
    parser.add_argument("--uploads", choices=["on", "off", "only"], default="on",
                        help="upload MB/s against a file copy (bench/uploads.py); 'only' runs "
                             "just that")
    parser.add_argument("--topics", choices=["on", "off", "only"], default="on",
                        help="topics' local fan-out and cross-process latency "
                             "(bench/topics.py); 'only' runs just that")
    parser.add_argument("--live", choices=["on", "off", "only"], default="on",
                        help="server-sent events to 1, 1,000 and 10,000 streams and WebSocket "
                             "echo against Node's ws (bench/live.py); 'only' runs just that")
    parser.add_argument("--scaling", choices=["on", "off", "only"], default="on",
                        help="1 and 2 workers of svc, node and go (only: nothing else)")
    parser.add_argument("--render-only", action="store_true",
                        help="rewrite the report from bench/.work/results.json without measuring")
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    mode = QUICK if args.quick else FULL
    out = Path(args.out or (WORK / "RESULTS-quick.md" if args.quick else Path(__file__).resolve().parent / "RESULTS.md"))
    if args.render_only:
        out.write_text(report.render(json.loads((WORK / "results.json").read_text())))
        log(f"wrote {out}")
        return 0
    if args.jobs == "only":
        return section_only("jobs", lambda incidents: jobs.run(mode, log, incidents), out)
    if args.contention == "only":
        return section_only("contention", lambda incidents: contention.run(
            mode, log, incidents), out)
    if args.observability == "only":
        return section_only("observability", lambda incidents: observability.run(
            mode, log, incidents, args.seed), out)
    if args.outbound == "only":
        return section_only("outbound", lambda incidents: outbound.run(
            mode, log, incidents, args.seed), out)
    if args.python == "only":
        return section_only("python_calls", lambda incidents: python_calls.run(
            mode, log, incidents), out)
    if args.uploads == "only":
        return section_only("uploads", lambda incidents: uploads.run(mode, log, incidents), out)
    if args.topics == "only":
        return section_only("topics", lambda incidents: topics.run_section(
            mode, log, incidents), out)
    if args.live == "only":
        return section_only("live", lambda incidents: live.run_section(mode, log, incidents), out)
    started = datetime.now(timezone.utc)
    load_at_start = Path("/proc/loadavg").read_text().split()[:3]
    wanted = [n.strip() for n in args.servers.split(",") if n.strip()]
    if args.scaling == "only":
        wanted = [n for n in wanted if n in {v[0] for v in scaling.VARIANTS}]
    names, excluded = conforming(wanted)
    incidents: list[str] = []
    cases = wrk.CASES + (wrk.PAIR_CASES if any(SPECS[n].svc for n in names) else [])
    runs = {} if args.scaling == "only" else measure(names, cases, mode, args.seed, incidents)
    endurance_results = None
    if args.endurance_server in names and args.scaling != "only":
        try:
            endurance_results = endurance_runs(args.endurance_server, mode)
        except (RuntimeError, OSError, subprocess.SubprocessError, ValueError) as failure:
            incidents.append(f"capacity and endurance, {args.endurance_server}: {failure}")
            log(f"  INCIDENT: {failure}")
    scaling_results = None if args.scaling == "off" else scaling.run(
        mode, names, random.Random(args.seed), log, incidents)
    jobs_results = None if args.jobs == "off" or "svc" not in names else jobs.run(
        mode, log, incidents)
    contention_results = None if args.contention == "off" or "svc" not in names else \
        contention.run(mode, log, incidents)
    observability_results = None if args.observability == "off" or "svc" not in names else \
        observability.run(mode, log, incidents, args.seed)
    outbound_results = None if args.outbound == "off" or "svc" not in names else \
        outbound.run(mode, log, incidents, args.seed)
    python_results = None if args.python == "off" else python_calls.run(mode, log, incidents)
    upload_results = None if args.uploads == "off" else uploads.run(mode, log, incidents)
    topic_results = None if args.topics == "off" else topics.run_section(mode, log, incidents)
    live_results = None if args.live == "off" else live.run_section(mode, log, incidents)
    results = {
        "started": started.isoformat(timespec="seconds"),
        "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "mode": "quick" if args.quick else "full", "settings": mode, "seed": args.seed,
        "command": report.command_line(args.quick), "servers": names, "excluded": excluded,
        "cases": [c.name for c in wrk.CASES], "pairs": report.pair_names(), "runs": runs, "summary": summarize(runs),
        "endurance": endurance_results, "incidents": incidents, "scaling": scaling_results,
        "jobs": jobs_results, "contention": contention_results,
        "observability": observability_results,
        "outbound": outbound_results,
        "python_calls": python_results,
        "uploads": upload_results,
        "topics": topic_results,
        "live": live_results,
        "load": [load_at_start, Path("/proc/loadavg").read_text().split()[:3]],
    }
    WORK.mkdir(parents=True, exist_ok=True)
    (WORK / "results.json").write_text(json.dumps(results, indent=1))
    out.write_text(report.render(results))
    log(f"wrote {out}")
    failed = report.failures(results)
    for failure in failed:
        log(f"FAILED: {failure}")
    return 1 if failed else 0


def section_only(key: str, measure, out: Path) -> int:
    """`--jobs only`, `--contention only`, `--observability only`, `--outbound only`,
    `--python only`, `--uploads only`, `--topics only`, `--live only`: measure that section
    alone and put it into the report at `out` (the section replaced, the rest as the last full
    run wrote it in bench/.work/results.json)."""
    incidents: list[str] = []
    measured = measure(incidents)
    saved = WORK / "results.json"
    results = json.loads(saved.read_text()) if saved.exists() else None
    if results is None:
        log(f"no bench/.work/results.json to add the {key} section to; printing it instead")
        section = {"jobs": jobs.section, "contention": contention.section,
                   "observability": observability.section, "outbound": outbound.section,
                   "python_calls": python_calls.section, "uploads": uploads.section,
                   "topics": topics.section, "live": live.section}[key]
        print("\n".join(section(measured)))
        return 1 if incidents else 0
    prefix = {"jobs": "jobs ", "contention": "contention ", "observability": "logs and metrics ",
              "outbound": "outbound calls ", "python_calls": "python functions",
              "uploads": "uploads", "topics": "topics", "live": "live streams"}[key]
    results[key] = measured
    results["incidents"] = [i for i in results["incidents"] if not i.startswith(prefix)] + incidents
    saved.write_text(json.dumps(results, indent=1))
    out.write_text(report.render(results))
    log(f"wrote {out}")
    return 1 if incidents else 0


if __name__ == "__main__":
    sys.exit(main())
