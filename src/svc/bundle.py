"""`svcc build`: one self-contained executable per program, made with PyInstaller `--onefile`.

The executable holds CPython, the svc runtime and its native dependencies (uvloop, httptools,
msgspec, websockets, python-multipart, SQLite), the whole standard library and the project's installed Python
packages (`.svc/python`, svc.dependencies) as plain files under `svc-python/`; the compiled
program, marshalled, is attached after PyInstaller's archive (svc.launcher). Its entry point is
`svc.launcher`, which is the same for every program. The command around this (arguments,
messages, SIGTERM) is `svcc build` in `svc.cli`.

Why builds after the first are fast: the PyInstaller file is the same for every program (the
launcher reads the program attached after it, svc.launcher), so it is made once per
toolchain, runtime and set of bundled Python packages (`_base_key`), kept in the cache folder
as a "base", and each build copies it and appends the program: a moment instead of the final
assembly (10 to 20 s, compressing every binary again). When a base must be made, PyInstaller
reuses its own cached work (the import analysis, the bytecode archive, stripped binaries), so
only the first build on a machine runs the whole analysis (a minute or more).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import platform
import shutil
import subprocess
import sys
import time
import types
from contextlib import contextmanager
from typing import Any, Iterator

import svc.launcher
from svc import __version__, native
from svc.compiler.diagnostics import plural
from svc.launcher import PACKAGES_DATA, attach_program, encode_program
from svc.process import silence_stdout

STAGES = 4
APP_NAME = "svc-app"
# Packages the runtime and generated code import, some of them lazily: collected whole.
RUNTIME_PACKAGES = ("svc", "uvloop", "httptools", "msgspec", "websockets", "python_multipart",
                    "asyncpg", "re2", "croniter", "dateutil", "prometheus_client")
RUNTIME_MODULES = ("sqlite3",)
#: Standard library modules no bundled package needs: tests, GUIs, and the tools for making
#: environments and packages (with their submodules).
STDLIB_LEFT_OUT = frozenset({
    "test", "tkinter", "_tkinter", "idlelib", "turtle", "turtledemo", "lib2to3", "ensurepip",
    "venv", "pydoc_data", "pydoc", "distutils", "antigravity", "this", "__phello__", "msilib",
    "_msi", "xxsubtype", "xxlimited", "xxlimited_35", "_xxsubinterpreters", "_xxtestfuzz"})

# zlib level for the archive: 6 packs within 1% of PyInstaller's default 9, three times faster.
COMPRESSION_LEVEL = "6"
LOG_TAIL_LINES = 30

SPEC_TEMPLATE = '''\
# Written by `svcc build`. The same for every program: the program is attached to a copy of
# the file this makes (svc.launcher), so PyInstaller reuses its analysis and svcc the file.
from PyInstaller.utils.hooks import collect_submodules

hidden = sorted({{name for package in {packages!r} for name in collect_submodules(package)}}
                | set({modules!r}))
a = Analysis([{script!r}], pathex=[{pathex!r}], hiddenimports=hidden + {stdlib!r})
pyz = PYZ(a.pure)
packages = {packages_folder!r}
packages = Tree(packages, prefix={packages_data!r}, excludes=["__pycache__", "*.pyc"]) \
    if packages else []
exe = EXE(pyz, a.scripts, a.binaries + {native!r},
          a.datas + packages,
          name={name!r}, console=True, strip={strip!r}, upx=False, debug=False)
'''


class BuildError(Exception):
    """A build problem to report as one `error:` message (never a traceback)."""


def output_path(output: str) -> str:
    """The executable's path for `-o OUTPUT` (`.exe` added on Windows), refused before any
    work when PyInstaller is missing or the path must not be written (see `_check_output`)."""
    _require_bundler()
    output = executable_name(output)
    _check_output(output)
    return output


def _check_output(output: str) -> None:
    """Refuse, before any work, an output path that cannot or must not be written.

    An existing file is replaced only if it is an executable (an earlier build): never the
    program's own `.svc` or `include_text` files, or anything else a typo names.
    """
    if not output or output.endswith(("/", os.sep)) or os.path.isdir(output):
        raise BuildError(f"'{output}' is a directory: give the executable's file name with -o")
    if os.path.exists(output) and not _is_executable(output):
        raise BuildError(f"'{output}' exists and is not an executable: refusing to overwrite it "
                         "(remove it or choose another -o)")
    folder = os.path.dirname(os.path.abspath(output))
    while not os.path.exists(folder):
        folder = os.path.dirname(folder)
    if not os.path.isdir(folder):
        raise BuildError(f"cannot create the folder for '{output}': '{folder}' is a file")


def _is_executable(path: str) -> bool:
    if sys.platform == "win32":
        return path.lower().endswith(".exe")
    return os.path.isfile(path) and os.access(path, os.X_OK)


def build_executable(code: list[tuple[str, types.CodeType]], output: str,
                     packages: str | None = None) -> None:
    """Stages 2 and 3: pack a program's code objects (`pipeline.Compiled.code`) and bundle
    them, with the folder of the project's installed Python packages if it has one, into the
    executable `output`."""
    payload = encode_program(code)
    progress(2, f"packing the program ({plural(len(code), 'file')}, {size_text(len(payload))})")
    cache = cache_dir()
    try:
        os.makedirs(cache, exist_ok=True)
    except OSError as exc:
        raise BuildError(f"cannot use the build cache folder '{cache}': {exc.strerror or exc} "
                         "(set SVC_CACHE_DIR to a folder svcc may write)") from None
    with _locked(os.path.join(cache, "lock")):
        spec = _spec_text(packages)
        base = os.path.join(cache, "bases", _base_key(spec, packages))
        if os.path.isfile(base):
            progress(3, f"attaching it to the executable cached in {cache}")
        else:
            first = not os.path.exists(os.path.join(cache, "work", APP_NAME, "Analysis-00.toc"))
            progress(3, "bundling with PyInstaller (" + (
                "first build takes about a minute" if first
                else f"reusing the cache in {cache}") + ")")
            _keep_base(_bundle(cache, spec), base)
        _install(base, payload, output)


def _require_bundler() -> None:
    if importlib.util.find_spec("PyInstaller") is None:
        # Name this interpreter: a bare `python` may be another one than svcc's (no venv active).
        raise BuildError("PyInstaller is not installed, and svcc build needs it: "
                         f"install it with `{sys.executable} -m pip install pyinstaller`")


def executable_name(output: str) -> str:
    """The output path, with `.exe` added on Windows where it is missing."""
    if sys.platform == "win32" and not output.lower().endswith(".exe"):
        return output + ".exe"
    return output


def cache_root() -> str:
    """Where svcc keeps build caches: $SVC_CACHE_DIR, else the platform's user cache folder."""
    if os.environ.get("SVC_CACHE_DIR"):
        return os.path.abspath(os.environ["SVC_CACHE_DIR"])
    home = os.path.expanduser("~")
    if sys.platform == "win32":
        return os.path.join(os.environ.get("LOCALAPPDATA") or home, "svc", "Cache")
    if sys.platform == "darwin":
        return os.path.join(home, "Library", "Caches", "svc")
    return os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache"), "svc")


