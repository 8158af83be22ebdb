"""`svcc install` and the checks around it: svc.toml's `[dependencies]` and `[python]` tables,
svc.lock, a real pip install of local packages into the project's `.svc/python`, a failed
install that changes nothing, and the messages when the environment and the lock disagree.

The local packages build with a tiny PEP 517 backend written into their own folder
(`requires = []`), so pip needs no network and no build tools, and each install takes a
second or two.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from svc import pipeline
from svc.compiler.source import SourceFile
from svc.dependencies.environment import installed, packages_folder, python_path
from svc.dependencies.install import InstallError, install
from svc.dependencies.lock import Lock, Package, lock_text, read_lock, write_lock
from svc.dependencies.manifest import Dependency, dependencies, digest
from svc.dependencies.verify import environment_problem
from svc.project import load_project
from tests.helpers.svc_process import REPO, svcc

MAIN = 'def main():\n    print("main ran")\n'

BACKEND = '''\
"""A build backend just big enough for pip: one module, one wheel."""
import base64, hashlib, os, zipfile

NAME, VERSION, FAIL = {name!r}, {version!r}, {fail!r}


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    if FAIL:
        raise RuntimeError("this package refuses to build")
    info = f"{{NAME}}-{{VERSION}}.dist-info"
    files = {{f"{{NAME}}.py": open(f"{{NAME}}.py", "rb").read(),
             f"{{info}}/METADATA": f"Metadata-Version: 2.1\\nName: {{NAME}}\\nVersion: {{VERSION}}\\n".encode(),
             f"{{info}}/WHEEL": b"Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"}}
    record = "".join(
        f"{{path}},sha256={{base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()}},{{len(data)}}\\n"
        for path, data in files.items()) + f"{{info}}/RECORD,,\\n"
    wheel = f"{{NAME}}-{{VERSION}}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
        archive.writestr(f"{{info}}/RECORD", record)
    return wheel
'''


def make_package(folder: Path, name: str, version: str = "1.0", fail: bool = False) -> Path:
    """A local Python project `name` in `folder`: one module with `shout(text)`."""
    folder.mkdir(parents=True)
    (folder / "pyproject.toml").write_text(textwrap.dedent(f"""\
        [build-system]
        requires = []
        build-backend = "backend"
        backend-path = ["."]

        [project]
        name = "{name}"
        version = "{version}"
        """))
    (folder / "backend.py").write_text(BACKEND.format(name=name, version=version, fail=fail))
    (folder / f"{name}.py").write_text("def shout(text):\n    return text.upper()\n")
    return folder


def make_project(folder: Path, dependencies: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "main.svc").write_text(MAIN)
    (folder / "svc.toml").write_text(f'entry = "main.svc"\n\n[dependencies]\n{dependencies}')
    return folder


def loaded(folder: Path, toml: str):
    """load_project over svc.toml's text `toml` (the entry exists)."""
    (folder / "main.svc").write_text(MAIN)
    return load_project(str(folder), SourceFile(str(folder / "svc.toml"), toml))


def problem_of(folder: Path) -> str | None:
    project, failed = pipeline.read_project(str(folder))
    assert project is not None, failed.diagnostics
    return environment_problem(str(folder), project.dependencies_table)


# --- svc.toml -------------------------------------------------------------------------------

def test_the_tables_as_data(tmp_path: Path) -> None:
    project, diagnostics = loaded(tmp_path, 'entry = "main.svc"\n[dependencies]\n'
                                  'markdown = ">=3.5,<4"\nanything = "*"\n'
                                  'slugs = { path = "vendor/slugs" }\n[python]\nthreads = 8\n')
    assert diagnostics == [] and project is not None
    assert project.dependencies == [Dependency("markdown", ">=3.5,<4"), Dependency("anything", ""),
                                    Dependency("slugs", path="vendor/slugs")]
    assert project.settings.python_threads == 8
    assert "dependencies" not in project.settings.tables  # not the running program's business
    assert project.dependencies[0].requirement(str(tmp_path)) == "markdown>=3.5,<4"
    assert project.dependencies[2].requirement("/p") == "/p/vendor/slugs"


@pytest.mark.parametrize("lines, line, col, expected", [
    ('[dependencies]\n"not a name!" = "*"', 3, 2, "is not a Python package name"),
    ('[dependencies]\nmarkdown = "3.5 or later"', 3, 1, "invalid version range '3.5 or later'"),
    ('[dependencies]\nmarkdown = ""', 3, 1, "empty version range"),
    ('[dependencies]\nmarkdown = 3', 3, 1, "must be a version range"),
    ('[dependencies]\nslugs = { folder = "x" }', 3, 1, 'must be { path = "folder" }'),
    ('[dependencies]\nslugs = { path = "" }', 3, 1, 'must be { path = "folder" }'),
    ("dependencies = 3", 2, 1, "must be a table ([dependencies])"),
    ("[python]\nthreads = 0", 3, 1, "from 1 to 256"),
    ("[python]\nthreads = 257", 3, 1, "from 1 to 256"),
    ('[python]\nthreads = "8"', 3, 1, "must be a whole number"),
    ("[python]\nthreads = true", 3, 1, "must be a whole number"),
    ("[python]\nworkers = 2", 3, 1, "unknown key 'workers' in svc.toml [python]"),
])
def test_bad_values_are_diagnostics_in_svc_toml(tmp_path: Path, lines: str, line: int, col: int,
                                                expected: str) -> None:
    project, diagnostics = loaded(tmp_path, f'entry = "main.svc"\n{lines}\n')
    assert project is None
    (diagnostic,) = diagnostics
    assert expected in diagnostic.message
    assert (diagnostic.span.line, diagnostic.span.col) == (line, col)


