"""Start-up benchmark (not a test): from `svcc run examples/hello/hello.svc` to the first 200
on /health, repeated; prints each time and the median. Run from the repository root:

    .venv/bin/python bench/startup.py [runs]
"""

from __future__ import annotations

import http.client
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository, for tests.helpers

from tests.helpers.svc_process import REPO, free_port, svcc  # noqa: E402


def first_200(port: int, started: float, limit: float = 30.0) -> float:
    while time.perf_counter() - started < limit:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            conn.request("GET", "/health")
            if conn.getresponse().status == 200:
                return time.perf_counter() - started
        except OSError:
            time.sleep(0.002)
    raise SystemExit("the server did not answer /health")


def main(runs: int) -> None:
    times = []
    for _ in range(runs):
        port = free_port()
        env = {**os.environ, "SVC_PORT": str(port), "SVC_LOG": "quiet"}
        started = time.perf_counter()
        process = subprocess.Popen(svcc() + ["run", str(REPO / "examples/hello/hello.svc")],
                                   env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            times.append(first_200(port, started))
        finally:
            process.terminate()
            process.wait()
    print("start-up to first 200 on /health (s):", " ".join(f"{t:.3f}" for t in times))
    print(f"median {statistics.median(times):.3f} s, best {min(times):.3f} s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
