"""Profiles the svc server under each load case with py-spy; writes bench/.work/profile/.

For each case: a fresh svc server pinned to CPU 0, wrk on CPU 1, and py-spy sampling the
server while the load runs. py-spy samples only the thread holding the GIL (what uses the one
CPU) and pauses the process for each sample: slower, but non-blocking sampling misattributes
lines. A syscall made while holding the GIL (uvloop's send in `transport.write`) shows as
its caller's own time; the read happens in libuv with the GIL released and is not sampled.
So it also records the server's user and kernel CPU seconds from /proc/<pid>/stat.

Writes <case>.txt (collapsed stacks, for flame graph tools) and summary.md (per case: CPU
split and the functions with the most samples, self and inclusive).
"""

import argparse
import collections
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import python_cost  # noqa: E402
from harness import wrk  # noqa: E402
from harness.servers import SPECS, WORK, RunningServer, client_command  # noqa: E402

OUT = WORK / "profile"
PY_SPY = WORK / "venv/bin/py-spy"
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds the process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) / TICKS, int(fields[12]) / TICKS


def frame_name(frame: str) -> str:
    """`handle (svc/runtime/http/server.py:120)` → `handle (runtime/http/server.py)`: lines merged."""
    match = re.match(r"(.*) \((.*?)(?::\d+)?\)$", frame)
    if not match:
        return frame
    name, path = match.groups()
    return f"{name} ({'/'.join(Path(path).parts[-2:])})"


def summarize(collapsed: str, top: int = 12) -> tuple[int, list, list]:
    """Total samples, and the top frames by self and by inclusive samples."""
    own, inclusive, total = collections.Counter(), collections.Counter(), 0
    for line in collapsed.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        frames = [frame_name(f) for f in stack.split(";")]
        count = int(count)
        total += count
        own[frames[-1]] += count
        for frame in set(frames):
            inclusive[frame] += count
    return total, own.most_common(top), inclusive.most_common(top)


def profile_case(case: wrk.Case, seconds: int) -> str:
    """One case under py-spy; returns its section of summary.md."""
    target = OUT / (re.sub(r"[^a-z0-9]+", "_", case.name.lower()).strip("_") + ".txt")
    with RunningServer(SPECS["svc"]) as server:
        wrk.run(server.url(""), case, 1)
        before = cpu_seconds(server.pid)
        outcome = {}
        load = threading.Thread(target=lambda: outcome.update(r=wrk.run(server.url(""), case, seconds)))
        load.start()
        subprocess.run(
            client_command(str(PY_SPY), "record", "--gil", "--format", "raw", "-r", "200",
                           "-d", str(seconds - 1), "-o", str(target), "--pid", str(server.pid)),
            check=True, capture_output=True, timeout=seconds + 30,
        )
        load.join()
        after = cpu_seconds(server.pid)
    user, system = after[0] - before[0], after[1] - before[1]
    total, own, inclusive = summarize(target.read_text())
    result = outcome["r"]
    lines = [
        f"## {case.name}",
        "",
        f"{result.requests_per_s:,.0f} req/s under py-spy; server CPU {user:.1f} s user + {system:.1f} s kernel "
        f"({system / max(user + system, 1e-9):.0%} kernel) over {seconds} s; {total} samples.",
        "",
        "| self % | function | | inclusive % | function |",
        "|---:|---|---|---:|---|",
    ]
    for (name_s, n_s), (name_i, n_i) in zip(own, inclusive):
        lines.append(f"| {100 * n_s / total:.1f} | {name_s} | | {100 * n_i / total:.1f} | {name_i} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--cases", help="comma-separated substrings of case names (default: all)")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    wanted = [w.strip() for w in args.cases.split(",")] if args.cases else None
    cases = [c for c in wrk.CASES if not wanted or any(w in c.name for w in wanted)]
    sections = [profile_case(case, args.seconds) for case in cases]
    head = "# py-spy profiles of the svc server\n\n" + python_cost.main() + "\n\n"
    (OUT / "summary.md").write_text(head + "\n".join(sections))
    print((OUT / "summary.md").read_text())


if __name__ == "__main__":
    main()
