"""What the numbers were measured on: the machine and the version of every moving part."""

import platform
import subprocess
from pathlib import Path

from harness import nginx
from harness.servers import ROOT, WORK


def first_line(command: list[str], cwd: Path = ROOT, line: int = 1) -> str:
    """Line `line` (1 = the first) of what `command` prints."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=30)
    except OSError:
        return "not found"
    lines = (done.stdout or done.stderr).strip().splitlines()
    return lines[line - 1] if len(lines) >= line else "unknown"


def python_packages(python: Path, names: list[str]) -> str:
    code = (
        "import importlib.metadata as m, sys, sqlite3; print(sys.version.split()[0], "
        f"*[n + ' ' + m.version(n) for n in {names!r}], 'sqlite ' + sqlite3.sqlite_version, sep=', ')"
    )
    return first_line([str(python), "-c", code])


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def memory() -> str:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal"):
            return f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    return "unknown"


def dirty() -> str:
    """Whether the measured svc differs from its commit (other work in progress in the tree)."""
    done = subprocess.run(["git", "status", "--porcelain", "src", "examples/workload"],
                          capture_output=True, text=True, cwd=ROOT)
    return " with uncommitted changes under src/" if done.stdout.strip() else ""


def describe() -> dict:
    """Machine and versions as label → text, in the order the report lists them."""
    node_sqlite = WORK / "node/node_modules/better-sqlite3/package.json"
    return {
        "CPU": f"{cpu_model()}, {first_line(['nproc'])} online CPUs (servers on CPU 0, clients on CPU 1)",
        "Memory": memory(),
        "OS": f"{platform.system()} {platform.release()}, {first_line(['sh', '-c', '. /etc/os-release; echo $PRETTY_NAME'])}",
        "svc": f"commit {first_line(['git', 'rev-parse', '--short', 'HEAD'])}{dirty()}; Python "
        + python_packages(ROOT / ".venv/bin/python", ["uvloop", "httptools", "msgspec"])
        + "; " + first_line([str(ROOT / ".venv/bin/svcc"), "--version"], line=2),  # compiled?
        "bare uvloop": "same interpreter and packages as svc",
        "nginx": first_line([nginx.EXECUTABLE, "-v"]).removeprefix("nginx version: ")
        + " (nginx-light " + first_line(["dpkg-query", "-W", "-f", "${Version}", "nginx-light"])
        + "), one process",
        "Node": first_line(["node", "--version"]) + ", better-sqlite3 "
        + first_line(["node", "-p", f"require({str(node_sqlite)!r}).version"]),
        "Go": first_line(["go", "version"]) + ", go-sqlite3 "
        + first_line(["dpkg-query", "-W", "-f", "${Version}", "golang-github-mattn-go-sqlite3-dev"])
        + ", libsqlite3 " + first_line(["dpkg-query", "-W", "-f", "${Version}", "libsqlite3-0"]),
        "FastAPI": "Python " + python_packages(
            WORK / "venv/bin/python", ["fastapi", "uvicorn", "pydantic", "uvloop", "httptools"]
        ),
        "wrk": first_line(["wrk", "-v"]),
    }
