"""`svcc build` failures are clear messages, never tracebacks, and leave no executable behind.

None of these gets as far as running PyInstaller, so they are quick and not marked `build`.
"""

from __future__ import annotations

import os
import subprocess
import sys

from tests.helpers.executables import REPO, svcc, svcc_build

BROKEN = '''\
class Task:
    id: i64

def main():
    t = Task(idd=1)
'''


def test_a_program_that_does_not_check_prints_its_diagnostics(build_cache, tmp_path):
    source = tmp_path / "broken.svc"
    source.write_text(BROKEN)
    output = tmp_path / "dist" / "broken"
    result = svcc_build(build_cache, str(source), "-o", str(output))
    assert result.returncode == 1
    assert result.stdout == f"[1/4] checking and compiling {source}\n"
    check = subprocess.run(svcc() + ["check", str(source)], capture_output=True, text=True)
    assert result.stderr == check.stderr  # rendered exactly as `svcc check` does
    assert f"--> {source}:5:" in result.stderr and "Traceback" not in result.stderr
    assert not output.exists() and not output.parent.exists()


def test_a_project_is_named_by_its_folder_even_when_given_as_dot(build_cache, tmp_path):
    """`svcc build --project .` says which folder it is compiling, not `.`."""
    project = tmp_path / "inventory"
    project.mkdir()
    (project / "svc.toml").write_text('entry = "main.svc"\n')
    (project / "main.svc").write_text(BROKEN)
    env = {**os.environ, "SVC_CACHE_DIR": str(build_cache)}
    result = subprocess.run(svcc() + ["build", "--project", ".", "-o", "app"], cwd=project,
                            capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    where = os.path.realpath(project)  # `.` is the working directory, symbolic links resolved
    assert result.stdout == f"[1/4] checking and compiling inventory ({where})\n"
    result = svcc_build(build_cache, "--project", str(project), "-o", str(tmp_path / "app"))
    assert result.stdout == f"[1/4] checking and compiling inventory ({project})\n"


def test_a_missing_program_is_a_usage_error(build_cache, tmp_path):
    result = svcc_build(build_cache, str(tmp_path / "nope.svc"), "-o", str(tmp_path / "x"))
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == f"error: cannot find file '{tmp_path / 'nope.svc'}'\n"


def test_an_output_that_is_a_folder_is_refused(build_cache, tmp_path):
    result = svcc_build(build_cache, "examples/hello/hello.svc", "-o", str(tmp_path))
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (f"error: '{tmp_path}' is a directory: give the executable's "
                             "file name with -o\n")


def test_an_existing_file_that_is_not_an_executable_is_never_overwritten(build_cache, tmp_path):
    """`-o` naming the program's own source (a slip of the keyboard) must not destroy it."""
    source = tmp_path / "hello.svc"
    text = (REPO / "examples/hello/hello.svc").read_text()
    source.write_text(text)
    result = svcc_build(build_cache, str(source), "-o", str(source))
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (f"error: '{source}' exists and is not an executable: refusing to "
                             "overwrite it (remove it or choose another -o)\n")
    assert source.read_text() == text


def test_an_output_below_a_file_is_refused_before_building(build_cache, tmp_path):
    (tmp_path / "notes").write_text("a file, not a folder")
    result = svcc_build(build_cache, "examples/hello/hello.svc", "-o", str(tmp_path / "notes" / "x"))
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (f"error: cannot create the folder for '{tmp_path / 'notes' / 'x'}': "
                             f"'{tmp_path / 'notes'}' is a file\n")


def test_a_cache_folder_that_is_a_file_is_a_plain_error(tmp_path):
    (tmp_path / "cache").write_text("not a folder")
    output = tmp_path / "hello"
    result = svcc_build(tmp_path / "cache", "examples/hello/hello.svc", "-o", str(output))
    assert result.returncode == 1 and "internal error" not in result.stderr
    assert result.stderr.startswith(f"error: cannot use the build cache folder '{tmp_path / 'cache'}")
    assert not output.exists()


def test_a_missing_bundler_is_named_with_how_to_install_it(tmp_path):
    """PyInstaller made unimportable in a real `svcc` process (a None entry in sys.modules
    is how Python spells "this module cannot be imported")."""
    program = ("import sys; sys.modules['PyInstaller'] = None; from svc.cli import main; "
               "sys.exit(main(sys.argv[1:]))")
    output = tmp_path / "hello"
    result = subprocess.run([sys.executable, "-c", program, "build", "examples/hello/hello.svc",
                             "-o", str(output)], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 1
    assert result.stderr == ("error: PyInstaller is not installed, and svcc build needs it: "
                             f"install it with `{sys.executable} -m pip install pyinstaller`\n")
    assert not output.exists()
