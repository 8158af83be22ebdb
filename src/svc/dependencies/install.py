"""`svcc install`: put a project's Python packages into its own folder and lock them.

pip installs into a fresh staging folder inside `.svc/` (`pip install --target`, never a global
or user site-packages). Only when pip succeeded does the staging folder take the place of
`.svc/python` (renames: a reader sees the old set or the new one), and then svc.lock is
written. A failure removes the staging folder and changes nothing else, so the project keeps
the packages and lock it had, and the message is one `error:` line plus pip's last lines.

What is installed: the lock's exact pins when the lock was made from the current
`[dependencies]` table (a checkout installs what its author ran), else the table's ranges
(svc.toml changed, or no lock yet), and then the lock is written anew.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass

from svc.dependencies.environment import installed, packages_folder
from svc.dependencies.lock import LOCK_NAME, Lock, LockError, Package, read_lock, write_lock
from svc.dependencies.manifest import Dependency, digest, normalized

#: How many of pip's last output lines a failure shows.
PIP_TAIL_LINES = 15
PIP_OPTIONS = ("--no-input", "--disable-pip-version-check", "-q")


class InstallError(Exception):
    """`svcc install` failed and changed nothing; the message is what to show (its first line
    the `error:` line, then pip's last lines when pip failed)."""


@dataclass(frozen=True)
class Installed:
    """What an install did: the lock it wrote, and whether it kept the old lock's pins."""

    lock: Lock
    from_lock: bool


def install(project_dir: str, table: dict, dependencies: list[Dependency]) -> Installed:
    """Install the project's `[dependencies]` into `.svc/python` and write svc.lock; raise
    InstallError (having changed nothing) when that fails."""
    wanted = digest(table)
    pins = _current_pins(project_dir, wanted, dependencies)
    ranges = [d.requirement(project_dir) for d in dependencies if d.path is None]
    requirements = (ranges if pins is None else pins) \
        + [d.requirement(project_dir) for d in dependencies if d.path is not None]
    _check_folders(project_dir, dependencies)
    svc_folder = os.path.dirname(packages_folder(project_dir))
    os.makedirs(svc_folder, exist_ok=True)
    staging = tempfile.mkdtemp(prefix="python-staging-", dir=svc_folder)
    try:
        _pip_install(staging, requirements)
        found = installed(staging)
        _check_paths_installed(dependencies, found)
        lock = Lock(wanted, tuple(Package(name, version) for name, version in sorted(found.items())))
        _replace_folder(staging, packages_folder(project_dir))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    write_lock(project_dir, lock)
    return Installed(lock, from_lock=pins is not None)


def uninstall(project_dir: str) -> bool:
    """For a project without `[dependencies]`: remove the packages folder and the lock left
    from an earlier table; whether there was anything to remove."""
    folder, lock = packages_folder(project_dir), os.path.join(project_dir, LOCK_NAME)
    found = os.path.isdir(folder) or os.path.isfile(lock)
    shutil.rmtree(folder, ignore_errors=True)
    if os.path.isfile(lock):
        os.remove(lock)
    return found


def _current_pins(project_dir: str, wanted: str,
                  dependencies: list[Dependency]) -> list[str] | None:
    """`name==version` for each locked package from the index, when the lock was made from
    this table; None when it was not (or there is no readable lock): resolve the ranges then."""
    try:
        lock = read_lock(project_dir)
    except LockError:
        return None
    if lock is None or lock.digest != wanted:
        return None
    from_folders = {normalized(d.name) for d in dependencies if d.path is not None}
    return [f"{p.name}=={p.version}" for p in lock.packages
            if normalized(p.name) not in from_folders]


def _check_folders(project_dir: str, dependencies: list[Dependency]) -> None:
    """A path dependency must name a folder holding a Python project (else pip's own message
    would be about a file name, not about svc.toml)."""
    for dependency in dependencies:
        if dependency.path is None:
            continue
        folder = dependency.requirement(project_dir)
        if not any(os.path.isfile(os.path.join(folder, name))
                   for name in ("pyproject.toml", "setup.py")):
            raise InstallError(f"'{dependency.name}' in svc.toml [dependencies]: '{folder}' is "
                               "not a folder holding a Python project (no pyproject.toml or "
                               "setup.py)")


def _pip_install(target: str, requirements: list[str]) -> None:
    """Run pip into `target`; InstallError with pip's last lines when it fails."""
    command = [sys.executable, "-m", "pip", "install", "--target", target, *PIP_OPTIONS,
               *requirements]
    try:
        done = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    except OSError as exc:
        raise InstallError(f"cannot run pip ({sys.executable} -m pip): {exc}") from None
    if done.returncode != 0:
        tail = (done.stderr.strip() or done.stdout.strip()).splitlines()[-PIP_TAIL_LINES:]
        raise InstallError(f"pip could not install the Python dependencies (exit status "
                           f"{done.returncode}); nothing was changed. pip said:\n"
                           + "\n".join(tail))


def _check_paths_installed(dependencies: list[Dependency], found: dict[str, str]) -> None:
    """A path dependency's key must be the name of the package in its folder: the lock pins
    every other package by that name."""
    for dependency in dependencies:
        if dependency.path is not None and normalized(dependency.name) not in found:
            raise InstallError(f"'{dependency.name}' in svc.toml [dependencies]: the folder "
                               f"'{dependency.path}' installed no package of that name (name "
                               "the entry as the package names itself); nothing was changed")


def _replace_folder(staging: str, folder: str) -> None:
    """Put the staging folder where `folder` is, by renames: the old folder is moved aside
    first (a directory cannot be replaced in one rename) and removed after."""
    old = None
    if os.path.exists(folder):
        old = tempfile.mkdtemp(prefix="python-old-", dir=os.path.dirname(folder))
        os.rmdir(old)
        os.rename(folder, old)
    os.rename(staging, folder)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