def cache_dir() -> str:
    """The cache for this svc, Python and PyInstaller: a work folder is only reused by the
    exact toolchain that made it."""
    python = f"py{sys.version_info.major}.{sys.version_info.minor}"
    bundler = f"pyinstaller{importlib.metadata.version('pyinstaller')}"
    machine = f"{sys.platform}-{platform.machine().lower() or 'unknown'}"
    return os.path.join(cache_root(), f"build-{__version__}-{python}-{bundler}-{machine}")


def _bundle(cache: str, spec_text: str) -> str:
    """Run PyInstaller on the spec; the built file (without a program)."""
    spec = os.path.join(cache, f"{APP_NAME}.spec")
    _write_if_changed(spec, spec_text.encode())
    log_path = os.path.join(cache, "pyinstaller.log")
    dist = os.path.join(cache, "dist")
    command = [sys.executable, "-m", "PyInstaller", "--noconfirm", "--log-level", "INFO",
               "--workpath", os.path.join(cache, "work"), "--distpath", dist, spec]
    env = dict(os.environ, PYINSTALLER_CONFIG_DIR=os.path.join(cache, "pyinstaller"),
               PYINSTALLER_ZLIB_COMPRESSION_LEVEL=COMPRESSION_LEVEL)
    with open(log_path, "wb") as log:
        status = _run(command, env, log, cwd=cache)
    built = os.path.join(dist, APP_NAME + (".exe" if sys.platform == "win32" else ""))
    if status != 0 or not os.path.isfile(built):
        raise BuildError(f"PyInstaller failed (exit status {status}):\n{_tail(log_path)}\n"
                         f"full log: {log_path}\n"
                         f"if this persists, delete the build cache: {cache}")
    return built


