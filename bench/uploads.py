"""Upload throughput (not a test): N MB uploaded over 127.0.0.1 to a real server, in MB/s,
beside a plain file copy of the same bytes on the same machine.

The server runs in a process of its own (this file with `--serve`): routes with `Upload`
parameters as generated code registers them, served by `svc.runtime.http.server.serve`,
with its TMPDIR in a fresh folder. The client is Python on a plain socket, sending the bytes
from memory in 1 MiB writes; a case's time runs from the first byte sent to the answer read.

    raw            POST the bytes as the body: the route's one upload
    multipart      the same bytes as one file part of multipart/form-data
    raw + move     the raw upload, then `upload_move` to a file in the same folder
    in memory      the same bytes to a `bytes` parameter (held in memory, no file): what the
                   socket and the parser cost without the writes
    copy           shutil.copyfile of a file of N MB, in that folder (the yardstick)

Each case runs `--runs` times (3); the table shows the best and the median. Everything stops
by itself: N is at most 2048 MB, every socket has a 120 s timeout, and the server is stopped
at the end whatever happened.

    .venv/bin/python bench/uploads.py             # 256 MB
    .venv/bin/python bench/uploads.py --mb 64 --runs 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.measured import json_results  # bench/ is on sys.path, as for run.py

HERE = Path(__file__).resolve().parent
MB = 1_000_000
MOST_MB = 2048
CHUNK = 2**20
TIMEOUT = 120
BOUNDARY = b"bench-boundary-7f3a"


# --- the server (`--serve`) ---------------------------------------------------------------------

def serve() -> None:
    from svc.rules.contract import BODY_LIMIT_MAX, Param, ParamSource as S, ResultKind as R, Route
    from svc.runtime.http.server import serve as serve_routes
    from svc.runtime.lib import uploads as u

    async def size(file):
        return u.upload_size(file)

    async def length(body):
        return len(body)

    async def moved(file, to):
        outcome = await u.upload_move(file, to)
        return outcome if outcome is not None else u.upload_size(file)

    upload = Param("file", S.UPLOAD, "Upload")
    routes = [Route("POST", "/upload", size, (upload,), R.JSON, body_limit=BODY_LIMIT_MAX),
              Route("POST", "/move", moved, (upload, Param("to", S.QUERY, "str")), R.JSON,
                    body_limit=BODY_LIMIT_MAX),
              Route("POST", "/memory", length, (Param("body", S.RAW, "bytes"),), R.JSON,
                    body_limit=BODY_LIMIT_MAX)]
    try:
        import uvloop
        run = uvloop.run
    except ImportError:  # pragma: no cover
        run = asyncio.run
    run(serve_routes(None, 0, routes))


# --- the client ---------------------------------------------------------------------------------

def post(port: int, target: str, ctype: bytes, pieces: list[bytes]) -> tuple[float, bytes]:
    """Send one request whose body is `pieces`; (seconds to the answer, the answer)."""
    length = sum(len(p) for p in pieces)
    head = (f"POST {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: ".encode() + ctype
            + f"\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n".encode())
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
        started = time.perf_counter()
        sock.sendall(head)
        for piece in pieces:
            view = memoryview(piece)
            for i in range(0, len(view), CHUNK):
                sock.sendall(view[i:i + CHUNK])
        answer = b""
        while True:
            data = sock.recv(65536)
            if not data:
                break
            answer += data
        return time.perf_counter() - started, answer


def check(answer: bytes, expected: int) -> None:
    status, _, rest = answer.partition(b"\r\n")
    body = rest.partition(b"\r\n\r\n")[2]
    if not status.startswith(b"HTTP/1.1 200") or body != str(expected).encode():
        raise SystemExit(f"unexpected answer: {answer[:300]!r}")


def measure(mb: int, runs: int) -> dict[str, dict[str, float]]:
    """MB/s of each case, best and median of `runs`, with `mb` megabytes per upload."""
    size = min(max(mb, 1), MOST_MB) * MB
    data = os.urandom(size)
    preamble = (b"--" + BOUNDARY + b"\r\nContent-Disposition: form-data; name=\"file\"; "
                b"filename=\"bench.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n")
    epilogue = b"\r\n--" + BOUNDARY + b"--\r\n"
    times: dict[str, list[float]] = {"raw": [], "multipart": [], "raw + move": [],
                                     "in memory": [], "copy": []}
    with tempfile.TemporaryDirectory(prefix="svc-bench-uploads-") as folder:
        env = dict(os.environ, TMPDIR=folder, SVC_LOG="quiet",
                   PYTHONPATH=os.pathsep.join([str(HERE.parent / "src"),
                                               os.environ.get("PYTHONPATH", "")]))
        server = subprocess.Popen([sys.executable, __file__, "--serve"], env=env,
                                  stdout=subprocess.PIPE, text=True)
        try:
            line = server.stdout.readline() if server.stdout else ""
            if not line.startswith("listening on http://127.0.0.1:"):
                raise SystemExit(f"the server did not start: {line!r}")
            port = int(line.rsplit(":", 1)[1])
            source = os.path.join(folder, "source.bin")
            with open(source, "wb") as f:
                f.write(data)
            for _ in range(runs):
                seconds, answer = post(port, "/upload", b"application/octet-stream", [data])
                check(answer, size)
                times["raw"].append(seconds)
                seconds, answer = post(port, "/upload",
                                       b"multipart/form-data; boundary=" + BOUNDARY,
                                       [preamble, data, epilogue])
                check(answer, size)
                times["multipart"].append(seconds)
                target = os.path.join(folder, "moved.bin")
                seconds, answer = post(port, f"/move?to={target}", b"application/octet-stream",
                                       [data])
                check(answer, size)
                times["raw + move"].append(seconds)
                os.unlink(target)
                seconds, answer = post(port, "/memory", b"application/octet-stream", [data])
                check(answer, size)
                times["in memory"].append(seconds)
                started = time.perf_counter()
                shutil.copyfile(source, os.path.join(folder, "copy.bin"))
                times["copy"].append(time.perf_counter() - started)
                os.unlink(os.path.join(folder, "copy.bin"))
        finally:
            server.terminate()
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
    megabytes = size / MB
    return {case: {"best": round(megabytes / min(found), 1),
                   "median": round(megabytes / statistics.median(found), 1)}
            for case, found in times.items()}


def table(results: dict[str, dict[str, float]]) -> list[str]:
    lines = ["| case | best MB/s | median MB/s |", "|---|---:|---:|"]
    lines += [f"| {case} | {r['best']:.0f} | {r['median']:.0f} |" for case, r in results.items()]
    return lines


# --- in `make bench` (bench/run.py, bench/harness/report.py) ---------------------------------------

def run(mode: dict, log, incidents: list) -> dict | None:
    """The cases with 256 MB uploads (64 MB in a quick run), in processes of their own."""
    mb = 256 if mode.get("rounds", 1) > 1 else 64
    command = [sys.executable, str(Path(__file__).resolve()), "--json", "--mb", str(mb)]
    results = json_results("uploads", command, log, incidents)
    if results is None:
        return None
    for case, r in results["cases"].items():
        log(f"  {case:12} {r['best']:8.0f} MB/s best {r['median']:8.0f} MB/s median")
    return results


def section(results: dict | None) -> list[str]:
    """The report's "Uploads" section."""
    if not results:
        return []
    return ["## Uploads", "",
            f"{results['mb']} MB uploaded over 127.0.0.1 to a real server (its own process, "
            "TMPDIR in a fresh folder) by a Python client writing 1 MiB at a time, against "
            "`shutil.copyfile` of the same bytes in the same folder; best and median of "
            f"{results['runs']} runs (bench/uploads.py). `raw` is the body as the route's one "
            "`Upload`, `multipart` the same bytes as a form's file part, `raw + move` adds "
            "`upload_move` to a file beside it, `in memory` the same bytes to a `bytes` "
            "parameter (no file at all).", "",
            *table(results["cases"]), ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=int, default=256, help=f"megabytes per upload (at most {MOST_MB})")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return serve()
    results = measure(args.mb, args.runs)
    if args.json:
        print(json.dumps({"mb": min(max(args.mb, 1), MOST_MB), "runs": args.runs,
                          "cases": results}))
        return None
    print(f"{args.mb} MB per upload, {args.runs} runs, TMPDIR on the same file system as the copy")
    print("\n".join(table(results)))
    return None


if __name__ == "__main__":
    main()
