"""Node and npm for the tests that check what svc makes for JavaScript tools (the VS Code
extension, the generated clients): each such folder pins its packages in a package-lock.json,
installed once with `npm ci`. Node and npm are required, not optional (`make test` installs
them): a machine without them fails with a message saying so."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


def program(name: str, needed_by: str) -> str:
    """The path of `node` or `npm`; the test fails with how to get it when it is missing."""
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not on PATH: {needed_by} need Node.js 20 or newer with npm "
                    "(`make node` installs them)", pytrace=False)
    return found


def run(folder: Path, args: list[str | Path], timeout: float = 60) -> subprocess.CompletedProcess:
    """Run in `folder`; stdin is closed so nothing can wait for an answer."""
    return subprocess.run([str(a) for a in args], cwd=folder, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)


def output(result: subprocess.CompletedProcess) -> str:
    return f"exit {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"


def npm_installed(folder: Path, needed_by: str) -> Path:
    """`folder`'s node_modules, installed with `npm ci` unless they are already there and
    newer than package-lock.json (npm writes node_modules/.package-lock.json on every install)."""
    npm = program("npm", needed_by)
    program("node", needed_by)
    installed = folder / "node_modules" / ".package-lock.json"
    lock = folder / "package-lock.json"
    if not installed.exists() or installed.stat().st_mtime < lock.stat().st_mtime:
        result = run(folder, [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                     timeout=300)
        assert result.returncode == 0, f"npm ci failed in {folder}\n" + output(result)
    return folder / "node_modules"
