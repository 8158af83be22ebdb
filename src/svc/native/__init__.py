"""The runtime's hot modules, compiled ahead of time with mypyc, used only when they are current.

    build.py    `python -m svc.native.build` (run by `make`): compile `MODULES`, write the
                manifest
    (here)      `MODULES`, the one list of compiled modules, and `install()`, the finder that
                loads them when the manifest matches the sources

The pure-Python modules are the one source. `make` compiles the modules of `MODULES` where a C
compiler exists (`python -m svc.native.build`), into `built/` beside this file, with a manifest
that records each module's source digest. Importing `svc.runtime` calls `install()`: when the
manifest matches the sources (and this interpreter), a finder at the front of `sys.meta_path`
loads those modules from their extension files; otherwise the `.py` files load as always. So
an edited module is never shadowed by a stale build: it simply runs as Python until the next
`make`.

`SVC_NATIVE=0` keeps the pure-Python modules even when a current build exists (how CI tests
them); `SVC_NATIVE=require` makes a missing or stale build stop the process with one `error:`
line (how the tests prove that a build is really used, in a checkout and in an executable).

In an executable made by `svcc build` there are no sources to compare: the build copies the
compiled files into the bundle only after checking them against the sources, so there the
manifest is trusted as it is.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

#: The modules that are compiled: the request path, from the parser to the rendered answer,
#: and the SQLite database thread's side of each statement.
MODULES = (
    "svc.runtime.http.head",
    "svc.runtime.http.protocol",
    "svc.runtime.http.routing",
    "svc.runtime.http.answers",
    "svc.runtime.http.binding",
    "svc.runtime.http.responses",
    "svc.runtime.http.headers",
    "svc.runtime.http.custom_response",
    "svc.runtime.http.connection",
    "svc.runtime.http.eager",
    "svc.runtime.observability.accesslog",
    "svc.runtime.db.sqlite_thread",
    "svc.runtime.db.group_commit",
)

HERE = Path(__file__).resolve().parent
BUILT = HERE / "built"
MANIFEST = "manifest.json"
PACKAGE_ROOT = HERE.parent.parent  # the folder that holds `svc`


@dataclass(frozen=True)
class Plan:
    """What `install` would load: module name → extension file, or why nothing is loaded."""

    files: dict[str, str]
    reason: str = ""


def source_digest(path: Path) -> str:
    """The digest the manifest keeps for one module's source."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def source_path(module: str, root: Path = PACKAGE_ROOT) -> Path:
    return root.joinpath(*module.split(".")).with_suffix(".py")


def plan(built: Path = BUILT, root: Path = PACKAGE_ROOT, frozen: bool = False) -> Plan:
    """The extension files to load, if the build in `built` is complete and current."""
    try:
        manifest = json.loads((built / MANIFEST).read_text())
    except FileNotFoundError:
        return Plan({}, "not built (`make` builds them where a C compiler exists)")
    except (OSError, ValueError) as problem:
        return Plan({}, f"unreadable manifest: {problem}")
    if manifest.get("suffix") != importlib.machinery.EXTENSION_SUFFIXES[0]:
        return Plan({}, f"built for another interpreter: {manifest.get('suffix')}, run make")
    modules = manifest.get("modules", {})
    if set(modules) != set(MODULES):
        return Plan({}, "built for another module list, run make")
    files = {manifest["group"]: str(built / manifest["group_file"])}
    for name, entry in modules.items():
        if not frozen and _digest_or_none(source_path(name, root)) != entry["source_sha256"]:
            return Plan({}, f"out of date: {name} changed since the build, run make")
        files[name] = str(built / entry["file"])
    missing = [path for path in files.values() if not os.path.isfile(path)]
    if missing:
        return Plan({}, f"incomplete: {missing[0]} is missing, run make")
    return Plan(files)


def _digest_or_none(path: Path) -> str | None:
    try:
        return source_digest(path)
    except OSError:
        return None


class NativeFinder:
    """Finds the compiled modules (and mypyc's shared library) before the path finders do."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = files

    def find_spec(self, fullname, path=None, target=None):
        file = self.files.get(fullname)
        if file is None:
            return None
        loader = importlib.machinery.ExtensionFileLoader(fullname, file)
        return importlib.machinery.ModuleSpec(fullname, loader, origin=file)


#: Why the compiled modules are not in use ("" once they are), for `svcc --version` and tests.
state = "not checked"


def install() -> None:
    """Put the finder in place when the build is current; called once by `svc.runtime`."""
    global state
    if any(isinstance(finder, NativeFinder) for finder in sys.meta_path):
        return
    setting = os.environ.get("SVC_NATIVE", "")
    if setting == "0":
        state = "off (SVC_NATIVE=0)"
        return
    chosen = plan(frozen=bool(getattr(sys, "frozen", False)))
    if chosen.reason:
        state = chosen.reason
        if setting == "require":  # asked for: one error line and exit 1, whoever imports us
            print(f"error: SVC_NATIVE=require, but the compiled runtime is not usable: {state}",
                  file=sys.stderr)
            raise SystemExit(1)
        return
    sys.meta_path.insert(0, NativeFinder(chosen.files))
    state = ""


def describe() -> str:
    """One line on the runtime that `svcc run` would use, for `svcc --version`."""
    if os.environ.get("SVC_NATIVE", "") == "0":
        return "runtime: pure Python (SVC_NATIVE=0)"
    reason = plan(frozen=bool(getattr(sys, "frozen", False))).reason
    if reason:
        return f"runtime: pure Python; compiled modules: {reason}"
    return f"runtime: compiled with mypyc ({len(MODULES)} modules)"