#: How many bases a cache keeps (the most recently made): one per set of bundled packages
#: and per state of the runtime, so a few cover the projects of a machine.
BASES_KEPT = 4


def _base_key(spec: str, packages: str | None) -> str:
    """What a base is made of, as a file name: the spec (the compiled runtime's files are in
    it), svc's own modules and the runtime libraries' versions, and the bundled packages
    (each file's path, size and time of change: svc's files change in a checkout)."""
    digest = hashlib.sha256(spec.encode())
    for package in RUNTIME_PACKAGES:
        try:
            digest.update(f"{package} {importlib.metadata.version(package)}\n".encode())
        except importlib.metadata.PackageNotFoundError:
            digest.update(f"{package} -\n".encode())
    for folder in (os.path.dirname(os.path.abspath(svc.__file__)), packages):
        if folder:
            digest.update(_files_state(folder).encode())
    return digest.hexdigest()[:24]


def _files_state(folder: str) -> str:
    """Every file below `folder` but bytecode caches: relative path, size, change time."""
    lines = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            stat = os.stat(os.path.join(root, name))
            lines.append(f"{os.path.relpath(os.path.join(root, name), folder)} "
                         f"{stat.st_size} {stat.st_mtime_ns}")
    return "\n".join(lines)


def _keep_base(built: str, base: str) -> None:
    """Keep PyInstaller's file as the base `base`, and only the newest BASES_KEPT."""
    folder = os.path.dirname(base)
    os.makedirs(folder, exist_ok=True)
    shutil.copy2(built, base + ".partial")
    os.replace(base + ".partial", base)
    kept = sorted((os.path.join(folder, name) for name in os.listdir(folder)),
                  key=os.path.getmtime, reverse=True)
    for old in kept[BASES_KEPT:]:
        os.remove(old)


def _run(command: list[str], env: dict[str, str], log: Any, cwd: str) -> int:
    """Run the bundler with its output going to `log`; stop it if the build is interrupted.
    It runs in the cache folder: `python -m` puts the working directory first on the import
    path, and the user's folder must not shadow the runtime's modules."""
    process = subprocess.Popen(command, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL)
    try:
        return process.wait()
    except BaseException:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        raise


def _spec_text(packages: str | None = None) -> str:
    """The spec: the same for every program but the packages folder (not part of the
    analysis). Binaries are stripped of their symbol tables on Linux only (half the size;
    PyInstaller advises against it on Windows, and on macOS it would touch code signatures)."""
    script = os.path.abspath(svc.launcher.__file__)
    return SPEC_TEMPLATE.format(
        packages=tuple(p for p in RUNTIME_PACKAGES if importlib.util.find_spec(p) is not None),
        modules=RUNTIME_MODULES, script=script, stdlib=stdlib_modules(),
        packages_folder=os.path.abspath(packages) if packages else None,
        packages_data=PACKAGES_DATA,
        pathex=os.path.dirname(os.path.dirname(script)),  # the folder that holds `svc`
        name=APP_NAME, native=native_files(),
        strip=sys.platform.startswith("linux") and shutil.which("strip") is not None)


