"""The database paths under load: req/s and CPU µs per request, cases compared as ratios.

Not a test: a short measurement for the database changes of issue 39 (group commit on a file,
transactions that do not stall the server). Starts `svcc run bench/db_load.svc` pinned to
CPU 0 (`taskset`), runs wrk pinned to CPU 1 on 64 connections, and alternates the cases
over the rounds (medians reported), so a busy moment of the machine touches every case.

    python bench/db_load.py tx          # POST /birthday (tx of 2) vs /birthday/plain, in memory
    python bench/db_load.py mix         # 1 in 10 a tx of 3, the rest reads, vs the same plainly
    python bench/db_load.py writes      # on a file: one plain write, and two, vs reads
    python bench/db_load.py tx --db file --rounds 5 --seconds 3
    python bench/db_load.py tx --trees /tmp/before/src src   # two source trees, alternated

The server is started anew for each case of each round (each on a fresh database). With
`--trees`, each case runs on each tree in turn within every round (the server's PYTHONPATH),
so that a busy moment of a shared machine touches both sides of a before/after comparison.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROGRAM = HERE / "db_load.svc"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

#: case name → (URL path wrk is given, Lua script)
CASES = {
    "reads": ("/", "users.lua"),
    "tx2": ("/birthday", "users_post.lua"),
    "plain2": ("/birthday/plain", "users_post.lua"),
    "mix_tx3": ("/trio", "users_mixed.lua"),
    "mix_plain3": ("/trio/plain", "users_mixed.lua"),
    "write1": ("/touch", "users_post.lua"),
}
#: suite → (cases, default database, ratios printed as (case, its reference))
SUITES = {
    "tx": (["tx2", "plain2"], "memory", [("tx2", "plain2")]),
    "mix": (["mix_tx3", "mix_plain3"], "memory", [("mix_tx3", "mix_plain3")]),
    "writes": (["reads", "write1", "plain2"], "file", [("write1", "reads"), ("plain2", "reads")]),
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def wait_ready(port: int, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server exited with {process.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise SystemExit("the server did not answer /health")


def wrk(port: int, case: str, seconds: float) -> int:
    path, script = CASES[case]
    done = subprocess.run(
        ["taskset", "-c", "1", "wrk", "-t1", "-c64", f"-d{seconds:g}s", "--timeout", "5s",
         "-s", str(HERE / "lua" / script), f"http://127.0.0.1:{port}{path}"],
        capture_output=True, text=True, check=True, timeout=seconds + 30)
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)|Socket errors: .*", done.stdout)
    if bad:
        raise SystemExit(f"{case}: {bad.group(0)}")
    return int(re.search(r"(\d+) requests in", done.stdout).group(1))


def measure(case: str, db: str, seconds: float, tree: str | None) -> tuple[float, float]:
    """(req/s, CPU µs per request) of one fresh server under one case."""
    port = free_port()
    with tempfile.TemporaryDirectory() as folder:
        path = ":memory:" if db == "memory" else os.path.join(folder, "load.db")
        env = dict(os.environ, SVC_PORT=str(port), SVC_DB=path, SVC_LOG="quiet")
        if tree is not None:
            env["PYTHONPATH"] = os.path.abspath(tree)
        process = subprocess.Popen(
            ["taskset", "-c", "0", sys.executable, "-c", "import sys; from svc.cli import main; sys.exit(main())", "run",
             str(PROGRAM)], env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_ready(port, process)
            wrk(port, case, 1)  # warm-up
            cpu, started = cpu_seconds(process.pid), time.monotonic()
            requests = wrk(port, case, seconds)
            cpu, elapsed = cpu_seconds(process.pid) - cpu, time.monotonic() - started
        finally:
            process.terminate()
            process.wait(timeout=30)
    return requests / elapsed, cpu / requests * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("suite", choices=sorted(SUITES))
    parser.add_argument("--db", choices=["memory", "file"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3)
    parser.add_argument("--trees", nargs="+", metavar="SRC",
                        help="source folders to compare (each the server's PYTHONPATH)")
    args = parser.parse_args()
    cases, db, ratios = SUITES[args.suite]
    db = args.db or db
    trees = args.trees or [None]
    runs: dict[tuple, list[tuple[float, float]]] = {(t, c): [] for t in trees for c in cases}
    for round_ in range(args.rounds):
        order = cases if round_ % 2 == 0 else cases[::-1]
        for case in order:
            for tree in trees if round_ % 2 == 0 else trees[::-1]:
                runs[tree, case].append(measure(case, db, args.seconds, tree))
    for tree in trees:
        if tree is not None:
            print(f"== {tree}")
        medians = {case: (statistics.median(r for r, _ in runs[tree, case]),
                          statistics.median(c for _, c in runs[tree, case])) for case in cases}
        for case, (rps, cpu) in medians.items():
            every = ", ".join(f"{r:,.0f}" for r, _ in runs[tree, case])
            print(f"{case:11} {db:6} {rps:9,.0f} req/s  {cpu:7.1f} CPU µs/request  [{every}]")
        for case, reference in ratios:
            print(f"{case} / {reference}: {medians[case][0] / medians[reference][0]:.2f}x req/s, "
                  f"{medians[reference][1] / medians[case][1]:.2f}x by CPU per request")


if __name__ == "__main__":
    main()
