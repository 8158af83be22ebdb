"""svc.native: the compiled request path is used when, and only when, it matches the sources.

The build itself is `make`'s (`python -m svc.native.build`); these tests read the real build
of this checkout when there is one, and make small fake builds (a manifest and empty files)
to check what is refused: a changed source, another interpreter, a missing file.
"""

from __future__ import annotations

import importlib.machinery
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from svc import native
from svc.native.build import missing_tool

SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]


def _run(code: str, **env: str) -> subprocess.CompletedProcess:
    """Python in a fresh process (the finder is installed once per process)."""
    return subprocess.run([sys.executable, "-c", code], env=dict(os.environ, **env),
                          capture_output=True, text=True, timeout=120)


def _fake_build(folder: Path, root: Path, **changes) -> Path:
    """A build folder whose manifest matches the sources under `root`, then `changes`."""
    built = folder / "built"
    modules = {}
    for name in native.MODULES:
        relative = Path(*name.split(".")).with_suffix(SUFFIX)
        (built / relative).parent.mkdir(parents=True, exist_ok=True)
        (built / relative).write_bytes(b"")
        modules[name] = {"file": str(relative),
                         "source_sha256": native.source_digest(native.source_path(name, root))}
    (built / f"abc__mypyc{SUFFIX}").write_bytes(b"")
    manifest = {"suffix": SUFFIX, "group": "abc__mypyc", "group_file": f"abc__mypyc{SUFFIX}",
                "modules": modules, **changes}
    (built / native.MANIFEST).write_text(json.dumps(manifest))
    return built


@pytest.fixture
def sources(tmp_path) -> Path:
    """A copy of the compiled modules' sources, to change without touching the checkout."""
    root = tmp_path / "src"
    for name in native.MODULES:
        target = native.source_path(name, root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(native.source_path(name), target)
    return root


def test_a_current_build_is_planned_module_by_module(tmp_path, sources):
    chosen = native.plan(_fake_build(tmp_path, sources), sources)
    assert chosen.reason == ""
    assert set(chosen.files) == set(native.MODULES) | {"abc__mypyc"}


def test_a_changed_source_is_never_shadowed_by_its_stale_build(tmp_path, sources):
    built = _fake_build(tmp_path, sources)
    changed = native.source_path("svc.runtime.http.routing", sources)
    changed.write_text(changed.read_text() + "\n# edited\n")
    chosen = native.plan(built, sources)
    assert chosen.files == {}  # all or nothing: the modules call one another natively
    assert chosen.reason == "out of date: svc.runtime.http.routing changed since the build, run make"
    # an executable has no sources to compare: there the manifest, checked at build, is trusted
    assert native.plan(built, sources, frozen=True).reason == ""


def test_builds_that_cannot_be_used_say_why(tmp_path, sources):
    assert native.plan(tmp_path / "nothing", sources).reason.startswith("not built")
    other = _fake_build(tmp_path / "a", sources, suffix=".cpython-39-x86_64-linux-gnu.so")
    assert native.plan(other, sources).reason.startswith("built for another interpreter")
    fewer = _fake_build(tmp_path / "b", sources)
    manifest = json.loads((fewer / native.MANIFEST).read_text())
    del manifest["modules"][native.MODULES[-1]]
    (fewer / native.MANIFEST).write_text(json.dumps(manifest))
    assert native.plan(fewer, sources).reason == "built for another module list, run make"
    incomplete = _fake_build(tmp_path / "c", sources)
    (incomplete / f"abc__mypyc{SUFFIX}").unlink()
    assert native.plan(incomplete, sources).reason.startswith("incomplete: ")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / native.MANIFEST).write_text("{not json")
    assert native.plan(tmp_path / "d", sources).reason.startswith("unreadable manifest")


def test_the_checkouts_build_is_current_where_it_can_be_made():
    """`make` builds it wherever a C compiler and Python's headers exist: then it is current
    and the runtime's modules are loaded from it; elsewhere the runtime is pure Python."""
    code = ("import svc.runtime.http.connection as c, svc.runtime.http.protocol as p, svc.native as n;"
            " print(c.__file__); print(p.__file__); print(repr(n.state))")
    if missing_tool():
        result = _run(code)
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines()[0].endswith("connection.py")
        return
    assert native.plan().reason == "", "run make: the compiled runtime is not current"
    result = _run(code)
    assert result.returncode == 0, result.stderr
    connection_file, protocol_file, state = result.stdout.splitlines()
    assert connection_file.endswith(SUFFIX) and protocol_file.endswith(SUFFIX)
    assert state == "''"


def test_svc_native_0_keeps_the_pure_python_modules():
    result = _run("import svc.runtime.http.protocol as p, svc.native as n; print(p.__file__, n.state)",
                  SVC_NATIVE="0")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[0].endswith("protocol.py")
    assert "SVC_NATIVE=0" in result.stdout


def test_svc_native_require_without_a_usable_build_is_one_error_line(tmp_path):
    """Run from a copy of the package with no build: one `error:` line, exit 1, no traceback."""
    copy = tmp_path / "src"
    shutil.copytree(native.PACKAGE_ROOT / "svc", copy / "svc",
                    ignore=shutil.ignore_patterns("built", "__pycache__"))
    result = subprocess.run([sys.executable, "-c", "import svc.runtime.http.protocol"],
                            env=dict(os.environ, SVC_NATIVE="require", PYTHONPATH=str(copy)),
                            capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr == ("error: SVC_NATIVE=require, but the compiled runtime is not usable:"
                             " not built (`make` builds them where a C compiler exists)\n")


def test_every_compiled_module_is_a_runtime_module_with_its_source():
    for name in native.MODULES:
        assert name.startswith("svc.runtime.")
        assert native.source_path(name).is_file()
