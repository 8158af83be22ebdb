"""A/B of two environments of the svc workload server: CPU µs/request and req/s, alternated.

    python bench/ab.py SVC_NATIVE=0 SVC_NATIVE=require          # pure Python vs compiled
    python bench/ab.py --rounds 5 --seconds 5 A=1 A=2 --cases "GET /small,GET /query"

Each round runs every case on A, then on B (the order of A and B flips every round), each on
a fresh server pinned to CPU 0 with wrk (`-t1 -c64`) pinned to CPU 1, after a 1 s warm-up.
The CPU time per request (user + kernel, all the server's threads, from /proc) is the steady
figure on a shared machine; req/s is shown beside it. Prints a Markdown table of medians with
the per-round values, for bench/PERF.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import wrk  # noqa: E402
from harness.servers import SPECS, RunningServer  # noqa: E402


def parse_env(text: str) -> dict[str, str]:
    """`A=1,B=2` → {"A": "1", "B": "2"}; an empty text is the default environment."""
    pairs = [item.split("=", 1) for item in text.split(",") if item]
    return {name: value for name, value in pairs}


def measure(env: dict[str, str], case: wrk.Case, seconds: float) -> tuple[float, float]:
    """(req/s, CPU µs/request) of one fresh server under one wrk run."""
    with RunningServer(SPECS["svc"], extra_env=env) as server:
        wrk.run(server.url(""), case, 1)
        before = server.cpu_seconds()
        result = wrk.run(server.url(""), case, seconds)
        used = server.cpu_seconds() - before
    return result.requests_per_s, used * 1e6 / max(result.requests, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("a", help="environment A, e.g. SVC_NATIVE=0 (comma-separated pairs)")
    parser.add_argument("b", help="environment B")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=4)
    parser.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    args = parser.parse_args()
    known = {case.name: case for case in wrk.CASES + wrk.PAIR_CASES}
    names = [name for name in args.cases.split(",") if name] or [c.name for c in wrk.CASES]
    cases = [known[name] for name in names]
    envs = {"A": parse_env(args.a), "B": parse_env(args.b)}
    runs: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for round_number in range(args.rounds):
        order = ["A", "B"] if round_number % 2 == 0 else ["B", "A"]
        for case in cases:
            for variant in order:
                rps, cpu = measure(envs[variant], case, args.seconds)
                runs.setdefault((case.name, variant), []).append((rps, cpu))
                print(f"round {round_number + 1} {case.name:24} {variant}: {rps:9.0f} req/s "
                      f"{cpu:6.1f} µs/req", file=sys.stderr, flush=True)
    print(f"\nA = `{args.a}`, B = `{args.b}`; {args.rounds} rounds alternated, "
          f"{args.seconds:g} s each\n")
    print("| Case | CPU µs/req A | CPU µs/req B | B ÷ A | req/s A | req/s B | CPU per round A / B |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for case in cases:
        a, b = runs[(case.name, "A")], runs[(case.name, "B")]
        cpu_a = statistics.median(cpu for _, cpu in a)
        cpu_b = statistics.median(cpu for _, cpu in b)
        rounds = ", ".join(f"{x[1]:.1f}/{y[1]:.1f}" for x, y in zip(a, b))
        print(f"| {case.name} | {cpu_a:.1f} | {cpu_b:.1f} | {cpu_b / cpu_a:.2f} "
              f"| {statistics.median(r for r, _ in a):,.0f} "
              f"| {statistics.median(r for r, _ in b):,.0f} | {rounds} |")


if __name__ == "__main__":
    main()
