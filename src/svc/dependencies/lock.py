"""`svc.lock`: the exact versions `svcc install` installed, written beside svc.toml.

    # Written by `svcc install`: the exact Python packages of this project. Commit it.
    dependencies = "<sha256 of svc.toml's [dependencies]>"

    [[package]]
    name = "markdown"
    version = "<its exact version, e.g. 3.7>"

Every installed distribution is listed (what the project asked for and what those need), by
name. `dependencies` ties the lock to the table it was made from: a changed table makes the
lock stale (svc.dependencies.verify) and the next `svcc install` resolves the ranges again.
Users commit the file, so a checkout installs what its author ran.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass

LOCK_NAME = "svc.lock"
HEADER = ("# Written by `svcc install`: the exact Python packages of this project. Commit it;\n"
          "# do not edit it (change svc.toml's [dependencies] and run `svcc install`).\n")


@dataclass(frozen=True)
class Package:
    """One installed distribution: its name as it calls itself, and its exact version."""

    name: str
    version: str


@dataclass(frozen=True)
class Lock:
    """What svc.lock says: the digest of the `[dependencies]` it was made from, and the
    packages installed from it, sorted by name."""

    digest: str
    packages: tuple[Package, ...]


class LockError(Exception):
    """svc.lock exists but cannot be read as a lock (its message says why, in one line)."""


def lock_path(project_dir: str) -> str:
    return os.path.join(project_dir, LOCK_NAME)


def read_lock(project_dir: str) -> Lock | None:
    """The project's lock, or None when it has none; LockError when it is not one."""
    path = lock_path(project_dir)
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        return None
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise LockError(f"cannot read {LOCK_NAME}: {exc}") from None
    digest, packages = data.get("dependencies"), data.get("package", [])
    if not isinstance(digest, str) or not isinstance(packages, list) or not all(
            isinstance(p, dict) and isinstance(p.get("name"), str)
            and isinstance(p.get("version"), str) for p in packages):
        raise LockError(f"{LOCK_NAME} is not a lock written by `svcc install`")
    return Lock(digest, tuple(Package(p["name"], p["version"]) for p in packages))


def lock_text(lock: Lock) -> str:
    """The file's text: the header, the digest, then one `[[package]]` per distribution."""
    lines = [HEADER, f'dependencies = "{lock.digest}"\n']
    for package in sorted(lock.packages, key=lambda p: p.name.lower()):
        lines.append(f'\n[[package]]\nname = "{package.name}"\nversion = "{package.version}"\n')
    return "".join(lines)


def write_lock(project_dir: str, lock: Lock) -> None:
    """Replace svc.lock at once (a reader never sees half a file)."""
    path = lock_path(project_dir)
    partial = path + ".partial"
    with open(partial, "w", encoding="utf-8") as f:
        f.write(lock_text(lock))
    os.replace(partial, path)