def test_the_digest_ignores_order_and_sees_every_change() -> None:
    table = {"a": ">=1", "b": {"path": "x"}}
    assert digest(table) == digest({"b": {"path": "x"}, "a": ">=1"})
    assert digest(table) != digest({"a": ">=2", "b": {"path": "x"}})
    assert digest(table) == digest(json.loads(json.dumps(table)))


# --- svc.lock and verification (no pip) -----------------------------------------------------

def fake_install(project: Path, **versions: str) -> None:
    """Distributions in .svc/python as pip leaves them (their .dist-info metadata)."""
    for name, version in versions.items():
        info = Path(packages_folder(str(project))) / f"{name}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


def test_the_lock_reads_back_what_was_written(tmp_path: Path) -> None:
    lock = Lock("abc", (Package("Markdown", "3.7"), Package("attrs", "24.1")))
    write_lock(str(tmp_path), lock)
    assert lock_text(lock).startswith("# Written by `svcc install`")
    assert read_lock(str(tmp_path)) == Lock("abc", (Package("attrs", "24.1"),
                                                    Package("Markdown", "3.7")))


def test_verification_says_what_is_wrong_and_that_install_fixes_it(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", 'markdown = ">=3"\n')
    table = {"markdown": ">=3"}
    assert problem_of(project) == ("svc.toml lists Python dependencies but there is no svc.lock: "
                                   "run `svcc install`")
    write_lock(str(project), Lock(digest({"markdown": ">=2"}), (Package("markdown", "3.7"),)))
    assert "svc.lock does not match svc.toml [dependencies] (changed since `svcc install`)" \
        in str(problem_of(project))
    write_lock(str(project), Lock(digest(table), (Package("markdown", "3.7"),)))
    assert "(markdown 3.7 is not installed)" in str(problem_of(project))
    fake_install(project, markdown="3.6", extra="1.0")
    assert problem_of(project) == (
        "the installed Python packages do not match svc.lock (extra 1.0 is installed but not "
        "locked; markdown is 3.6, locked 3.7): run `svcc install`")
    (project / "svc.lock").write_text("not = [toml")
    assert str(problem_of(project)).startswith("cannot read svc.lock")


def test_a_project_without_dependencies_needs_no_lock(tmp_path: Path) -> None:
    assert environment_problem(str(tmp_path), None) is None
    assert python_path(str(tmp_path)) == () and python_path(None) == ()


def test_svcc_check_reports_the_environment_at_the_dependencies_table(tmp_path: Path) -> None:
    """Every command that compiles a project goes through the pipeline's check."""
    project = make_project(tmp_path / "p", 'markdown = ">=3"\n')
    failed = pipeline.check(pipeline.Target(project=str(project)))
    assert isinstance(failed, pipeline.Failed)
    (diagnostic,) = failed.diagnostics
    assert "there is no svc.lock: run `svcc install`" in diagnostic.message
    assert (diagnostic.span.line, diagnostic.span.col) == (3, 2)


# --- pip, for real ----------------------------------------------------------------------------

def test_svcc_install_installs_locks_and_reinstalls_from_the_lock(tmp_path: Path) -> None:
    make_package(tmp_path / "p" / "vendor" / "shouty", "shouty", "1.2")
    project = make_project(tmp_path / "p", 'shouty = { path = "vendor/shouty" }\n')
    done = subprocess.run(svcc() + ["install", "--project", str(project)], capture_output=True,
                          text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "installed 1 Python package from svc.toml's ranges, svc.lock written: shouty 1.2" \
        in done.stdout
    assert installed(packages_folder(str(project))) == {"shouty": "1.2"}
    assert (project / ".svc" / "python" / "shouty.py").is_file()
    assert read_lock(str(project)) == Lock(digest({"shouty": {"path": "vendor/shouty"}}),
                                           (Package("shouty", "1.2"),))
    assert problem_of(project) is None
    checked = subprocess.run(svcc() + ["check", "--project", str(project)], capture_output=True,
                             text=True, cwd=REPO, timeout=120)
    assert checked.returncode == 0, checked.stderr

    again = install(str(project), {"shouty": {"path": "vendor/shouty"}},
                    [Dependency("shouty", path="vendor/shouty")])
    assert again.from_lock and again.lock == read_lock(str(project))
    assert sorted(p.name for p in (project / ".svc").iterdir()) == ["python"]  # no leftovers


def test_a_failed_install_changes_nothing_and_says_why(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", 'broken = { path = "vendor/broken" }\n')
    make_package(project / "vendor" / "broken", "broken", fail=True)
    fake_install(project, earlier="1.0")
    write_lock(str(project), Lock("old", (Package("earlier", "1.0"),)))
    lock_before = (project / "svc.lock").read_text()
    with pytest.raises(InstallError) as failure:
        install(str(project), {"broken": {"path": "vendor/broken"}},
                dependencies({"broken": {"path": "vendor/broken"}}))
    message = str(failure.value)
    assert message.startswith("pip could not install the Python dependencies (exit status 1); "
                              "nothing was changed. pip said:\n")
    assert "Traceback" not in message.splitlines()[0] and len(message.splitlines()) <= 16
    assert (project / "svc.lock").read_text() == lock_before
    assert installed(packages_folder(str(project))) == {"earlier": "1.0"}
    assert sorted(p.name for p in (project / ".svc").iterdir()) == ["python"]


def test_a_path_that_holds_no_project_is_refused_before_pip(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", 'gone = { path = "vendor/gone" }\n')
    with pytest.raises(InstallError, match="is not a folder holding a Python project"):
        install(str(project), {"gone": {"path": "vendor/gone"}},
                [Dependency("gone", path="vendor/gone")])
    assert not (project / "svc.lock").exists() and not (project / ".svc" / "python").exists()


def test_svcc_install_needs_a_project_folder(tmp_path: Path) -> None:
    from svc.cli import main

    assert main(["install", "--project", str(tmp_path)]) == 2


# --- the executable (the build itself: tests/build/test_python_build.py) ----------------------

def test_the_spec_adds_the_packages_folder_as_data_beside_the_analysis(tmp_path: Path) -> None:
    from svc.bundle import _spec_text

    with_packages = _spec_text(str(tmp_path / ".svc" / "python"))
    without = _spec_text()
    assert f"packages = {str(tmp_path / '.svc' / 'python')!r}" in with_packages
    assert "Tree(packages, prefix='svc-python'" in with_packages
    assert "packages = None" in without
    analysis = [line for line in with_packages.splitlines() if line.startswith("a = Analysis")]
    assert analysis == [line for line in without.splitlines() if line.startswith("a = Analysis")]


def test_the_analysis_holds_the_standard_library_but_tests_and_guis() -> None:
    from svc.bundle import stdlib_modules

    modules = set(stdlib_modules())
    assert {"xml.etree.ElementTree", "email.mime.text", "html.parser", "importlib.metadata",
            "json", "asyncio.tasks", "encodings.idna"} <= modules
    assert not {m for m in modules if m.split(".")[0] in ("tkinter", "test", "lib2to3", "venv")}
    assert not {m for m in modules if ".test" in m or "idle_test" in m}


def test_the_launcher_imports_the_bundled_packages_first(tmp_path: Path, monkeypatch) -> None:
    import sys

    from svc import launcher
    from svc.runner import use_packages

    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path), raising=False)
    assert launcher.packages_path() == ()
    make_package(tmp_path / "src", "bundled_shouty")
    (tmp_path / "svc-python").mkdir()
    shutil.copy(tmp_path / "src" / "bundled_shouty.py", tmp_path / "svc-python")
    assert launcher.packages_path() == (str(tmp_path / "svc-python"),)
    monkeypatch.setattr(sys, "path", list(sys.path))
    use_packages(launcher.packages_path())
    use_packages(launcher.packages_path())
    assert sys.path[0] == str(tmp_path / "svc-python") and sys.path.count(sys.path[0]) == 1
    import bundled_shouty  # type: ignore[import-not-found]

    assert bundled_shouty.shout("hi") == "HI"
    del sys.modules["bundled_shouty"]


def test_a_path_package_of_another_name_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", 'shouty = { path = "vendor/loud" }\n')
    make_package(project / "vendor" / "loud", "loud")
    with pytest.raises(InstallError, match="'shouty' in svc.toml \\[dependencies\\]: the folder "
                                           "'vendor/loud' installed no package of that name"):
        install(str(project), {"shouty": {"path": "vendor/loud"}},
                [Dependency("shouty", path="vendor/loud")])
    assert not (project / "svc.lock").exists() and not (project / ".svc" / "python").exists()
    assert list((project / ".svc").iterdir()) == []


def test_without_dependencies_install_removes_what_an_earlier_table_left(tmp_path: Path,
                                                                         capsys) -> None:
    from svc.cli import main

    project = make_project(tmp_path / "p", "")
    (project / "svc.toml").write_text('entry = "main.svc"\n')
    fake_install(project, earlier="1.0")
    write_lock(str(project), Lock("old", (Package("earlier", "1.0"),)))
    assert main(["install", "--project", str(project)]) == 0
    assert "nothing to install (removed the old .svc/python and svc.lock)" in capsys.readouterr().out
    assert not (project / "svc.lock").exists() and not (project / ".svc" / "python").exists()


def test_a_lock_of_another_shape_is_reported(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", 'markdown = "*"\n')
    (project / "svc.lock").write_text('dependencies = 3\n')
    assert problem_of(project) == ("svc.lock is not a lock written by `svcc install`: run "
                                   "`svcc install`")
