"""`python -m svc.native.build`: compile the runtime's hot modules with mypyc (run by `make`).

Where a C compiler, Python's headers and mypyc are all present, the modules of
`svc.native.MODULES` are compiled in a temporary folder and copied into `svc/native/built/`
with a manifest of their source digests; `svc.native.install` uses them while they match the
sources. Where something is missing, it says what and exits 0: the runtime then stays pure
Python, which is complete on its own (only slower). A build that starts and fails is an
error (exit 1): on a machine that can compile, a broken build must not go unnoticed.

A current build is left alone, so `make` pays nothing when no hot module changed.
"""

from __future__ import annotations

import importlib.machinery
import json
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from svc.native import BUILT, MANIFEST, MODULES, PACKAGE_ROOT, plan, source_digest, source_path

#: mypy's options for the compiled modules: the rest of svc and the libraries are not
#: type-checked here (only the modules being compiled must be sound).
MYPY_OPTIONS = ["--follow-imports=silent", "--ignore-missing-imports"]


def missing_tool() -> str:
    """What prevents a build on this machine, or "" when nothing does."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        return f"no C compiler ({compiler})"
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").is_file():
        return "no Python headers (Python.h)"
    try:
        import mypyc  # noqa: F401
    except ImportError:
        return "mypyc is not installed"
    return ""


def build() -> Path:
    """Compile every module of MODULES into a fresh `built/` folder; returns it."""
    sources = [str(source_path(name)) for name in MODULES]
    digests = {name: source_digest(source_path(name)) for name in MODULES}  # what is compiled
    with tempfile.TemporaryDirectory(prefix="svc-native-") as work:
        script = Path(work) / "setup.py"
        script.write_text(_setup_script(sources, str(Path(work) / "c")))
        command = [sys.executable, str(script), "-q", "build_ext", "--build-lib",
                   str(Path(work) / "lib"), "--build-temp", str(Path(work) / "temp")]
        done = subprocess.run(command, cwd=PACKAGE_ROOT, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"error: compiling the runtime with mypyc failed:\n"
                             f"{done.stdout[-3000:]}{done.stderr[-3000:]}")
        _install_files(Path(work) / "lib", digests)
    return BUILT


def _setup_script(sources: list[str], c_folder: str) -> str:
    """A setuptools script that builds the extension modules only (no package, no wheel); its
    C files and mypy's cache go to the temporary folder, not into the checkout."""
    options = MYPY_OPTIONS + [f"--cache-dir={c_folder}/mypy-cache"]
    return (
        "from setuptools import setup\n"
        "from mypyc.build import mypycify\n"
        f"setup(name='svc-native', packages=[],\n"
        f"      ext_modules=mypycify({options + sources!r}, opt_level='3',\n"
        f"                           target_dir={c_folder!r}))\n"
    )


def _install_files(lib: Path, digests: dict[str, str]) -> None:
    """Replace `built/` with the new files and their manifest, the manifest written last."""
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    groups = list(lib.glob(f"*__mypyc{suffix}"))
    if len(groups) != 1:
        raise SystemExit(f"error: mypyc's shared library not found in {lib}")
    shutil.rmtree(BUILT, ignore_errors=True)
    BUILT.mkdir(parents=True)
    shutil.copy2(groups[0], BUILT / groups[0].name)
    modules = {}
    for name in MODULES:
        relative = Path(*name.split(".")).with_suffix(suffix)
        (BUILT / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(lib / relative, BUILT / relative)
        modules[name] = {"file": str(relative), "source_sha256": digests[name]}
    manifest = {"suffix": suffix, "group": groups[0].name[: -len(suffix)],
                "group_file": groups[0].name, "modules": modules}
    (BUILT / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")


def main() -> None:
    current = plan()
    if not current.reason:
        print("compiled runtime: up to date")
        return
    missing = missing_tool()
    if missing:
        print(f"compiled runtime: not built ({missing}); the runtime stays pure Python")
        return
    if (BUILT / MANIFEST).exists():
        print(f"compiled runtime: rebuilding, the last build is "
              f"{current.reason.removesuffix(', run make')}", flush=True)
    else:
        print(f"compiled runtime: compiling {len(MODULES)} modules with mypyc", flush=True)
    build()
    after = plan()
    if after.reason:
        raise SystemExit(f"error: the compiled runtime is not usable after building: {after.reason}")
    print(f"compiled runtime: built {len(MODULES)} modules into {BUILT}")


if __name__ == "__main__":
    main()