def stdlib_modules() -> list[str]:
    """Every module of this Python's standard library but those `STDLIB_LEFT_OUT` (and their
    submodules, and packages' own `test`/`tests`), by name: found on disk, never imported."""
    found = []
    for name in sorted(sys.stdlib_module_names - STDLIB_LEFT_OUT):
        if name.startswith("_test"):
            continue
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is None:
            continue
        found.append(name)
        if spec.submodule_search_locations:
            found.extend(_submodules(name, list(spec.submodule_search_locations)))
    return found


def _submodules(package: str, paths: list[str]) -> list[str]:
    """A package's submodules, depth first, by walking its folders (nothing is imported)."""
    import pkgutil

    found = []
    for info in pkgutil.iter_modules(paths):
        if info.name in ("test", "tests", "idle_test") or info.name.startswith("_test"):
            continue
        name = f"{package}.{info.name}"
        found.append(name)
        if info.ispkg:
            found.extend(_submodules(name, [os.path.join(p, info.name) for p in paths]))
    return found


def native_files() -> list[tuple[str, str, str]]:
    """The compiled runtime (svc.native) as PyInstaller entries, when it is current: the
    executable then loads it as a checkout does (its manifest is trusted there, having been
    checked against the sources here). Otherwise none, and the executable runs pure Python."""
    if native.plan().reason:
        return []
    entries = []
    for folder, _dirs, files in os.walk(native.BUILT):
        for name in sorted(files):
            path = os.path.join(folder, name)
            kind = "DATA" if name == native.MANIFEST else "BINARY"
            entries.append((os.path.relpath(path, native.PACKAGE_ROOT), path, kind))
    return sorted(entries)


def _install(base: str, payload: bytes, output: str) -> None:
    """A copy of the base with the program attached, at `output` atomically: never a
    half-written file there."""
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    partial = output + ".partial"
    try:
        shutil.copy2(base, partial)
        attach_program(partial, payload)
        os.replace(partial, output)
    except OSError as exc:
        raise BuildError(f"cannot write '{output}': {exc.strerror or exc}") from None
    finally:
        if os.path.exists(partial):
            os.remove(partial)


def _write_if_changed(path: str, data: bytes) -> None:
    """Write `data` unless the file already holds it: PyInstaller rebuilds what is newer."""
    try:
        with open(path, "rb") as f:
            if f.read() == data:
                return
    except OSError:
        os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


@contextmanager
def _locked(path: str) -> Iterator[None]:
    """Hold an exclusive lock on `path`, so two builds never share a cache folder at once."""
    with open(path, "a+b") as f:
        if not _try_lock(f):
            print("waiting for another svcc build that is using the cache...", flush=True)
            _lock(f)
        try:
            yield
        finally:
            _unlock(f)


if sys.platform == "win32":
    import msvcrt

    def _try_lock(f: Any) -> bool:
        try:
            f.seek(0)
            msvcrt.locking(f.fileno(), msvcrt.LK_NBLCK, 1)
            return True
        except OSError:
            return False

    def _lock(f: Any) -> None:
        while not _try_lock(f):
            time.sleep(0.5)

    def _unlock(f: Any) -> None:
        f.seek(0)
        msvcrt.locking(f.fileno(), msvcrt.LK_UNLCK, 1)
else:
    import fcntl

    def _try_lock(f: Any) -> bool:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError:
            return False

    def _lock(f: Any) -> None:
        fcntl.flock(f, fcntl.LOCK_EX)

    def _unlock(f: Any) -> None:
        fcntl.flock(f, fcntl.LOCK_UN)


def progress(stage: int, text: str) -> None:
    """One progress line; a closed stdout (`svcc build ... | head -1`) does not stop the build."""
    try:
        print(f"[{stage}/{STAGES}] {text}", flush=True)
    except BrokenPipeError:
        silence_stdout()


def _tail(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        return "".join(f.readlines()[-LOG_TAIL_LINES:]).rstrip()


def size_text(count: int) -> str:
    """A byte count for a progress line: `812.3 kB`, `14.2 MB`."""
    if count < 1_000_000:
        return f"{count / 1000:.1f} kB"
    return f"{count / 1_000_000:.1f} MB"
