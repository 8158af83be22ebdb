"""The servers under test: how each one is started, pinned, probed and stopped.

Each server is started with `taskset -c 0`, which execs the command, so the pid we hold is
the server process itself and /proc/<pid>/status is its own memory, not a wrapper's.
"""

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness import file_database, nginx

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
WORK = BENCH / ".work"
LOGS = WORK / "logs"
SERVER_CPU = "0"
CLIENT_CPU = "1"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class ServerSpec:
    name: str
    command: tuple[str, ...]
    cwd: Path = ROOT
    env: dict = field(default_factory=dict)
    conforms: bool = True  # False for the fixed-response ceilings, which have no routes
    cases: tuple[str, ...] | None = None  # the load cases it runs (None: every case)
    postgres: bool = False  # SVC_DB is the benchmark's PostgreSQL database (harness/postgres.py)
    svc: bool = False  # serves workload.svc: its svc-only routes too (wrk.PAIRS, conformance)
    db_file: bool = False  # SVC_DB is an SQLite file of its own, made afresh at every start
    #: The arguments that tell it the port it was given (most read SVC_PORT instead).
    port_arguments: Callable[[int], tuple[str, ...]] | None = None


SPECS = {
    "svc": ServerSpec(
        "svc",
        (str(ROOT / ".venv/bin/svcc"), "run", "examples/workload/workload.svc"),
        env={"SVC_LOG": "quiet"}, svc=True,
    ),
    "bare-uvloop": ServerSpec(
        "bare-uvloop", (str(ROOT / ".venv/bin/python"), "bench/peers/bare_uvloop.py"), conforms=False
    ),
    # The physical reference (issue 39): one nginx process answering fixed bytes, no routes.
    "nginx": ServerSpec(
        "nginx", (nginx.EXECUTABLE,), conforms=False, cases=("GET /health", "GET /small"),
        port_arguments=nginx.arguments,
    ),
    "node": ServerSpec(
        "node", ("node", "bench/peers/node/server.js"), env={"NODE_PATH": str(WORK / "node/node_modules")}
    ),
    "go": ServerSpec("go", (str(WORK / "go-server"),)),
    # The database case on PostgreSQL: the same workload program and Node peer (with `pg`).
    "svc-pg": ServerSpec(
        "svc-pg",
        (str(ROOT / ".venv/bin/svcc"), "run", "examples/workload/workload.svc"),
        env={"SVC_LOG": "quiet"}, cases=("GET /users/{id}",), postgres=True, svc=True,
    ),
    "node-pg": ServerSpec(
        "node-pg", ("node", "bench/peers/node/server.js"),
        env={"NODE_PATH": str(WORK / "node/node_modules")}, cases=("GET /users/{id}",),
        postgres=True,
    ),
    # Reads and plain writes on an SQLite file (WAL, synchronous=FULL): the same program.
    file_database.SERVER: ServerSpec(
        file_database.SERVER,
        (str(ROOT / ".venv/bin/svcc"), "run", "examples/workload/workload.svc"),
        env={"SVC_LOG": "quiet"}, cases=(file_database.READS, file_database.WRITES), svc=True,
        db_file=True,
    ),
    "fastapi": ServerSpec(
        "fastapi",
        (
            str(WORK / "venv/bin/python"), "-m", "uvicorn", "fastapi_app:app", "--host", "127.0.0.1",
            "--loop", "uvloop", "--http", "httptools", "--no-access-log", "--log-level", "warning",
        ),
        cwd=BENCH / "peers", port_arguments=lambda port: ("--port", str(port)),
    ),
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RunningServer:
    """One started server process; use as a context manager so it is always stopped."""

    def __init__(self, spec: ServerSpec, extra_env: dict | None = None, cpus: str = SERVER_CPU):
        self.spec = spec
        self.port = free_port()
        LOGS.mkdir(parents=True, exist_ok=True)
        self.log_path = LOGS / f"{spec.name}.log"
        env = {**os.environ, "SVC_PORT": str(self.port), "SVC_DB": ":memory:", **spec.env,
               **(extra_env or {})}
        if spec.postgres:
            from harness import postgres

            env["SVC_DB"] = postgres.database_url()
        if spec.db_file and "SVC_DB" not in (extra_env or {}):
            env["SVC_DB"] = str(fresh_database(spec.name))
        command = ["taskset", "-c", cpus, *spec.command]
        if spec.port_arguments:
            command += spec.port_arguments(self.port)
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(command, cwd=spec.cwd, env=env, stdout=log, stderr=log)
        self.pid = self.process.pid

    def __enter__(self):
        self.wait_ready()
        return self

    def __exit__(self, *exc):
        self.stop()

    def wait_ready(self, timeout: float = 90.0) -> None:
        """Waits for GET /health to answer 200; a server that dies or never answers is fatal."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.spec.name} exited with {self.process.returncode}; see {self.log_path}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=1) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"{self.spec.name} did not answer /health within {timeout:.0f} s; see {self.log_path}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def rss_mib(self) -> float:
        return proc_rss_kib(self.pid) / 1024

    def cpu_seconds(self) -> float:
        """User plus kernel CPU seconds used so far by all the server's threads."""
        return sum(self.cpu_split())

    def cpu_split(self) -> tuple[float, float]:
        """(user, kernel) CPU seconds used so far by all the server's threads."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) / CLOCK_TICKS, int(fields[12]) / CLOCK_TICKS

    def tree_cpu_seconds(self) -> dict[int, float]:
        """CPU seconds so far of the server and of every process under it (workers), by pid."""
        found, todo = {}, [self.pid]
        while todo:
            pid = todo.pop()
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
            except OSError:  # gone meanwhile
                continue
            found[pid] = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
            todo += [int(child) for child in children]
        return found

    def fd_count(self) -> int:
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


def fresh_database(name: str) -> Path:
    """bench/.work/db/<name>.sqlite with no file left there by an earlier start (its WAL and
    shared-memory files included): svc makes it and seeds it."""
    path = WORK / "db" / f"{name}.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    for leftover in path.parent.glob(path.name + "*"):
        leftover.unlink()
    return path


def proc_rss_kib(pid: int) -> int:
    """VmRSS of the process from /proc/<pid>/status, in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


def client_command(*args: str, cpus: str = CLIENT_CPU) -> list[str]:
    """A command pinned to the client CPU (the one wrk uses), or to `cpus`."""
    return ["taskset", "-c", cpus, *args]


def python_client(*args: str) -> list[str]:
    return client_command(sys.executable, str(BENCH / "harness" / "clients.py"), *args)
