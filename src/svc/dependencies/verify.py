"""Whether a project's installed Python packages are the ones its svc.lock records.

Every command that compiles or runs a project with `[dependencies]` asks this first (through
svc.pipeline), so a program never runs against packages nobody locked: a missing lock, a lock
made from another `[dependencies]` table, or a packages folder that differs from the lock is
one message saying what differs and that `svcc install` fixes it. Only `svcc install` changes
the folder or the lock; this reads them.
"""

from __future__ import annotations

from svc.dependencies.environment import installed, packages_folder
from svc.dependencies.lock import LOCK_NAME, Lock, LockError, read_lock
from svc.dependencies.manifest import digest, normalized

RUN_INSTALL = "run `svcc install`"
#: How many differing packages a message names before it says "and N more".
SHOWN = 5


def environment_problem(project_dir: str, table: dict | None) -> str | None:
    """Why the project's packages cannot be used as they are, or None when they can (and
    always for a project without `[dependencies]`)."""
    if not table:
        return None
    try:
        lock = read_lock(project_dir)
    except LockError as exc:
        return f"{exc}: {RUN_INSTALL}"
    if lock is None:
        return (f"svc.toml lists Python dependencies but there is no {LOCK_NAME}: "
                f"{RUN_INSTALL}")
    if lock.digest != digest(table):
        return (f"{LOCK_NAME} does not match svc.toml [dependencies] (changed since "
                f"`svcc install`): {RUN_INSTALL}")
    differences = lock_differences(lock, installed(packages_folder(project_dir)))
    if differences:
        return (f"the installed Python packages do not match {LOCK_NAME} "
                f"({_listed(differences)}): {RUN_INSTALL}")
    return None


def lock_differences(lock: Lock, found: dict[str, str]) -> list[str]:
    """What differs between the locked packages and those installed (name -> version), each
    in a few words, by name."""
    locked = {normalized(p.name): p.version for p in lock.packages}
    differences = []
    for name in sorted(locked.keys() | found.keys()):
        if name not in found:
            differences.append(f"{name} {locked[name]} is not installed")
        elif name not in locked:
            differences.append(f"{name} {found[name]} is installed but not locked")
        elif found[name] != locked[name]:
            differences.append(f"{name} is {found[name]}, locked {locked[name]}")
    return differences


def _listed(differences: list[str]) -> str:
    more = len(differences) - SHOWN
    return "; ".join(differences[:SHOWN]) + (f"; and {more} more" if more > 0 else "")
