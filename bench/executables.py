"""The size and start time of built executables with and without a Python dependency (not a
test): examples/hello (no dependency) and examples/notes (the `markdown` package from PyPI,
installed with `svcc install` into a copy of the project), each built with `svcc build` into a
fresh folder sharing one build cache, then started alone RUNS times, from exec to the first 200
on /health. Prints a Markdown table for bench/RESULTS.md. Run from the repository root:

    .venv/bin/python bench/executables.py [runs]
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository, for tests.helpers

from startup import first_200  # noqa: E402

from tests.helpers.svc_process import REPO, free_port, svcc  # noqa: E402


def build(args: list[str], output: Path, cache: Path) -> float:
    """`svcc build` of `args` into `output`; its duration in seconds."""
    started = time.perf_counter()
    subprocess.run(svcc() + ["build", *args, "-o", str(output)], check=True, cwd=REPO,
                   env={**os.environ, "SVC_CACHE_DIR": str(cache)}, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def start_times(executable: Path, runs: int, folder: Path) -> list[float]:
    """Seconds from exec to the first 200 on /health, alone in `folder` under `env -i`."""
    times = []
    for _ in range(runs):
        port = free_port()
        started = time.perf_counter()
        process = subprocess.Popen(["env", "-i", f"SVC_PORT={port}", "SVC_LOG=quiet",
                                    f"TMPDIR={folder}", str(executable)], cwd=folder,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            times.append(first_200(port, started))
        finally:
            process.terminate()
            process.wait()
    return times


def main(runs: int) -> None:
    with tempfile.TemporaryDirectory() as work:
        root = Path(work)
        notes = root / "notes"
        shutil.copytree(REPO / "examples" / "notes", notes,
                        ignore=shutil.ignore_patterns(".svc", "*.sqlite"))
        subprocess.run(svcc() + ["install", "--project", str(notes)], check=True,
                       stdout=subprocess.DEVNULL)
        cases = [("examples/hello (no dependency)", ["examples/hello/hello.svc"], "hello"),
                 ("examples/notes (markdown bundled)", ["--project", str(notes)], "notes-app")]
        build(cases[0][1], root / "warm-up", root / "cache")  # the analysis, cached once
        print("| executable | size (MB) | build (s) | start to first 200, median of "
              f"{runs} (s) |")
        print("|---|---:|---:|---:|")
        for title, args, name in cases:
            output = root / name
            took = build(args, output, root / "cache")
            run_in = root / f"run-{name}"
            run_in.mkdir()
            times = start_times(output, runs, run_in)
            print(f"| {title} | {output.stat().st_size / 1e6:.1f} | {took:.1f} | "
                  f"{statistics.median(times):.3f} |")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
