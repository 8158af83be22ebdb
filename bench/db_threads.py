"""Instructions per request on a database path, split between the event loop's thread and the
SQLite thread: bench/instructions.py's measured process under callgrind, one output per thread.

    python bench/db_threads.py users                  # GET /users/{id}, on a database file
    BENCH_DB=:memory: python bench/db_threads.py transaction tx_plain

As bench/instructions.py does, each case runs with a small and a large number of requests and
the difference is divided by the difference in requests; a thread is named by what it runs
(the one that steps SQLite statements is the database thread, the process's first is the
loop's; any other, such as a default executor's, is "other").
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import instructions  # noqa: E402  (bench/instructions.py: the cases and the driven process)


def per_thread(case: str, count: int, connections: int) -> dict[str, int]:
    """Instructions of one driven process under callgrind, by thread role."""
    totals: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "callgrind.out")
        env = dict(os.environ, PYTHONHASHSEED="0")
        subprocess.run(["valgrind", "--tool=callgrind", "--separate-threads=yes",
                        f"--callgrind-out-file={out}", sys.executable,
                        str(HERE / "instructions.py"), "--drive", case, str(count),
                        "--connections", str(connections)],
                       check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for path in sorted(Path(folder).glob("callgrind.out*")):
            text = path.read_text(errors="replace")
            match = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
            if match is None:
                continue
            thread = re.search(r"^thread: (\d+)", text, re.M)
            role = ("database" if "sqlite3_step" in text and thread and thread.group(1) != "1"
                    else "loop" if thread is None or thread.group(1) == "1" else "other")
            totals[role] = totals.get(role, 0) + int(match.group(1))
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("cases", nargs="+", help=f"some of: {', '.join(instructions.CASES)}")
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--small", type=int, default=200)
    parser.add_argument("--large", type=int, default=1200)
    args = parser.parse_args()
    instructions.load_program(compile_now=True)
    for case in args.cases:
        small = per_thread(case, args.small, args.connections)
        large = per_thread(case, args.large, args.connections)
        per_request = {role: (large.get(role, 0) - small.get(role, 0)) / (args.large - args.small)
                       for role in sorted(set(small) | set(large))}
        split = ", ".join(f"{role} {value:,.0f}" for role, value in per_request.items())
        print(f"{case:14} {sum(per_request.values()):10,.0f} instructions/request ({split})",
              flush=True)


if __name__ == "__main__":
    main()
